#include "sparsetrain/core/isa.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

std::string_view isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Ref: return "ref";
    case CpuIsa::Avx2: return "avx2";
    case CpuIsa::Avx512: return "avx512";
    case CpuIsa::Avx512Bf16: return "avx512_bf16";
  }
  return "unknown";
}

CpuIsa parse_isa(std::string_view text, std::string_view source) {
  for (CpuIsa isa : {CpuIsa::Ref, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Avx512Bf16})
    if (text == isa_name(isa)) return isa;
  fail("{}: unknown ISA '{}'; expected one of: avx512_bf16, avx512, avx2, ref", source, text);
}

CpuIsa cpu_isa() {
  static const CpuIsa detected = [] {
    __builtin_cpu_init();
#ifdef SPARSETRAIN_HAVE_AVX512
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
      return __builtin_cpu_supports("avx512bf16") ? CpuIsa::Avx512Bf16 : CpuIsa::Avx512;
#endif
#ifdef SPARSETRAIN_HAVE_AVX2
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuIsa::Avx2;
#endif
    return CpuIsa::Ref;
  }();
  return detected;
}

namespace {
std::atomic<int> max_isa_override{-1};

CpuIsa env_max_isa() {
  static const CpuIsa from_env = [] {
    const char* value = std::getenv("SPARSETRAIN_MAX_ISA");
    if (value == nullptr || *value == '\0') return CpuIsa::Avx512Bf16;
    return parse_isa(value, "environment variable SPARSETRAIN_MAX_ISA");
  }();
  return from_env;
}
}  // namespace

CpuIsa max_isa() {
  int forced = max_isa_override.load(std::memory_order_relaxed);
  return forced >= 0 ? static_cast<CpuIsa>(forced) : env_max_isa();
}

void set_max_isa(CpuIsa isa) { max_isa_override.store(static_cast<int>(isa)); }

CpuIsa effective_isa() { return std::min(cpu_isa(), max_isa()); }

bool isa_usable(CpuIsa isa) { return isa <= effective_isa(); }

}  // namespace sparsetrain
