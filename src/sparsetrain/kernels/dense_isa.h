#pragma once
// The instruction set oneDNN's dense GEMMs run with. oneDNN picks the best its CPU has unless
// capped, by its own environment variable (ONEDNN_MAX_CPU_ISA, DNNL_MAX_CPU_ISA) or by
// set_dense_max_isa before the first GEMM. Its ISA decides the dense layers' summation order, so a
// run's bits depend on it (docs/reliability.md#determinism-contract).
#include <string>
#include <string_view>

namespace sparsetrain {

// Caps oneDNN at `name`, one of oneDNN's ISA names in lower case ("avx2", "avx512_core",
// "avx512_core_bf16", ..., or "all" for no cap). Throws Error naming `source` and the accepted
// names for an unknown one, or when oneDNN can no longer change it.
void set_dense_max_isa(std::string_view name, std::string_view source);

// What oneDNN dispatches to on this CPU under the cap in force, e.g. "avx512_core_bf16".
std::string dense_isa();
// oneDNN's version, e.g. "2.6.3".
std::string onednn_version();

}  // namespace sparsetrain
