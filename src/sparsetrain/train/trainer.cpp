#include "sparsetrain/train/trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>

#include "sparsetrain/config/config_diff.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/io/atomic_file.h"
#include "sparsetrain/train/checkpoint.h"
#include "sparsetrain/train/evaluation.h"
#include "sparsetrain/train/hooks/checkpointer.h"
#include "sparsetrain/train/hooks/evaluator.h"
#include "sparsetrain/train/hooks/nonfinite_policy.h"
#include "sparsetrain/train/hooks/stop_signals.h"
#include "sparsetrain/train/hooks/train_log.h"
#include "sparsetrain/train/resume.h"
#include "sparsetrain/train/run_environment.h"
#include "sparsetrain/train/tensorboard_log.h"
#include "sparsetrain/train/training.h"

namespace sparsetrain {

namespace fs = std::filesystem;

namespace {

int64_t total_steps(const Setup& s) {
  const RunConfig& r = s.config.run;
  return r.max_steps > 0 ? r.max_steps : r.num_epochs * s.data->steps_per_epoch();
}

// params.yaml holds the config of the run's latest steps. A resumed run whose config differs
// (key by key; comments and layout aside) says what changed and keeps the earlier config as
// params.to_step_<N>.yaml, N the step it was used up to.
void record_config(const Setup& s, const std::string& dir, int64_t start_step) {
  const fs::path params = fs::path(dir) / "params.yaml";
  if (start_step == 0 || !fs::exists(params)) {
    write_file_atomically(params.string(), s.config.text);
    return;
  }
  const std::string before = read_file(params.string());
  const std::vector<std::string> changes = config_differences(before, s.config.text);
  if (changes.empty()) return;
  const fs::path earlier = fs::path(dir) / fmt::format("params.to_step_{}.yaml", start_step);
  write_file_atomically(earlier.string(), before);
  write_file_atomically(params.string(), s.config.text);
  fmt::print("the config differs from the one the run used up to step {} (kept as {}): {}\n", start_step,
             earlier.string(), fmt::join(changes, "; "));
}

int evaluate_only(Setup& s, const RunOptions& o, int64_t step) {
  const EvalResult r = evaluate(*s.model, *s.data, s.comm());
  if (!s.writes()) return 0;
  fmt::print("{}\n", eval_line(s, step, r));
  std::fflush(stdout);
  MetricsLog metrics((fs::path(o.model_dir) / "metrics.jsonl").string(), -1);
  log_to_tensorboard(metrics, s, o.model_dir, -1);
  metrics.write(eval_row(s, step, r));
  return 0;
}

}  // namespace

std::string_view run_mode_name(RunMode mode) {
  switch (mode) {
    case RunMode::Train: return "train";
    case RunMode::Eval: return "eval";
    case RunMode::TrainAndEval: return "train_and_eval";
  }
  return "unknown";
}

int run(Setup& s, const RunOptions& o) {
  // From here on a stop request is honoured after the current step.
  auto signals = std::make_unique<StopSignals>();
  const std::string& dir = o.model_dir;
  create_output_directory(dir, "--model_dir");
  const StartPoint start = resolve_start(s, o);
  // Rank 0 alone writes the model directory; the others wait until it is ready.
  const bool writes = s.writes();
  if (writes) record_environment(dir, start.progress.step, std::string(run_mode_name(o.mode)), s.comm().size());
  s.comm().barrier();
  if (o.mode == RunMode::Eval) return evaluate_only(s, o, start.progress.step);

  if (writes) record_config(s, dir, start.progress.step);
  const int64_t steps = total_steps(s);
  Training t(s, o, start.progress, steps);
  if (writes) log_to_tensorboard(t.metrics, s, dir, start.progress.step);

  // In the order they run at each event.
  auto checkpointer = std::make_unique<Checkpointer>(start.saved_step);
  std::vector<std::unique_ptr<TrainerHook>> hooks;
  hooks.push_back(std::make_unique<NonFinitePolicy>(s.config.run.nonfinite_policy, *checkpointer));
  hooks.push_back(std::make_unique<TrainLog>());
  hooks.push_back(std::make_unique<Evaluator>());
  hooks.push_back(std::move(signals));
  hooks.push_back(std::move(checkpointer));

  fmt::print("{}\n{}\n", s.model->describe(), s.data->describe());
  if (t.progress.step < steps)
    fmt::print("training steps {} to {} on {}{} thread{}; model directory {}\n", t.progress.step + 1, steps,
               s.comm().size() == 1 ? "" : fmt::format("{} ranks x ", s.comm().size()), num_threads(),
               num_threads() == 1 ? "" : "s", dir);
  else
    fmt::print("nothing to do: the newest checkpoint is at step {} of {}\n", t.progress.step, steps);
  std::fflush(stdout);

  Batch batch;
  for (int64_t step = t.progress.step + 1; step <= steps; ++step) {
    const StepResult r = train_step(s, step, batch, t.progress.loss.limit(s.config.run.loss_spike_factor));
    for (const auto& hook : hooks) hook->on_step_result(t, step, r);
    if (t.stopping()) break;
    t.progress.count(step, r);
    for (const auto& hook : hooks) hook->on_train_batch_end(t, r);
    t.bar.update(step);
    if (t.stopping()) break;
  }
  if (!t.stopping()) {
    for (const auto& hook : hooks) hook->on_train_end(t);
    fmt::print("checkpoint: {}\nmetrics: {}\n", checkpoint_model_path(dir, std::max(start.progress.step, steps)),
               (fs::path(dir) / "metrics.jsonl").string());
  }
  if (!t.stopping()) return 0;
  t.say(t.stopping()->message);
  return t.stopping()->exit_code;
}

}  // namespace sparsetrain
