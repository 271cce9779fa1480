#include "sparsetrain/kernels/dense_isa.h"

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

namespace {

// oneDNN's names (its dnnl_cpu_isa_t and its environment variable's values, in lower case), in
// the order of its documentation.
constexpr std::array<std::pair<std::string_view, dnnl_cpu_isa_t>, 9> kIsas = {{
    {"all", dnnl_cpu_isa_all},
    {"sse41", dnnl_cpu_isa_sse41},
    {"avx", dnnl_cpu_isa_avx},
    {"avx2", dnnl_cpu_isa_avx2},
    {"avx2_vnni", dnnl_cpu_isa_avx2_vnni},
    {"avx512_core", dnnl_cpu_isa_avx512_core},
    {"avx512_core_vnni", dnnl_cpu_isa_avx512_core_vnni},
    {"avx512_core_bf16", dnnl_cpu_isa_avx512_core_bf16},
    {"avx512_core_amx", dnnl_cpu_isa_avx512_core_amx},
}};

}  // namespace

void set_dense_max_isa(std::string_view name, std::string_view source) {
  std::string lower(name);
  std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto* found =
      std::ranges::find(kIsas, std::string_view(lower), &std::pair<std::string_view, dnnl_cpu_isa_t>::first);
  if (found == kIsas.end()) {
    std::string names;
    for (const auto& [isa_name, isa] : kIsas) names += fmt::format("{}{}", names.empty() ? "" : ", ", isa_name);
    fail("{}: unknown oneDNN ISA '{}'; expected one of: {}", source, name, names);
  }
  if (dnnl_set_max_cpu_isa(found->second) != dnnl_success)
    fail("{}: oneDNN cannot change its ISA to '{}' now (it has generated code already)", source, lower);
}

std::string dense_isa() {
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  for (const auto& [name, value] : kIsas)
    if (value == isa) return std::string(name);
  return fmt::format("isa_{:#x}", static_cast<unsigned>(isa));
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
}

}  // namespace sparsetrain
