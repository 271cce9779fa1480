// What changed between two configs, key by key.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sparsetrain/config/config_diff.h"

namespace sparsetrain {
namespace {

using Lines = std::vector<std::string>;

TEST(ConfigDifferences, NamesEachChangedKeyWithBothValues) {
  const std::string before =
      "model: {name: gpt, n_layer: 2}\noptimizer:\n  learning_rate: 0.003\n"
      "runconfig: {max_steps: 10, log_steps: 5}\nsparsity: {update: {steps: [1, 2]}}\n";
  const std::string after =
      "# a comment\nmodel:\n  name: gpt\n  n_layer: 2\noptimizer: {learning_rate: 1.0e-3, "
      "momentum: 0.9}\nrunconfig: {max_steps: 20}\nsparsity: {update: {steps: [1, 3]}}\n";
  EXPECT_EQ(config_differences(before, after),
            (Lines{"optimizer.learning_rate: 0.003 -> 1.0e-3", "optimizer.momentum: (none) -> 0.9",
                   "runconfig.max_steps: 10 -> 20", "sparsity.update.steps: [1, 2] -> [1, 3]",
                   "runconfig.log_steps: 5 -> (none)"}));
}

TEST(ConfigDifferences, LayoutAndCommentsAreNoChange) {
  EXPECT_EQ(config_differences("a: {b: 1, c: [x, y]}\n", "# note\na:\n  b: 1\n  c:\n    - x\n    - y\n"), Lines{});
}

TEST(ConfigDifferences, QuotedListItemsStayDistinct) {
  EXPECT_EQ(config_differences("a: [\"x, y\"]\n", "a:\n  - x\n  - y\n"), (Lines{"a: [\"x, y\"] -> [x, y]"}));
}

TEST(ConfigDifferences, TextThatIsNotYamlIsOneValue) {
  EXPECT_EQ(config_differences("a: [1\n", "a: 1\n"), (Lines{"a: (none) -> 1", "(document): (not YAML) -> (none)"}));
}

}  // namespace
}  // namespace sparsetrain
