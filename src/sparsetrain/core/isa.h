#pragma once
// CPU instruction sets the kernels are written for, detected at run time.
//
// The highest usable ISA is min(what the CPU has, what this build compiled, the cap). The cap
// comes from SPARSETRAIN_MAX_ISA=avx512|avx2|ref or set_max_isa(), so one AVX-512 machine can
// test every lower implementation in the same process.
#include <optional>
#include <string_view>

namespace sparsetrain {

enum class CpuIsa { Ref = 0, Avx2 = 1, Avx512 = 2 };

std::string_view isa_name(CpuIsa isa);
// Parses "ref", "avx2" or "avx512"; throws Error naming `source` and the accepted values otherwise.
CpuIsa parse_isa(std::string_view text, std::string_view source);

CpuIsa cpu_isa();            // what the processor supports (and this build compiled)
CpuIsa max_isa();            // the cap in force
CpuIsa effective_isa();      // min(cpu_isa(), max_isa())
void set_max_isa(CpuIsa isa);  // overrides the environment variable
bool isa_usable(CpuIsa isa);

}  // namespace sparsetrain
