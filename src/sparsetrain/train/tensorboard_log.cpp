#include "sparsetrain/train/tensorboard_log.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <memory>

namespace sparsetrain {

namespace fs = std::filesystem;

namespace {

// The tags of metrics.jsonl keys that the Model Zoo logs under a name of its own (the learning
// rate of parameter group 0, the global gradient norm, the rate over the last log window, its
// language models' eval metrics); every other number keeps its key as its tag.
const std::map<std::string, std::string> kZooTags = {
    {"lr", "lr.0"},
    {"grad_norm", "model_wise_grad_norm"},
    {"samples_per_s", "local_samples_per_sec"},
    {"tokens_per_s", "local_tokens_per_sec"},
    {"perplexity", "eval/lm_perplexity"},
    {"accuracy", "eval/accuracy"},
};
// A BERT's eval metrics under the names the Model Zoo's BERT logs them.
const std::map<std::string, std::string> kZooBertTags = {
    {"accuracy", "eval/accuracy_masked_lm"},
    {"mlm_perplexity", "eval/mlm_perplexity"},
    {"nsp_accuracy", "eval/accuracy_cls"},
};

const std::string& tag_of(const std::string& key, bool bert) {
  if (const auto tag = kZooBertTags.find(key); bert && tag != kZooBertTags.end()) return tag->second;
  const auto tag = kZooTags.find(key);
  return tag != kZooTags.end() ? tag->second : key;
}

}  // namespace

TensorBoardLog::TensorBoardLog(const Setup& s, const std::string& model_dir)
    : s_(s), train_((fs::path(model_dir) / "train").string()), eval_((fs::path(model_dir) / "eval").string()) {}

void TensorBoardLog::write(const nlohmann::json& row) {
  Scalars scalars;
  for (const auto& [key, value] : row.items())
    if (key != "step" && value.is_number()) scalars.emplace_back(tag_of(key, s_.config.is_bert()), value.get<float>());
  const bool train = row.at("split") == "train";
  // Each sparsity group's own level, beside the overall `sparsity` of the row.
  if (train && s_.sparsity && s_.sparsity->leaf_algorithms().size() > 1) {
    int group = 0;
    for (const SparsityAlgorithm* leaf : s_.sparsity->leaf_algorithms())
      scalars.emplace_back(fmt::format("sparsity/group_{}", ++group), static_cast<float>(leaf->measured_sparsity()));
  }
  (train ? train_ : eval_).write(row.at("step").get<int64_t>(), scalars);
}

void log_to_tensorboard(MetricsLog& metrics, const Setup& s, const std::string& model_dir, int64_t resume_step) {
  // Also with the switch off: event files of the run's earlier part must not keep steps past the
  // resumed one, or turning the switch on again later would write those steps a second time.
  if (resume_step >= 0)
    for (const char* dir : {"train", "eval"})
      for (const std::string& line : cut_event_files((fs::path(model_dir) / dir).string(), resume_step))
        fmt::print("{}\n", line);
  if (!s.config.run.tensorboard) return;
  auto log = std::make_shared<TensorBoardLog>(s, model_dir);
  metrics.add_listener([log](const nlohmann::json& row) { log->write(row); });
}

}  // namespace sparsetrain
