#include <gtest/gtest.h>

#include <string>

#include "error_of.h"
#include "sparsetrain/config/train_config.h"

namespace sparsetrain {
namespace {

using testing::error_of;

std::string gpt_config(const std::string& train_input) {
  return "model: {name: gpt}\ntrain_input: {data: brown" + train_input +
         "}\noptimizer: {learning_rate: 0.1}\nrunconfig: {max_steps: 1}\n";
}

TEST(MlmInputKeys, Defaults) {
  const InputConfig in = load_train_config_yaml(gpt_config(""), "a.yaml").train_input;
  EXPECT_EQ(in.max_predictions_per_seq, 20);
  EXPECT_EQ(in.masked_lm_prob, 0.15);
  EXPECT_EQ(in.short_seq_prob, 0.1);
}

TEST(MlmInputKeys, RangesAreChecked) {
  const auto error = [](const std::string& key_value) {
    return error_of([&] { load_train_config_yaml(gpt_config(", " + key_value), "a.yaml"); });
  };
  EXPECT_EQ(error("masked_lm_prob: 0"), "a.yaml:2:44: train_input.masked_lm_prob: expected a number in (0, 1), got 0");
  EXPECT_EQ(error("masked_lm_prob: 1"), "a.yaml:2:44: train_input.masked_lm_prob: expected a number in (0, 1), got 1");
  EXPECT_EQ(error("short_seq_prob: 1"), "a.yaml:2:44: train_input.short_seq_prob: expected a number in [0, 1), got 1");
  EXPECT_EQ(error("max_predictions_per_seq: 0"),
            "a.yaml:2:53: train_input.max_predictions_per_seq: expected an integer >= 1, got 0");
}

// Until a bert model reads them, every config that gives them is refused at the key.
TEST(MlmInputKeys, OnlyForBert) {
  EXPECT_EQ(error_of([] { load_train_config_yaml(gpt_config(", masked_lm_prob: 0.2"), "a.yaml"); }),
            "a.yaml:2:28: train_input.masked_lm_prob: 'masked_lm_prob' is for bert models (masked language "
            "modelling), not gpt");
  EXPECT_EQ(error_of([] {
              load_train_config_yaml(
                  "model: {name: mlp}\ntrain_input: {data: fashion_mnist}\neval_input: {data: fashion_mnist, "
                  "short_seq_prob: 0}\noptimizer: {learning_rate: 0.1}\nrunconfig: {num_epochs: 1}\n",
                  "b.yaml");
            }),
            "b.yaml:3:35: eval_input.short_seq_prob: 'short_seq_prob' is for bert models (masked language modelling), "
            "not mlp");
}

TEST(MlmInputKeys, EpochsAreNotForGpt) {
  EXPECT_EQ(
      error_of([] {
        load_train_config_yaml(
            "model: {name: gpt}\ntrain_input: {data: brown}\noptimizer: {learning_rate: 0.1}\nrunconfig: "
            "{num_epochs: 1}\n",
            "a.yaml");
      }),
      "a.yaml:4:12: runconfig: 'num_epochs' is for data read in epochs; gpt samples its windows: use 'max_steps'");
}

}  // namespace
}  // namespace sparsetrain
