#pragma once
// What the trainer checkpoints beside the model and optimizer tensors: one struct, written as the
// JSON object `sparsetrain.trainer` in the metadata of checkpoint_N.state.safetensors
// (docs/training.md) by to_json and read back by trainer_state_from_json. Both walk the same
// field list, so a field is added in one place; a field missing from a file is an error naming it.
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sparsetrain/train/setup.h"
#include "sparsetrain/train/step.h"

namespace sparsetrain {

// The running mean a loss spike is measured against: an exponential average (weight 0.1) of the
// applied steps' losses, in force after 10 of them. It is checkpointed, so a resumed run skips
// the same steps as an uninterrupted one.
struct LossAverage {
  static constexpr int64_t kWarmup = 10;
  double mean = 0.0;
  int64_t count = 0;

  double limit(double factor) const {
    return factor > 0.0 && count >= kWarmup ? factor * mean : std::numeric_limits<double>::infinity();
  }
  void add(double loss) {
    mean = count == 0 ? loss : 0.9 * mean + 0.1 * loss;
    ++count;
  }
};

// The counters a run carries from step to step, and across a resume.
struct RunProgress {
  int64_t step = 0;           // the last step counted
  double flops_dense = 0.0;   // dense-equivalent FLOPs of every step so far
  double flops_actual = 0.0;  // FLOPs the kernels ran
  int64_t skipped_steps = 0;  // non-finite steps skipped (runconfig.nonfinite_policy: skip)
  int64_t loss_spikes = 0;    // steps skipped for a loss above runconfig.loss_spike_factor x the mean
  LossAverage loss;

  // Counts step `step`: its FLOPs and its outcome.
  void count(int64_t step, const StepResult& r);
};

struct TrainerState {
  RunProgress progress;
  int64_t optimizer_steps = 0;
  std::optional<nlohmann::json> sparsity;  // the sparsity algorithm's state; none for a dense run

  // What the run is; a run that trains on from this state must match it (train/resume.h).
  uint64_t seed = 0;
  std::string optimizer;                                      // its optimizer_type
  std::string model;                                          // Model::describe()
  nlohmann::json sparsity_config = nlohmann::json::object();  // sparsity_config_of()
  int threads = 1;                                            // recorded, not checked
  // "fp32" or "bf16" (core/precision.h); absent from checkpoints written before bf16 existed,
  // which were all fp32.
  std::optional<std::string> precision;
};

// The state of the run `s` after `progress`: the optimizer's step count, the sparsity
// algorithm's state and config at progress.step, the model, seed and thread count.
TrainerState capture_trainer_state(const Setup& s, const RunProgress& progress);

// Per sparsified parameter, how the run configures it: its algorithm, storage format, level
// schedule and level at `step` (which the distribution and overrides shape).
nlohmann::json sparsity_config_of(const Setup& s, int64_t step);

nlohmann::json to_json(const TrainerState& state);
// An Error names `file` and the field that is missing or of the wrong type.
TrainerState trainer_state_from_json(const nlohmann::json& j, const std::string& file);

}  // namespace sparsetrain
