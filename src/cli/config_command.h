#pragma once
// `sparsetrain config --params cfg.yaml`: validates the config's sparsity section and prints
// what it resolves to, group by group, without training.
#include <string>

namespace sparsetrain {

struct ConfigCommandOptions {
  std::string params;  // the YAML file
};

// Returns the exit code; throws Error (exit 1) for an invalid config, naming file:line:column.
int run_config_command(const ConfigCommandOptions& options);

}  // namespace sparsetrain
