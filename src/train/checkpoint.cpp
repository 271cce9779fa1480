#include "train/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/safetensors.h"

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
    const std::vector<uint8_t> bytes = read_file_bytes(marker_path(dir, step));
    const json marker = json::parse(bytes.begin(), bytes.end());
    return marker.at("step").get<int64_t>() == step &&
           size_of(checkpoint_model_path(dir, step)) == marker.at("model_bytes").get<uint64_t>() &&
           size_of(checkpoint_state_path(dir, step)) == marker.at("state_bytes").get<uint64_t>();
  } catch (const std::exception&) {
    return false;
  }
}

// Steps named by any checkpoint file (complete or not), and the temporary files, in `dir`.
void scan(const std::string& dir, std::vector<int64_t>& steps, std::vector<fs::path>& temporaries) {
  static const std::regex name(R"(checkpoint_(\d{1,18})\.(safetensors|state\.safetensors|done)(\.tmp-\d+)?)");
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string file = e.path().filename().string();
    if (!std::regex_match(file, m, name)) continue;
    if (m[3].matched)
      temporaries.push_back(e.path());
    else
      steps.push_back(std::stoll(m[1].str()));
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
}

}  // namespace

std::string checkpoint_model_path(const std::string& dir, int64_t step) {
  return (fs::path(dir) / fmt::format("checkpoint_{}.safetensors", step)).string();
}

std::string checkpoint_state_path(const std::string& dir, int64_t step) {
  return (fs::path(dir) / fmt::format("checkpoint_{}.state.safetensors", step)).string();
}

void save_checkpoint(const std::string& dir, int64_t step, const Module& model, const Optimizer& optimizer,
                     const json& trainer_state) {
  const std::string model_path = checkpoint_model_path(dir, step);
  const std::string state_path = checkpoint_state_path(dir, step);
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
  write_safetensors(state_path, state, {{"sparsetrain.trainer", trainer_state.dump()}});

  const json marker = {{"step", step},
                       {"model_bytes", size_of(model_path).value_or(0)},
                       {"state_bytes", size_of(state_path).value_or(0)}};
  write_file_atomically(marker_path(dir, step), marker.dump() + "\n");
}

std::vector<int64_t> complete_checkpoints(const std::string& dir) {
  std::vector<int64_t> steps;
  std::vector<fs::path> temporaries;
  scan(dir, steps, temporaries);
  std::erase_if(steps, [&](int64_t s) { return !complete(dir, s); });
  return steps;
}

void prune_checkpoints(const std::string& dir, int64_t keep) {
  std::vector<int64_t> steps;
  std::vector<fs::path> temporaries;
  scan(dir, steps, temporaries);
  std::error_code ec;
  for (const fs::path& t : temporaries) fs::remove(t, ec);
  std::vector<int64_t> done = steps;
  std::erase_if(done, [&](int64_t s) { return !complete(dir, s); });
  if (done.empty()) return;
  const int64_t newest = done.back();
  const auto kept_from = done.size() > static_cast<std::size_t>(keep) ? done[done.size() - static_cast<std::size_t>(keep)]
                                                                      : done.front();
  for (int64_t s : steps) {
    const bool old_complete = s < kept_from && std::binary_search(done.begin(), done.end(), s);
    const bool stale_incomplete = s < newest && !std::binary_search(done.begin(), done.end(), s);
    if (!old_complete && !stale_incomplete) continue;
    fs::remove(marker_path(dir, s), ec);  // the marker first: a half-deleted checkpoint is never "complete"
    fs::remove(checkpoint_model_path(dir, s), ec);
    fs::remove(checkpoint_state_path(dir, s), ec);
  }
}

json load_checkpoint(const std::string& model_path, Module& model, Optimizer* optimizer) {
  const SafetensorsFile file = read_safetensors(model_path);
  try {
    model.load_state_dict(file.tensors, /*strict=*/true);
  } catch (const Error& e) {
    fail("{}: does not fit this model: {}", model_path, e.what());
  }
  if (optimizer == nullptr) return json::object();

  std::string state_path = model_path;
  const std::string suffix = ".safetensors";
  if (!state_path.ends_with(suffix)) fail("{}: a checkpoint's model file ends in .safetensors", model_path);
  state_path.replace(state_path.size() - suffix.size(), suffix.size(), ".state.safetensors");
  const SafetensorsFile state = read_safetensors(state_path);
  const auto meta = state.metadata.find("sparsetrain.trainer");
  if (meta == state.metadata.end()) fail("{}: no 'sparsetrain.trainer' metadata; not a sparsetrain training state", state_path);
  json trainer;
  try {
    trainer = json::parse(meta->second);
  } catch (const json::parse_error& e) {
    fail("{}: the 'sparsetrain.trainer' metadata is not valid JSON: {}", state_path, e.what());
  }
  std::size_t used = 0;
  for (Parameter* p : optimizer->params())
    for (const std::string& key : optimizer->state_keys()) {
      const StateTensor* t = state.tensors.find(p->name() + "." + key);
      if (t == nullptr) continue;
      AlignedBuffer<float>& buffer = p->state(key);
      if (t->is_mask || t->values.size() != buffer.size())
        fail("{}: tensor '{}' holds {} values; parameter '{}' has {} trainable values", state_path, t->name,
             t->values.size(), p->name(), buffer.size());
      std::copy(t->values.begin(), t->values.end(), buffer.begin());
      ++used;
    }
  if (used != state.tensors.tensors.size())
    fail("{}: holds {} optimizer tensors, but this model and optimizer ({}) use {}", state_path,
         state.tensors.tensors.size(), optimizer->name(), used);
  return trainer;
}

}  // namespace sparsetrain
