#pragma once
// The command line's instruction-set controls, applied before anything runs: --max-isa caps
// sparsetrain's kernels, --onednn-max-isa caps oneDNN's dense GEMMs, and --portable caps both at
// kPortableIsa on a binary built without -march=native, so that a run's numbers can be
// reproduced bit for bit on other CPUs (docs/reliability.md#portable-mode).
#include <string>

namespace sparsetrain {

struct IsaOptions {
  std::string max_isa;         // --max-isa
  std::string onednn_max_isa;  // --onednn-max-isa
  bool portable = false;       // --portable
};

// Throws CommandLineError for contradicting options, Error for a value or binary that cannot do
// what was asked (naming the option and what it accepts).
void apply_isa_options(const IsaOptions& options);

}  // namespace sparsetrain
