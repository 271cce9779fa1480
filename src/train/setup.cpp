#include "train/setup.h"

#include <fmt/format.h>

#include <optional>
#include <string>

#include "core/error.h"
#include "models/gpt.h"
#include "models/mlp.h"
#include "models/sparse_init.h"
#include "optim/adamw.h"
#include "optim/sgd.h"

namespace sparsetrain {

std::unique_ptr<Model> build_model(const TrainConfig& config, int64_t vocab) {
  if (const auto* gpt = std::get_if<GptConfig>(&config.model)) {
    GptConfig c = *gpt;
    if (!config.model_sets_vocab) c.vocab_size = vocab;
    if (c.vocab_size < vocab)
      fail("{}: model.vocab_size {} is smaller than the {} tokenizer's {} ids", config.file, c.vocab_size,
           config.train_input.tokenizer, vocab);
    return std::make_unique<Gpt>(c);
  }
  return std::make_unique<Mlp>(std::get<MlpConfig>(config.model));
}

namespace {

// A group without `format` keeps its matrices masked-dense: no speed-up, and flops_actual counts
// them dense (docs/training.md). Said once per group, with the key that gives sparse kernels.
std::optional<std::string> masked_dense_warning(const SparsityAlgorithm& group) {
  const SparsityOptions& o = group.options();
  if (o.format || o.auto_format) return std::nullopt;
  std::size_t count = 0;
  for (const Parameter* p : group.parameters())
    if (p->shape().size() == 2 && p->storage() == Storage::MaskedDense) ++count;
  if (count == 0) return std::nullopt;
  return fmt::format(
      "{}: {} matri{} stored masked-dense (no 'format'): a mask zeroes weights of a dense matrix, which runs at dense "
      "speed or slower, and flops_actual counts it dense; 'format: csr' (or 'auto') runs sparse kernels",
      group.name(), count, count == 1 ? "x" : "ces");
}

}  // namespace

Setup make_setup(TrainConfig config, uint64_t seed, bool load_data, bool apply_sparsity) {
  Setup s;
  s.seed = seed;
  s.config = std::move(config);
  const TrainConfig& c = s.config;
  const auto* gpt = std::get_if<GptConfig>(&c.model);
  if (gpt != nullptr) s.tokenizer = make_tokenizer(c.train_input.tokenizer);
  s.model = build_model(c, s.tokenizer ? s.tokenizer->vocab_size() : 0);
  if (load_data) {
    s.data = make_data_source(c, gpt != nullptr ? gpt->context : 0, s.tokenizer.get());
    if (const auto* mlp = std::get_if<MlpConfig>(&c.model); mlp != nullptr && mlp->inputs != s.data->input_size())
      fail("{}: model.input_size is {}, but the data has {} features per example", c.file, mlp->inputs,
           s.data->input_size());
  }
  s.model->init_weights(seed);
  if (apply_sparsity && c.sparsity.form != ConfigForm::None) {
    // Groups without their own seed draw their masks from the run's, so --seed varies them too.
    SparsityConfig sparsity = c.sparsity;
    for (AlgorithmSpec& group : sparsity.groups)
      if (!group.options.seed) group.options.seed = seed;
    s.sparsity = sparsity.build();
    try {
      s.sparsity->apply(*s.model);
    } catch (const Error& e) {
      fail("{}: {}", c.file, e.what());  // what the model refuses (a layer that would keep no block)
    }
    apply_sparse_init(*s.model, c.sparse_init);
    const std::vector<const SparsityAlgorithm*> groups = s.sparsity->leaf_algorithms();
    for (std::size_t g = 0; g < groups.size(); ++g) {
      for (const std::string& w : groups[g]->storage_warnings())
        s.warnings.push_back(fmt::format("{}: sparsity group {}: {}", c.file, g + 1, w));
      if (const std::optional<std::string> w = masked_dense_warning(*groups[g]))
        s.warnings.push_back(fmt::format("{}: sparsity group {}: {}", c.file, g + 1, *w));
    }
  }
  const OptimizerConfig& o = c.optimizer;
  if (o.type == "sgd")
    s.optimizer = std::make_unique<Sgd>(s.model->parameters(), o.learning_rate, o.sgd);
  else
    s.optimizer = std::make_unique<AdamW>(s.model->parameters(), o.learning_rate, o.adamw);
  if (s.sparsity) s.sparsity->apply(*s.optimizer);
  return s;
}

}  // namespace sparsetrain
