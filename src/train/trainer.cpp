#include "train/trainer.h"

#include <unistd.h>

#include <csignal>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/parallel.h"
#include "io/atomic_file.h"
#include "train/checkpoint.h"
#include "train/metrics.h"
#include "train/step.h"

namespace sparsetrain {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// 1 - kept / elements over the parameters the algorithm claims (0 for a dense run).
double model_sparsity(const Setup& s) {
  if (!s.sparsity) return 0.0;
  double kept = 0.0, total = 0.0;
  for (const Parameter* p : s.sparsity->parameters()) {
    kept += static_cast<double>(p->kept());
    total += static_cast<double>(p->numel());
  }
  return total > 0.0 ? 1.0 - kept / total : 0.0;
}

std::string si(double x) {
  const char* units[] = {"", "k", "M", "G", "T", "P", "E"};
  int u = 0;
  while (std::fabs(x) >= 1000.0 && u < 6) x /= 1000.0, ++u;
  return fmt::format("{:.3g}{}", x, units[u]);
}

class ProgressBar {
 public:
  ProgressBar(bool enabled, int64_t total) : on_(enabled && ::isatty(STDERR_FILENO) == 1), total_(total) {}
  void update(int64_t step) {
    if (!on_ || seconds_since(last_) < 0.1) return;
    last_ = Clock::now();
    const int width = 30;
    const auto filled = static_cast<int>(width * step / std::max<int64_t>(total_, 1));
    fmt::print(stderr, "\r[{}{}] {}/{}", std::string(static_cast<std::size_t>(filled), '#'),
               std::string(static_cast<std::size_t>(width - filled), ' '), step, total_);
    std::fflush(stderr);
  }
  void clear() {
    if (on_) fmt::print(stderr, "\r\033[K");
  }

 private:
  bool on_;
  int64_t total_;
  Clock::time_point last_ = Clock::now() - std::chrono::seconds(1);
};

json eval_row(const Setup& s, int64_t step, const EvalResult& r) {
  json row = {{"step", step}, {"split", "eval"}, {"loss", r.loss}};
  if (s.config.is_gpt())
    row["perplexity"] = std::exp(r.loss);
  else
    row["accuracy"] = r.accuracy;
  return row;
}

void print_eval(const Setup& s, int64_t step, const EvalResult& r) {
  if (s.config.is_gpt())
    fmt::print("eval step {}: loss {:.4f}, perplexity {:.2f} ({} tokens)\n", step, r.loss, std::exp(r.loss),
               r.predictions);
  else
    fmt::print("eval step {}: loss {:.4f}, accuracy {:.2f}% ({} examples)\n", step, r.loss, 100.0 * r.accuracy,
               r.predictions);
  std::fflush(stdout);
}

int64_t total_steps(const Setup& s) {
  const RunConfig& r = s.config.run;
  return r.max_steps > 0 ? r.max_steps : r.num_epochs * s.data->steps_per_epoch();
}

// SIGTERM and SIGINT while training: the handler only records the signal and restores the
// default action (a second signal stops at once); the loop finishes its step, saves a checkpoint
// and returns 128 + the signal number.
volatile std::sig_atomic_t stop_signal = 0;

extern "C" void record_stop_signal(int signal_number) {
  stop_signal = signal_number;
  std::signal(signal_number, SIG_DFL);
}

class StopSignals {
 public:
  StopSignals() {
    stop_signal = 0;
    struct sigaction action = {};
    action.sa_handler = record_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, &old_term_);
    sigaction(SIGINT, &action, &old_int_);
  }
  ~StopSignals() {
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGINT, &old_int_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  int received() const { return stop_signal; }

 private:
  struct sigaction old_term_ = {}, old_int_ = {};
};

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

// A model directory with files of a run but no complete checkpoint is never trained over.
void check_fresh_directory(const std::string& dir) {
  for (const char* name : {"metrics.jsonl", "params.yaml"})
    if (fs::exists(fs::path(dir) / name))
      fail("{}: holds a run ({}) but no complete checkpoint to resume from; choose another --model_dir or remove "
           "the directory",
           dir, name);
}

// How a run's sparsified parameters are configured: per parameter, its algorithm, configured
// storage, level schedule and level at `step` (which the distribution and overrides shape).
json sparsity_config_of(const Setup& s, int64_t step) {
  json record = json::object();
  if (!s.sparsity) return record;
  for (const SparsityAlgorithm* a : s.sparsity->leaf_algorithms()) {
    const SparsityOptions& o = a->options();
    const std::vector<double> levels = a->levels(step);
    for (std::size_t i = 0; i < a->parameters().size(); ++i)
      record[a->parameters()[i]->name()] = {
          {"algorithm", a->name()},
          {"format", o.auto_format ? "auto" : o.format ? o.format->name() : "masked-dense"},
          {"schedule", a->sparsity_schedule().describe()},
          {"level", fmt::format("{:.6g}", levels[i])}};
  }
  return record;
}

// What a checkpoint must share with a run that trains on from it, checked before anything is
// loaded so that the message names the config field: the seed, the optimizer, the model and the
// sparsity of each parameter. Evaluation needs only the model. Checkpoints written before the
// model and sparsity were recorded are checked for the rest.
void check_same_run(const json& saved, const Setup& s, const std::string& state_path, bool training) {
  auto text = [](const json& j) { return j.is_string() ? fmt::format("'{}'", j.get<std::string>()) : j.dump(); };
  auto refuse = [&](const std::string& field, const json& there, const json& here, const std::string& of = "") {
    fail("{}: the checkpoint was trained with {} {}{}, this run has {}; use the config it was trained with "
         "(params.yaml in its model directory)",
         state_path, field, text(there), of.empty() ? "" : fmt::format(" for '{}'", of), text(here));
  };
  if (saved.contains("model") && saved["model"] != s.model->describe())
    refuse("model", saved["model"], s.model->describe());
  if (!training) return;
  if (saved.contains("seed") && saved["seed"] != s.seed) refuse("runconfig.seed", saved["seed"], s.seed);
  if (saved.contains("optimizer") && saved["optimizer"] != s.optimizer->name())
    refuse("optimizer.optimizer_type", saved["optimizer"], s.optimizer->name());
  if (!saved.contains("sparsity_config")) return;
  const json& there = saved["sparsity_config"];
  const json here = sparsity_config_of(s, saved.value("step", int64_t{0}));
  for (const Module::Entry& e : s.model->named_parameters()) {
    const std::string& name = e.param->name();
    const json none = {{"algorithm", "none (dense)"}};
    const json& a = there.contains(name) ? there.at(name) : none;
    const json& b = here.contains(name) ? here.at(name) : none;
    for (const auto& [key, field] : {std::pair{"algorithm", "sparsity.algorithm"}, {"format", "sparsity.format"},
                                     {"schedule", "sparsity.sparsity"}, {"level", "sparsity.sparsity (its level now)"}})
      if (a.value(key, json()) != b.value(key, json())) refuse(field, a.value(key, json()), b.value(key, json()), name);
  }
}

}  // namespace

EvalResult evaluate(Model& model, const DataSource& data) {
  double loss_sum = 0.0;
  int64_t correct = 0, predictions = 0;
  Batch batch;
  for (int64_t i = 0; i < data.eval_batches(); ++i) {
    data.eval_batch(i, batch);
    const LossResult r = model.forward(batch, /*training=*/false, 0, 0);
    loss_sum += r.loss * static_cast<double>(batch.predictions());
    correct += r.correct;
    predictions += batch.predictions();
  }
  if (predictions == 0) fail("evaluation: the evaluation split has no batches");
  return {loss_sum / static_cast<double>(predictions), static_cast<double>(correct) / static_cast<double>(predictions),
          predictions};
}

int run(Setup& s, const RunOptions& o) {
  const StopSignals signals;  // from here on a stop request is honoured after the current step
  Model& model = *s.model;
  Optimizer& optimizer = *s.optimizer;
  const std::string& dir = o.model_dir;
  create_output_directory(dir, "--model_dir");

  // What a killed save left behind is never resumed from; training removes it.
  if (o.mode != RunMode::Eval) {
    const std::vector<std::string> removed = remove_interrupted_saves(dir);
    if (!removed.empty())
      fmt::print("removed the leftovers of an interrupted save from {}: {}\n", dir, fmt::join(removed, ", "));
  }

  // Where to start: the newest complete checkpoint, an explicit one, or fresh.
  int64_t start = 0;
  json state = json::object();
  const std::vector<int64_t> done = complete_checkpoints(dir);
  const bool training = o.mode != RunMode::Eval;
  // A weights-only checkpoint only seeds a new run; after that the directory's own checkpoints
  // count, as for a run without --checkpoint_path. `resume_from` is the checkpoint whose run goes on.
  const bool weights_only = o.weights_only && training && !o.checkpoint_path.empty();
  const std::string resume_from = weights_only ? std::string() : o.checkpoint_path;
  const std::string from = !resume_from.empty() ? resume_from
                           : !done.empty()      ? checkpoint_model_path(dir, done.back())
                                                : "";
  if (weights_only && done.empty()) {
    check_fresh_directory(dir);
    load_model_weights(o.checkpoint_path, model);
    fmt::print("starting from the weights of {}\n", o.checkpoint_path);
  } else if (!from.empty()) {
    // Evaluating a model file without its state file (--checkpoint_path) checks its tensors only.
    std::optional<CheckpointState> saved;
    if (training || fs::exists(checkpoint_state_path_of(from))) {
      saved = read_checkpoint_state(from);
      check_same_run(saved->trainer, s, saved->path, training);
    }
    load_checkpoint(from, model, nullptr);
    if (training) {
      load_optimizer_state(*saved, optimizer);
      state = std::move(saved->trainer);
    } else if (saved && saved->trainer.contains("step")) {
      // Evaluation loads no optimizer, but reports the step the checkpoint was saved at.
      start = saved->trainer["step"].get<int64_t>();
    }
  } else if (!training) {
    fail("{}: no complete checkpoint to evaluate; train first or give --checkpoint_path", dir);
  } else {
    check_fresh_directory(dir);
  }
  if (!resume_from.empty() && training && !done.empty() && done.back() > state.value("step", int64_t{0}))
    fail("{}: holds checkpoints up to step {}, and training on from step {} of {} would overwrite and delete them; "
         "choose another --model_dir",
         dir, done.back(), state.value("step", int64_t{0}), resume_from);
  if (resume_from.empty() && !done.empty() && training)
    fmt::print("resuming from {} (step {})\n", from, done.back());
  if (state.contains("step")) {
    start = state["step"].get<int64_t>();
    optimizer.set_step(state["optimizer_steps"].get<int64_t>());
    if (s.sparsity && state.contains("sparsity")) s.sparsity->load_state(state["sparsity"]);
  }

  if (o.mode == RunMode::Eval) {
    const EvalResult r = evaluate(model, *s.data);
    print_eval(s, start, r);
    MetricsLog(fs::path(dir) / "metrics.jsonl", -1).write(eval_row(s, start, r));
    return 0;
  }

  // A run started from another directory's checkpoint records its config too.
  const fs::path params = fs::path(dir) / "params.yaml";
  if (start == 0 || !fs::exists(params)) write_file_atomically(params.string(), s.config.text);
  MetricsLog metrics((fs::path(dir) / "metrics.jsonl").string(), start);
  const RunConfig& rc = s.config.run;
  const int64_t steps = total_steps(s);
  double flops_dense = state.value("flops_dense", 0.0), flops_actual = state.value("flops_actual", 0.0);
  int64_t skipped = state.value("skipped_steps", int64_t{0});
  int64_t spikes = state.value("loss_spikes", int64_t{0});
  LossAverage average{state.value("loss_mean", 0.0), state.value("loss_mean_steps", int64_t{0})};
  auto trainer_state = [&](int64_t step) {
    json j = {{"step", step},           {"seed", s.seed},          {"optimizer", optimizer.name()},
              {"optimizer_steps", optimizer.steps()}, {"flops_dense", flops_dense}, {"flops_actual", flops_actual},
              {"skipped_steps", skipped}, {"loss_spikes", spikes}, {"loss_mean", average.mean},
              {"loss_mean_steps", average.count}, {"threads", num_threads()}, {"model", model.describe()},
              {"sparsity_config", sparsity_config_of(s, step)}};
    if (s.sparsity) j["sparsity"] = s.sparsity->state();
    return j;
  };
  // The step whose complete checkpoint in `dir` holds the current state, if one does.
  int64_t saved = resume_from.empty() && start > 0 ? start : -1;
  auto checkpoint = [&](int64_t step) {
    save_checkpoint(dir, step, model, optimizer, trainer_state(step));
    prune_checkpoints(dir, rc.keep_checkpoints);
    saved = step;
  };

  fmt::print("{}\n{}\n", model.describe(), s.data->describe());
  if (start < steps)
    fmt::print("training steps {} to {} on {} thread{}; model directory {}\n", start + 1, steps, num_threads(),
               num_threads() == 1 ? "" : "s", dir);
  else
    fmt::print("nothing to do: the newest checkpoint is at step {} of {}\n", start, steps);
  std::fflush(stdout);
  ProgressBar bar(o.progress, steps);
  Batch batch;
  double window_loss = 0.0, window_seconds = 0.0;
  int64_t window_steps = 0, window_predictions = 0;
  for (int64_t step = start + 1; step <= steps; ++step) {
    const auto t0 = Clock::now();
    const StepResult r = train_step(s, step, batch, average.limit(rc.loss_spike_factor));
    if (r.outcome == StepOutcome::NonFinite && rc.nonfinite_policy == NonfinitePolicy::Stop) {
      bar.clear();
      optimizer.set_step(step - 1);
      if (saved != step - 1) checkpoint(step - 1);  // saving it again would make it incomplete for a while
      fmt::print("step {}: non-finite loss or gradient (loss {}, gradient norm {}); stopped as "
                 "runconfig.nonfinite_policy says, the last good state is {}\n",
                 step, r.loss, r.grad_norm, checkpoint_model_path(dir, step - 1));
      std::fflush(stdout);
      return kExitNonFinite;
    }
    flops_dense += r.flops.dense;
    flops_actual += r.flops.actual;
    if (r.outcome == StepOutcome::NonFinite) ++skipped;
    if (r.outcome == StepOutcome::LossSpike) ++spikes;
    if (r.outcome == StepOutcome::Applied) average.add(r.loss);
    const double dt = seconds_since(t0);
    window_loss += r.loss;
    window_seconds += dt;
    ++window_steps;
    window_predictions += r.predictions;
    bar.update(step);

    if (step % rc.log_steps == 0 || step == steps) {
      bar.clear();
      const double loss = window_loss / static_cast<double>(window_steps);
      const double rate = static_cast<double>(window_predictions) / window_seconds;
      const double ms = 1000.0 * window_seconds / static_cast<double>(window_steps);
      const double sparsity = model_sparsity(s);
      const char* unit = s.config.is_gpt() ? "tokens/s" : "samples/s";
      fmt::print("step {:>6}/{} | loss {:.4f} | lr {:.2e} | sparsity {:.3f} | {:.0f} {} | {:.1f} ms/step | FLOPs "
                 "dense-eq {} actual {}{}{}\n",
                 step, steps, loss, optimizer.lr(), sparsity, rate, unit, ms, si(flops_dense),
                 si(flops_actual), skipped > 0 ? fmt::format(" | skipped {}", skipped) : "",
                 spikes > 0 ? fmt::format(" | loss spikes {}", spikes) : "");
      std::fflush(stdout);
      metrics.write({{"step", step},
                     {"split", "train"},
                     {"loss", loss},
                     {"lr", optimizer.lr()},
                     {"grad_norm", r.grad_norm},
                     {"sparsity", sparsity},
                     {s.config.is_gpt() ? "tokens_per_s" : "samples_per_s", rate},
                     {"ms_per_step", ms},
                     {"flops_dense", flops_dense},
                     {"flops_actual", flops_actual},
                     {"skipped", skipped},
                     {"loss_spikes", spikes}});
      window_loss = window_seconds = 0.0;
      window_steps = window_predictions = 0;
    }
    const bool last = step == steps;
    if ((rc.eval_frequency > 0 && step % rc.eval_frequency == 0) || (last && o.mode == RunMode::TrainAndEval)) {
      bar.clear();
      const EvalResult e = evaluate(model, *s.data);
      print_eval(s, step, e);
      metrics.write(eval_row(s, step, e));
    }
    const bool stopping = signals.received() != 0;
    if ((rc.checkpoint_steps > 0 && step % rc.checkpoint_steps == 0) || last || stopping) checkpoint(step);
    if (stopping && !last) {
      bar.clear();
      fmt::print("stopped by {} after step {}; checkpoint: {} (train again with the same --model_dir to resume)\n",
                 signals.received() == SIGTERM ? "SIGTERM" : "SIGINT", step, checkpoint_model_path(dir, step));
      std::fflush(stdout);
      return 128 + signals.received();
    }
  }
  fmt::print("checkpoint: {}\nmetrics: {}\n", checkpoint_model_path(dir, std::max(start, steps)),
             (fs::path(dir) / "metrics.jsonl").string());
  return 0;
}

}  // namespace sparsetrain
