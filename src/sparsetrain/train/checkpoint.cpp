#include "sparsetrain/train/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <regex>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/json_text.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/io/atomic_file.h"
#include "sparsetrain/io/safetensors.h"

namespace sparsetrain {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string marker_path(const std::string& dir, int64_t step) {
  return (fs::path(dir) / fmt::format("checkpoint_{}.done", step)).string();
}

std::optional<uint64_t> size_of(const std::string& path) {
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) return std::nullopt;
  return size;
}

bool complete(const std::string& dir, int64_t step) {
  try {
    const json marker = json::parse(read_file(marker_path(dir, step)));
    return marker.at("step").get<int64_t>() == step &&
           size_of(checkpoint_model_path(dir, step)) == marker.at("model_bytes").get<uint64_t>() &&
           size_of(checkpoint_state_path(dir, step)) == marker.at("state_bytes").get<uint64_t>();
  } catch (const std::exception&) {
    return false;
  }
}

// The files of a model directory: the steps any checkpoint file names (complete or not),
// ascending, and the temporary files of unfinished atomic writes (of checkpoints, params.yaml and
// metrics.jsonl).
struct Listing {
  std::vector<int64_t> steps;
  std::vector<fs::path> temporaries;
};

Listing scan(const std::string& dir) {
  static const std::regex checkpoint(R"(checkpoint_(\d{1,18})\.(safetensors|state\.safetensors|done))");
  static const std::regex temporary(
      R"((checkpoint_\d{1,18}\.(safetensors|state\.safetensors|done)|params(\.to_step_\d{1,18})?\.yaml|metrics\.jsonl)\.tmp-\d+)");
  Listing l;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string file = e.path().filename().string();
    if (std::regex_match(file, m, checkpoint))
      l.steps.push_back(std::stoll(m[1].str()));
    else if (std::regex_match(file, temporary))
      l.temporaries.push_back(e.path());
  }
  std::sort(l.steps.begin(), l.steps.end());
  l.steps.erase(std::unique(l.steps.begin(), l.steps.end()), l.steps.end());
  return l;
}

// Removes the files of a step, the marker first: a half-removed checkpoint is never complete.
// Returns the names of the files that were there.
std::vector<std::string> remove_step(const std::string& dir, int64_t step) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const std::string& path :
       {marker_path(dir, step), checkpoint_model_path(dir, step), checkpoint_state_path(dir, step)})
    if (fs::remove(path, ec)) removed.push_back(fs::path(path).filename().string());
  return removed;
}

}  // namespace

std::string checkpoint_model_path(const std::string& dir, int64_t step) {
  return (fs::path(dir) / fmt::format("checkpoint_{}.safetensors", step)).string();
}

std::string checkpoint_state_path(const std::string& dir, int64_t step) {
  return (fs::path(dir) / fmt::format("checkpoint_{}.state.safetensors", step)).string();
}

void save_checkpoint(const std::string& dir, const Module& model, const Optimizer& optimizer,
                     const TrainerState& trainer_state) {
  const int64_t step = trainer_state.progress.step;
  // A complete checkpoint of this step (an earlier run's) is incomplete from the moment its first
  // file is replaced, so its marker goes first.
  remove_file_durably(marker_path(dir, step));
  const std::string model_path = checkpoint_model_path(dir, step);
  const std::string state_path = checkpoint_state_path(dir, step);
  try {
    write_safetensors(model_path, model.state_dict(), {{"format", "pt"}, {"step", std::to_string(step)}});

    StateDict state;
    for (const Parameter* p : optimizer.params())
      for (const std::string& key : optimizer.state_keys()) {
        const auto it = p->states().find(key);
        if (it == p->states().end()) continue;  // not created yet: no step taken
        StateTensor t{p->name() + "." + key, {static_cast<int64_t>(it->second.size())}, false, {}, {}};
        t.values.assign(it->second.begin(), it->second.end());
        state.add(std::move(t));
      }
    write_safetensors(state_path, state, {{"sparsetrain.trainer", to_json(trainer_state).dump()}});

    const json marker = {{"step", step},
                         {"model_bytes", size_of(model_path).value_or(0)},
                         {"state_bytes", size_of(state_path).value_or(0)}};
    write_file_atomically(marker_path(dir, step), marker.dump() + "\n");
  } catch (...) {
    remove_step(dir, step);  // a failed save leaves nothing behind; older checkpoints are untouched
    throw;
  }
}

std::vector<int64_t> complete_checkpoints(const std::string& dir) {
  std::vector<int64_t> steps = scan(dir).steps;
  std::erase_if(steps, [&](int64_t s) { return !complete(dir, s); });
  return steps;
}

std::vector<std::string> remove_interrupted_saves(const std::string& dir) {
  const Listing l = scan(dir);
  std::vector<std::string> removed;
  std::error_code ec;
  for (const fs::path& t : l.temporaries)
    if (fs::remove(t, ec)) removed.push_back(t.filename().string());
  for (int64_t s : l.steps)
    if (!complete(dir, s)) std::ranges::copy(remove_step(dir, s), std::back_inserter(removed));
  return removed;
}

void prune_checkpoints(const std::string& dir, int64_t keep) {
  remove_interrupted_saves(dir);
  const std::vector<int64_t> done = complete_checkpoints(dir);
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep) < done.size(); ++i) remove_step(dir, done[i]);
}

std::string checkpoint_state_path_of(const std::string& model_path) {
  const std::string state_suffix = ".state.safetensors", suffix = ".safetensors";
  if (model_path.ends_with(state_suffix))
    fail("{}: is a checkpoint's state file; give its model file, {}", model_path,
         model_path.substr(0, model_path.size() - state_suffix.size()) + suffix);
  if (!model_path.ends_with(suffix)) fail("{}: a checkpoint's model file ends in .safetensors", model_path);
  return model_path.substr(0, model_path.size() - suffix.size()) + ".state.safetensors";
}

namespace {

TrainerState trainer_state_of(const SafetensorsFile& state, const std::string& state_path) {
  const auto meta = state.metadata.find("sparsetrain.trainer");
  if (meta == state.metadata.end())
    fail("{}: no 'sparsetrain.trainer' metadata; not a sparsetrain training state", state_path);
  json j;
  try {
    j = json::parse(meta->second);
  } catch (const json::exception& e) {
    fail("{}: the 'sparsetrain.trainer' metadata is not valid JSON: {}", state_path, json_parse_problem(e));
  }
  return trainer_state_from_json(j, state_path);
}

// A model file to train or evaluate from holds finite weights only. NaN in a file without masks
// is Cerebras' NaN form (NaN marks a pruned weight), which `inspect --import-nan` converts; any
// other non-finite value is a value gone wrong.
SafetensorsFile read_model_file(const std::string& path) {
  SafetensorsFile file = read_safetensors(path);
  const bool masks = std::ranges::any_of(file.tensors.tensors, [](const StateTensor& t) { return t.is_mask; });
  for (const StateTensor& t : file.tensors.tensors) {
    const auto bad = std::ranges::find_if(t.values, [](float v) { return !std::isfinite(v); });
    if (bad == t.values.end()) continue;
    const auto at = bad - t.values.begin();
    if (std::isnan(*bad) && !masks)
      fail(
          "{}: tensor '{}' holds NaN (element {}) and the file has no masks: Cerebras' NaN form, where NaN marks a "
          "pruned weight. Convert it first: sparsetrain inspect {} --import-nan CONVERTED.safetensors",
          path, t.name, at, path);
    fail(
        "{}: tensor '{}' holds the non-finite value {} (element {}): the weights went wrong (a diverged run?); start "
        "from an earlier checkpoint",
        path, t.name, *bad, at);
  }
  return file;
}

}  // namespace

CheckpointState read_checkpoint_state(const std::string& model_path) {
  CheckpointState state;
  state.path = checkpoint_state_path_of(model_path);
  state.file = read_safetensors(state.path);
  state.trainer = trainer_state_of(state.file, state.path);
  return state;
}

void load_model_weights(const std::string& model_path, Module& model) {
  SafetensorsFile file = read_model_file(model_path);
  StateDict weights;
  for (StateTensor& t : file.tensors.tensors)
    if (!t.is_mask) weights.add(std::move(t));  // masks stay in `file`, found by name below
  for (const Module::Entry& e : model.named_parameters()) {
    const Parameter& p = *e.param;
    if (!p.is_sparse()) continue;
    const StateTensor* mask = file.tensors.find(p.name() + "_mask");
    if (mask != nullptr) {
      weights.add(*mask);
      continue;
    }
    const Mask own = p.mask();
    StateTensor t{p.name() + "_mask", p.shape(), true, {}, {}};
    t.keep.assign(own.data(), own.data() + own.rows() * own.cols());
    weights.add(std::move(t));
  }
  try {
    model.load_state_dict(weights, /*strict=*/true);
  } catch (const Error& e) {
    fail("{}: does not fit this model: {}", model_path, e.what());
  }
}

std::optional<TrainerState> load_checkpoint(const std::string& model_path, Module& model, Optimizer* optimizer) {
  const SafetensorsFile file = read_model_file(model_path);
  try {
    model.load_state_dict(file.tensors, /*strict=*/true);
  } catch (const Error& e) {
    fail("{}: does not fit this model: {}; use the config it was trained with (params.yaml in its model directory)",
         model_path, e.what());
  }
  if (optimizer == nullptr) return std::nullopt;
  CheckpointState state = read_checkpoint_state(model_path);
  load_optimizer_state(state, *optimizer);
  return std::move(state.trainer);
}

void load_optimizer_state(const CheckpointState& state, Optimizer& optimizer) {
  if (state.trainer.optimizer != optimizer.name())
    fail("{}: saved by the optimizer '{}'; this run's optimizer.optimizer_type is '{}'", state.path,
         state.trainer.optimizer, optimizer.name());
  std::size_t used = 0;
  for (Parameter* p : optimizer.params())
    for (const std::string& key : optimizer.state_keys()) {
      const StateTensor* t = state.file.tensors.find(p->name() + "." + key);
      if (t == nullptr) continue;
      AlignedBuffer<float>& buffer = p->state(key);
      if (t->is_mask || t->values.size() != buffer.size())
        fail("{}: tensor '{}' holds {} values; parameter '{}' has {} trainable values", state.path, t->name,
             t->values.size(), p->name(), buffer.size());
      std::copy(t->values.begin(), t->values.end(), buffer.begin());
      ++used;
    }
  if (used != state.file.tensors.tensors.size())
    fail("{}: holds {} optimizer tensors, but this model and optimizer ({}) use {}", state.path,
         state.file.tensors.tensors.size(), optimizer.name(), used);
}

}  // namespace sparsetrain
