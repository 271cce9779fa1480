#pragma once
// One training run as its hooks see it, and the hook interface. The trainer (train/trainer.cpp)
// is a plain step loop:
//
//   for each step:  result = train_step(...)
//                   hooks: on_step_result       (before the step counts; may end the run there)
//                   progress.count(step, result)
//                   hooks: on_train_batch_end   (logging, evaluation, stop signals, checkpoints)
//   hooks: on_train_end                         (may still fail the run)
//
// after the Cerebras Model Zoo's trainer callbacks. Each hook has one job (train/hooks/); the
// loop knows none of them. A hook ends the run with Training::stop, after the current event's
// remaining hooks have run.
#include <cstdint>
#include <optional>
#include <string>

#include "sparsetrain/train/metrics.h"
#include "sparsetrain/train/setup.h"
#include "sparsetrain/train/step.h"
#include "sparsetrain/train/trainer.h"
#include "sparsetrain/train/trainer_state.h"

namespace sparsetrain {

// A one-line progress bar on stderr, when stderr is a terminal.
class ProgressBar {
 public:
  ProgressBar(bool enabled, int64_t total);
  void update(int64_t step);
  void clear();

 private:
  bool on_;
  int64_t total_;
  double last_ = -1.0;  // seconds on the monotonic clock of the last drawing
};

class Training {
 public:
  Training(Setup& setup, const RunOptions& options, const RunProgress& progress, int64_t total_steps);

  Setup& setup;
  const RunOptions& options;
  RunProgress progress;  // progress.step: the last step counted
  const int64_t total_steps;
  MetricsLog metrics;  // metrics.jsonl in the model directory
  ProgressBar bar;

  bool last_step() const { return progress.step == total_steps; }
  // Prints `text` and a newline to stdout, after clearing the progress bar.
  void say(const std::string& text);

  // Ends the run once the hooks of the current event have run: the trainer then says `message`
  // and returns `exit_code`. The first request counts.
  struct Stop {
    int exit_code;
    std::string message;
  };
  void stop(int exit_code, std::string message);
  const std::optional<Stop>& stopping() const { return stop_; }

 private:
  std::optional<Stop> stop_;
};

class TrainerHook {
 public:
  virtual ~TrainerHook() = default;
  // After train_step(step), before progress counts it: a hook that stops the run here ends it
  // at the previous step, which is then the last one counted and saved.
  virtual void on_step_result(Training&, int64_t /*step*/, const StepResult&) {}
  // After progress counted the step (progress.step is its number).
  virtual void on_train_batch_end(Training&, const StepResult&) {}
  // After the last step, when the run was not stopped before it.
  virtual void on_train_end(Training&) {}
};

}  // namespace sparsetrain
