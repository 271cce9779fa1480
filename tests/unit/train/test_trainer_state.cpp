// The trainer's checkpointed state: one field list written and read, so every field round-trips,
// and a field missing from a file (an older checkpoint) or of another type is an Error naming it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "error_of.h"
#include "sparsetrain/train/trainer_state.h"

namespace sparsetrain {
namespace {

using json = nlohmann::json;
using testing::error_of;

// Every field set, none to its default.
TrainerState full_state() {
  TrainerState s;
  s.progress.step = 17;
  s.progress.flops_dense = 1.5e12;
  s.progress.flops_actual = 3.25e11;
  s.progress.skipped_steps = 2;
  s.progress.loss_spikes = 3;
  s.progress.loss = {2.5, 14};
  s.optimizer_steps = 15;
  s.sparsity = json{{"algorithm", "rigl"}, {"step", 16}};
  s.seed = 42;
  s.optimizer = "adamw";
  s.model = "gpt: 2 layers";
  s.sparsity_config = {{"h.0.weight", {{"algorithm", "rigl"}, {"level", "0.9"}}}};
  s.threads = 2;
  return s;
}

TEST(TrainerState, EveryFieldRoundTripsThroughJson) {
  const TrainerState s = full_state();
  const json j = to_json(s);
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"flops_actual", "flops_dense", "loss_mean", "loss_mean_steps",
                                            "loss_spikes", "model", "optimizer", "optimizer_steps", "seed",
                                            "skipped_steps", "sparsity", "sparsity_config", "step", "threads"}));
  const TrainerState back = trainer_state_from_json(json::parse(j.dump()), "state.safetensors");
  EXPECT_EQ(back.progress.step, 17);
  EXPECT_EQ(back.progress.flops_dense, 1.5e12);
  EXPECT_EQ(back.progress.flops_actual, 3.25e11);
  EXPECT_EQ(back.progress.skipped_steps, 2);
  EXPECT_EQ(back.progress.loss_spikes, 3);
  EXPECT_EQ(back.progress.loss.mean, 2.5);
  EXPECT_EQ(back.progress.loss.count, 14);
  EXPECT_EQ(back.optimizer_steps, 15);
  EXPECT_EQ(back.sparsity, s.sparsity);
  EXPECT_EQ(back.seed, 42u);
  EXPECT_EQ(back.optimizer, "adamw");
  EXPECT_EQ(back.model, "gpt: 2 layers");
  EXPECT_EQ(back.sparsity_config, s.sparsity_config);
  EXPECT_EQ(back.threads, 2);
  EXPECT_EQ(to_json(back).dump(), j.dump());
}

TEST(TrainerState, ADenseRunRecordsNoSparsityState) {
  TrainerState s = full_state();
  s.sparsity.reset();
  const json j = to_json(s);
  EXPECT_FALSE(j.contains("sparsity"));
  EXPECT_FALSE(trainer_state_from_json(j, "f").sparsity.has_value());
}

TEST(TrainerState, AMissingFieldIsAnErrorNamingItAndTheWayOn) {
  const json whole = to_json(full_state());
  int checked = 0;
  for (const auto& [key, value] : whole.items()) {
    if (key == "sparsity") continue;  // optional: a dense run has none
    json j = whole;
    j.erase(key);
    EXPECT_EQ(error_of([&] { (void)trainer_state_from_json(j, "run/checkpoint_4.state.safetensors"); }),
              "run/checkpoint_4.state.safetensors: the trainer state has no '" + key +
                  "'. A checkpoint written before sparsetrain recorded it (before 2026-11-23) cannot be resumed; "
                  "start a new run from its weights with --checkpoint_path and --load_checkpoint_states model");
    ++checked;
  }
  EXPECT_EQ(checked, 13);
}

TEST(TrainerState, AFieldOfAnotherTypeIsAnErrorNamingIt) {
  const json whole = to_json(full_state());
  struct Case {
    const char* key;
    json value;
    const char* expected;
  };
  for (const Case& c : std::vector<Case>{{"step", "ten", "an integer"},
                                         {"loss_mean_steps", 1.5, "an integer"},
                                         {"seed", -1, "an integer >= 0"},
                                         {"flops_dense", nullptr, "a number"},
                                         {"optimizer", 3, "a string"},
                                         {"sparsity_config", json::array(), "a JSON object"}}) {
    json j = whole;
    j[c.key] = c.value;
    EXPECT_EQ(error_of([&] { (void)trainer_state_from_json(j, "s"); }),
              "s: the trainer state's '" + std::string(c.key) + "' is " + c.value.dump() + "; expected " + c.expected);
  }
  EXPECT_EQ(error_of([] { (void)trainer_state_from_json(json::array(), "s"); }),
            "s: the trainer state is array; expected a JSON object");
}

}  // namespace
}  // namespace sparsetrain
