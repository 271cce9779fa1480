#pragma once
// What a run executes with besides its config and data: the binary's build, the CPU and the
// instruction sets the kernels and oneDNN dispatch to, the threads (per rank) and the ranks.
// Each of these can change a run's bits (docs/reliability.md#determinism-contract), so every
// start of a run appends one line to run_environment.jsonl in its model directory, e.g.
//   {"build_flags":"-O3 -DNDEBUG -fno-math-errno","build_type":"Release","compiler":"GNU 12.2.0",
//    "cpu":"AMD EPYC (AuthenticAMD family 25 model 17 stepping 1)","kernel_isa":"avx2",
//    "mode":"train","native":false,"onednn":"2.6.3","onednn_isa":"avx2","portable":true,
//    "ranks":1,"sparsetrain":"0.1.0","step":0,"threads":2}
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace sparsetrain {

// This process's environment, without "step" and "mode".
nlohmann::json run_environment();

// The ISA both kernel families are capped at in portable mode (--portable): x86-64-v3, which
// every x86 CPU of the last decade has.
inline constexpr const char* kPortableIsa = "avx2";

// Appends this start's line to <dir>/run_environment.jsonl, with the run's rank count. A training
// run that resumes (start_step > 0) where its previous start had another environment says what
// changed on stdout: the run is then no longer bit-identical to one that ran through.
void record_environment(const std::string& dir, int64_t start_step, const std::string& mode, int ranks);

}  // namespace sparsetrain
