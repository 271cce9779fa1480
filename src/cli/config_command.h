#pragma once
// `sparsetrain config --params cfg.yaml`: validates the config's sparsity section and prints
// what it resolves to, group by group, without training. For a whole training config (one with a
// `model:` section) it validates every section, builds the model and applies the sparsity
// algorithm without data, and prints the resulting plan: every parameter with its group,
// algorithm, level, storage, distribution and schedules, and the dense and kept counts.
#include <string>

namespace sparsetrain {

struct ConfigCommandOptions {
  std::string params;  // the YAML file
};

// Returns the exit code; throws Error (exit 1) for an invalid config, naming file:line:column.
int run_config_command(const ConfigCommandOptions& options);

}  // namespace sparsetrain
