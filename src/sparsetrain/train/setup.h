#pragma once
// Everything a run is built from a config: the model (weights initialized from the seed), its
// sparsity algorithm (masks applied), the optimizer (wired to the algorithm) and, when asked, the
// data. `train`, `eval`, `generate`, `config` and `bench train` all build through here, so they
// agree on what a config means.
#include <cstdint>
#include <memory>

#include "sparsetrain/config/train_config.h"
#include "sparsetrain/dist/gradient_reducer.h"
#include "sparsetrain/models/model.h"
#include "sparsetrain/optim/optimizer.h"
#include "sparsetrain/sparsity/algorithm.h"
#include "sparsetrain/train/data_source.h"

namespace sparsetrain {

struct Setup {
  TrainConfig config;
  std::unique_ptr<Tokenizer> tokenizer;  // language models: the one the text is encoded with
  std::unique_ptr<DataSource> data;      // null when built without data
  std::unique_ptr<Model> model;
  std::unique_ptr<SparsityAlgorithm> sparsity;  // null without a sparsity section
  std::unique_ptr<Optimizer> optimizer;
  uint64_t seed = 0;
  // What the run does other than the config asks, for the user before it starts: each sparsity
  // group's storage warnings (SparsityAlgorithm::storage_warnings), "<file>: sparsity group 1: ...".
  std::vector<std::string> warnings;
  // The ranks the run is spread over (train/distributed.h): this process alone unless
  // distribute() was called under mpirun. The reducer averages their gradients (null alone).
  Communicator* ranks = nullptr;
  std::unique_ptr<GradientReducer> reducer;
  Communicator& comm() const;
  // Rank 0 alone prints and writes the model directory; the other ranks only read it.
  bool writes() const { return comm().rank() == 0; }
};

// The model a config describes: a GPT's vocabulary is `tokenizer_vocab` unless `vocab_size` is
// given (it must then be at least that).
std::unique_ptr<Model> build_model(const TrainConfig& config, int64_t tokenizer_vocab);

// Builds the whole run with `seed` (the config's runconfig.seed unless overridden): the weights are
// initialized from the seed, or loaded from model.init_from, before the masks are applied. With
// `load_data` false the data is not read (generate, config, bench).
Setup make_setup(TrainConfig config, uint64_t seed, bool load_data, bool apply_sparsity = true);

}  // namespace sparsetrain
