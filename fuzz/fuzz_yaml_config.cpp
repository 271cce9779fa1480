// YAML configs: the input is a config file's text, read by both loaders the command line uses,
// the sparsity section alone (load_sparsity_yaml) and the whole training config
// (load_train_config_yaml). A training config that loads also gets command-line overrides
// applied, which re-emits its YAML (apply_run_overrides).
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "sparsetrain/config/sparsity_config.h"
#include "sparsetrain/config/train_config.h"
#include "sparsetrain/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size > sparsetrain::fuzz::kMaxInputBytes) return -1;
  const std::string text(sparsetrain::fuzz::as_text(data, size));
  try {
    const sparsetrain::SparsityConfig sparsity = sparsetrain::load_sparsity_yaml(text, "fuzz.yaml");
    FUZZ_CHECK(sparsity.form != sparsetrain::ConfigForm::None || sparsity.groups.empty());
  } catch (const sparsetrain::Error&) {
  }
  try {
    sparsetrain::TrainConfig config = sparsetrain::load_train_config_yaml(text, "fuzz.yaml");
    FUZZ_CHECK(config.text == text);
    sparsetrain::RunOverrides overrides;
    overrides.max_steps = 3;
    overrides.seed = 7;
    sparsetrain::apply_run_overrides(config, overrides);
    FUZZ_CHECK(config.run.max_steps == 3 && config.run.num_epochs == 0 && config.run.seed == 7);
  } catch (const sparsetrain::Error&) {
  }
  return 0;
}
