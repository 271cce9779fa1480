#pragma once
// CPU instruction sets the kernels are written for, detected at run time.
//
// The highest usable ISA is min(what the CPU has, what this build compiled, the cap). The cap
// comes from SPARSETRAIN_MAX_ISA=avx512_bf16|avx512|avx2|ref or set_max_isa(), so one AVX-512
// machine can test every lower implementation in the same process. avx512_bf16 is AVX-512 with
// the AVX512-BF16 extension (vdpbf16ps), which only the bf16 kernels use.
#include <optional>
#include <string_view>

namespace sparsetrain {

enum class CpuIsa { Ref = 0, Avx2 = 1, Avx512 = 2, Avx512Bf16 = 3 };

std::string_view isa_name(CpuIsa isa);
// Parses "ref", "avx2", "avx512" or "avx512_bf16"; throws Error naming `source` and the accepted values otherwise.
CpuIsa parse_isa(std::string_view text, std::string_view source);

CpuIsa cpu_isa();            // what the processor supports (and this build compiled)
CpuIsa max_isa();            // the cap in force
CpuIsa effective_isa();      // min(cpu_isa(), max_isa())
void set_max_isa(CpuIsa isa);  // overrides the environment variable
bool isa_usable(CpuIsa isa);

}  // namespace sparsetrain
