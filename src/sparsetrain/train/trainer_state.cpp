#include "sparsetrain/train/trainer_state.h"

#include <fmt/format.h>

#include <type_traits>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/precision.h"

namespace sparsetrain {

using json = nlohmann::json;

namespace {

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

// Every field of the JSON object, by key: the one list both directions walk. `State` is
// TrainerState or const TrainerState.
template <typename State, typename Visit>
void each_field(State& s, Visit&& visit) {
  visit("step", s.progress.step);
  visit("flops_dense", s.progress.flops_dense);
  visit("flops_actual", s.progress.flops_actual);
  visit("skipped_steps", s.progress.skipped_steps);
  visit("loss_spikes", s.progress.loss_spikes);
  visit("loss_mean", s.progress.loss.mean);
  visit("loss_mean_steps", s.progress.loss.count);
  visit("optimizer_steps", s.optimizer_steps);
  visit("sparsity", s.sparsity);
  visit("seed", s.seed);
  visit("optimizer", s.optimizer);
  visit("model", s.model);
  visit("sparsity_config", s.sparsity_config);
  visit("threads", s.threads);
  visit("precision", s.precision);
}

// "an integer >= 0", ...: what a field of type T must be, or nullptr when `j` is one.
template <typename T>
const char* mismatch(const json& j) {
  if constexpr (std::is_same_v<T, double>) {
    return j.is_number() ? nullptr : "a number";
  } else if constexpr (std::is_unsigned_v<T>) {
    return j.is_number_unsigned() ? nullptr : "an integer >= 0";
  } else if constexpr (std::is_integral_v<T>) {
    return j.is_number_integer() ? nullptr : "an integer";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return j.is_string() ? nullptr : "a string";
  } else {
    return j.is_object() ? nullptr : "a JSON object";
  }
}

}  // namespace

void RunProgress::count(int64_t at, const StepResult& r) {
  step = at;
  flops_dense += r.flops.dense;
  flops_actual += r.flops.actual;
  if (r.outcome == StepOutcome::NonFinite) ++skipped_steps;
  if (r.outcome == StepOutcome::LossSpike) ++loss_spikes;
  if (r.outcome == StepOutcome::Applied) loss.add(r.loss);
}

json sparsity_config_of(const Setup& s, int64_t step) {
  json record = json::object();
  if (!s.sparsity) return record;
  for (const SparsityAlgorithm* a : s.sparsity->leaf_algorithms()) {
    const SparsityOptions& o = a->options();
    const std::vector<double> levels = a->levels(step);
    for (std::size_t i = 0; i < a->parameters().size(); ++i)
      record[a->parameters()[i]->name()] = {{"algorithm", a->name()},
                                            {"format", o.auto_format ? "auto"
                                                       : o.format    ? o.format->name()
                                                                     : "masked-dense"},
                                            {"schedule", a->sparsity_schedule().describe()},
                                            {"level", fmt::format("{:.6g}", levels[i])}};
  }
  return record;
}

TrainerState capture_trainer_state(const Setup& s, const RunProgress& progress) {
  TrainerState state;
  state.progress = progress;
  state.optimizer_steps = s.optimizer->steps();
  if (s.sparsity) state.sparsity = s.sparsity->state();
  state.seed = s.seed;
  state.optimizer = s.optimizer->name();
  state.model = s.model->describe();
  state.sparsity_config = sparsity_config_of(s, progress.step);
  state.threads = num_threads();
  state.precision = std::string(precision_name(s.config.precision));
  return state;
}

json to_json(const TrainerState& state) {
  json j = json::object();
  each_field(state, [&](const char* key, const auto& value) {
    if constexpr (IsOptional<std::decay_t<decltype(value)>>::value) {
      if (value) j[key] = *value;
    } else {
      j[key] = value;
    }
  });
  return j;
}

TrainerState trainer_state_from_json(const json& j, const std::string& file) {
  if (!j.is_object()) fail("{}: the trainer state is {}; expected a JSON object", file, j.type_name());
  TrainerState state;
  each_field(state, [&](const char* key, auto& value) {
    using T = std::decay_t<decltype(value)>;
    const auto it = j.find(key);
    if constexpr (IsOptional<T>::value) {
      if (it == j.end()) return;
      using V = typename T::value_type;
      if constexpr (!std::is_same_v<V, json>)
        if (const char* expected = mismatch<V>(*it))
          fail("{}: the trainer state's '{}' is {}; expected {}", file, key, it->dump(), expected);
      value = it->template get<V>();
    } else {
      if (it == j.end())
        fail(
            "{}: the trainer state has no '{}'. A checkpoint written before sparsetrain recorded it (before "
            "2026-11-23) cannot be resumed; start a new run from its weights with --checkpoint_path and "
            "--load_checkpoint_states model",
            file, key);
      if (const char* expected = mismatch<T>(*it))
        fail("{}: the trainer state's '{}' is {}; expected {}", file, key, it->dump(), expected);
      value = it->template get<T>();
    }
  });
  return state;
}

}  // namespace sparsetrain
