#include "sparsetrain/train/resume.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <utility>

#include "sparsetrain/core/error.h"
#include "sparsetrain/train/checkpoint.h"

namespace sparsetrain {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// A model directory with files of a run but no complete checkpoint holds a run that died before
// its first checkpoint: nothing to resume, so the run starts afresh and the dead attempt's
// files are kept beside it as <name>.interrupted-<k><extension>, k the first number free for all.
// Its event file directories go too (train.interrupted-<k>): TensorBoard shows them as runs of
// their own, apart from the new run's steps.
void set_aside_dead_run(const std::string& dir) {
  const std::vector<fs::path> files = {fs::path(dir) / "metrics.jsonl", fs::path(dir) / "params.yaml",
                                       fs::path(dir) / "run_environment.jsonl", fs::path(dir) / "train",
                                       fs::path(dir) / "eval"};
  auto aside = [](const fs::path& file, int k) {
    return fs::path(file).replace_filename(
        fmt::format("{}.interrupted-{}{}", file.stem().string(), k, file.extension().string()));
  };
  int k = 1;
  while (std::ranges::any_of(files, [&](const fs::path& f) { return fs::exists(aside(f, k)); })) ++k;
  std::vector<std::string> kept;
  for (const fs::path& file : files) {
    if (!fs::exists(file)) continue;
    fs::rename(file, aside(file, k));
    kept.push_back(aside(file, k).filename().string());
  }
  if (!kept.empty())
    fmt::print("{}: the run there stopped before its first checkpoint; starting afresh (its files are kept as {})\n",
               dir, fmt::join(kept, ", "));
}

}  // namespace

void check_same_run(const TrainerState& saved, const Setup& s, const std::string& state_path, bool training) {
  auto text = [](const json& j) { return j.is_string() ? fmt::format("'{}'", j.get<std::string>()) : j.dump(); };
  auto refuse = [&](const std::string& field, const json& there, const json& here, const std::string& of = "") {
    fail(
        "{}: the checkpoint was trained with {} {}{}, this run has {}; use the config it was trained with "
        "(params.yaml in its model directory)",
        state_path, field, text(there), of.empty() ? "" : fmt::format(" for '{}'", of), text(here));
  };
  if (saved.model != s.model->describe()) refuse("model", saved.model, s.model->describe());
  if (training && saved.seed != s.seed) refuse("runconfig.seed", saved.seed, s.seed);
  if (training && saved.optimizer != s.optimizer->name())
    refuse("optimizer.optimizer_type", saved.optimizer, s.optimizer->name());
  // Weights are float32 in either precision, so evaluation and a weights-only start take any; a
  // run trains on only in the precision it was trained in (its bits depend on it).
  const std::string saved_precision = saved.precision.value_or("fp32");
  const std::string precision(precision_name(s.config.precision));
  if (training && saved_precision != precision)
    fail(
        "{}: the checkpoint was trained in precision {}, this run has {} (model.mixed_precision / --precision): "
        "resume with --precision {}, or start a new run from its weights with --checkpoint_path and "
        "--load_checkpoint_states model",
        state_path, saved_precision, precision, saved_precision);
  // Evaluation needs each parameter sparse or dense as trained (the masks come from the file);
  // training on needs its whole sparsity config.
  const json& there = saved.sparsity_config;
  const json here = sparsity_config_of(s, saved.progress.step);
  const json none = {{"algorithm", "none (dense)"}};
  for (const Module::Entry& e : s.model->named_parameters()) {
    const std::string& name = e.param->name();
    const json& a = there.contains(name) ? there.at(name) : none;
    const json& b = here.contains(name) ? here.at(name) : none;
    if (!training) {
      if ((a == none) != (b == none)) refuse("sparsity.algorithm", a.at("algorithm"), b.at("algorithm"), name);
      continue;
    }
    for (const auto& [key, field] : {std::pair{"algorithm", "sparsity.algorithm"},
                                     {"format", "sparsity.format"},
                                     {"schedule", "sparsity.sparsity"},
                                     {"level", "sparsity.sparsity (its level now)"}})
      if (a.value(key, json()) != b.value(key, json())) refuse(field, a.value(key, json()), b.value(key, json()), name);
  }
}

StartPoint resolve_start(Setup& s, const RunOptions& o) {
  const std::string& dir = o.model_dir;
  const bool training = o.mode != RunMode::Eval;
  if (!o.checkpoint_path.empty()) (void)checkpoint_state_path_of(o.checkpoint_path);  // a model file's path
  // What a killed save left behind is never resumed from; training removes it (rank 0 alone:
  // the other ranks of a data-parallel run only read the model directory).
  const bool writes = s.writes();
  if (training && writes) {
    const std::vector<std::string> removed = remove_interrupted_saves(dir);
    if (!removed.empty())
      fmt::print("removed the leftovers of an interrupted save from {}: {}\n", dir, fmt::join(removed, ", "));
  }

  // Where to start: the newest complete checkpoint, an explicit one, or fresh.
  StartPoint start;
  std::optional<TrainerState> state;  // the state training goes on from
  const std::vector<int64_t> done = complete_checkpoints(dir);
  // A weights-only checkpoint only seeds a new run; after that the directory's own checkpoints
  // count, as for a run without --checkpoint_path. `resume_from` is the checkpoint whose run goes on.
  const bool weights_only = o.weights_only && training && !o.checkpoint_path.empty();
  const std::string resume_from = weights_only ? std::string() : o.checkpoint_path;
  const std::string from = !resume_from.empty() ? resume_from
                           : !done.empty()      ? checkpoint_model_path(dir, done.back())
                                                : "";
  if (weights_only && done.empty()) {
    if (writes) set_aside_dead_run(dir);
    load_model_weights(o.checkpoint_path, *s.model);
    fmt::print("starting from the weights of {}\n", o.checkpoint_path);
  } else if (!from.empty()) {
    // Evaluating a model file without its state file (--checkpoint_path) checks its tensors only.
    std::optional<CheckpointState> saved;
    if (training || fs::exists(checkpoint_state_path_of(from))) {
      saved = read_checkpoint_state(from);
      check_same_run(saved->trainer, s, saved->path, training);
    }
    load_checkpoint(from, *s.model, nullptr);
    if (training) {
      load_optimizer_state(*saved, *s.optimizer);
      state = std::move(saved->trainer);
    } else if (saved) {
      // Evaluation loads no optimizer, but reports the step the checkpoint was saved at.
      start.progress.step = saved->trainer.progress.step;
    }
  } else if (!training) {
    fail("{}: no complete checkpoint to evaluate; train first or give --checkpoint_path", dir);
  } else {
    if (writes) set_aside_dead_run(dir);
    if (!s.config.init_from.empty()) fmt::print("starting from the Hugging Face weights of {}\n", s.config.init_from);
  }
  const int64_t state_step = state ? state->progress.step : 0;
  if (!resume_from.empty() && training && !done.empty() && done.back() > state_step)
    fail(
        "{}: holds checkpoints up to step {}, and training on from step {} of {} would overwrite and delete them; "
        "choose another --model_dir",
        dir, done.back(), state_step, resume_from);
  if (resume_from.empty() && !done.empty() && training) {
    fmt::print("resuming from {} (step {})\n", from, done.back());
    // The command that started this run from another's weights, run again, goes on with it.
    if (weights_only)
      fmt::print(
          "--checkpoint_path {} is not read: {} has a run of its own, which goes on (a new --model_dir starts a new "
          "run from that file's weights)\n",
          o.checkpoint_path, dir);
  }
  if (state) {
    start.progress = state->progress;
    s.optimizer->set_step(state->optimizer_steps);
    if (s.sparsity && state->sparsity) s.sparsity->load_state(*state->sparsity);
  }
  if (resume_from.empty() && start.progress.step > 0) start.saved_step = start.progress.step;
  return start;
}

}  // namespace sparsetrain
