#pragma once
// A whole training config in the Cerebras Model Zoo layout: the sections model, train_input,
// eval_input, optimizer, sparsity (or trainer.init.sparsity) and runconfig (docs/training.md
// documents every key). Read as strictly as the sparsity section: unknown and duplicate keys,
// wrong types and out-of-range values are Errors of the form "cfg.yaml:12:9:
// optimizer.learning_rate: expected ...".
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "sparsetrain/config/sparsity_config.h"
#include "sparsetrain/core/precision.h"
#include "sparsetrain/models/bert.h"
#include "sparsetrain/models/gpt.h"
#include "sparsetrain/models/mlp.h"
#include "sparsetrain/models/sparse_init.h"
#include "sparsetrain/optim/adamw.h"
#include "sparsetrain/optim/lr_schedule.h"
#include "sparsetrain/optim/sgd.h"

namespace sparsetrain {

enum class DatasetKind { Brown, TextFile, FashionMnist };
const char* dataset_name(DatasetKind kind);  // "brown", "text_file", "fashion_mnist"

struct InputConfig {
  DatasetKind dataset = DatasetKind::Brown;
  std::string path;                // text_file: the file; brown, fashion_mnist: a directory (default: installed)
  std::string tokenizer = "byte";  // text: "byte", "gpt2" or "wordpiece"
  int64_t batch_size = 8;
  int64_t sequence_length = 0;       // text: tokens per sequence; 0 means the model's n_positions
  double validation_fraction = 0.1;  // text: held out for evaluation
  uint64_t split_seed = 0;           // text: which documents are held out
  // brown: only documents of these categories (empty: all), then none of the excluded ones.
  std::vector<std::string> categories, exclude_categories;
  int64_t num_examples = 0;  // images: the first n of a seed-0 shuffle (0 = all)
  // images, train_input: which seed-0 shuffle picks both subsets; numpy = np.random.seed(0),
  // shuffle the training indices, then the test indices (the SET reference's loader).
  enum class SubsetShuffle { Philox, Numpy } subset_shuffle = SubsetShuffle::Philox;
  int64_t eval_batches = 0;  // eval_input: batches per evaluation (0 = the whole split)
  // BERT's masked-language-modelling data (data/mlm_examples.h), the Model Zoo's keys.
  int64_t max_predictions_per_seq = 20;  // masked positions per sequence, at most
  double masked_lm_prob = 0.15;          // fraction of a sequence's tokens to predict, in (0, 1)
  double short_seq_prob = 0.1;           // chance that a document's sequences aim shorter, in [0, 1)
};

struct OptimizerConfig {
  std::string type = "adamw";  // "adamw" or "sgd"
  LrSchedule learning_rate = LrSchedule::constant(1e-3);
  AdamWOptions adamw;
  SgdOptions sgd;
  double max_gradient_norm = 0.0;  // clip the global L2 norm above this (0 = off)
};

// What a step with a non-finite loss or gradient does (it never updates weights or masks).
enum class NonfinitePolicy {
  Skip,  // count it and go on
  Stop,  // save a checkpoint of the last good state and exit with code 4
};

struct RunConfig {
  int64_t max_steps = 0;         // one of max_steps and num_epochs
  int64_t num_epochs = 0;        // data read in epochs (not gpt's): floor(examples / batch) steps each
  int64_t log_steps = 10;        // a log line and a metrics row every this many steps
  int64_t checkpoint_steps = 0;  // a checkpoint every this many steps (0: only at the end)
  int64_t eval_frequency = 0;    // evaluate every this many steps (0: only at the end)
  int64_t keep_checkpoints = 3;  // newest complete checkpoints kept (>= 1)
  uint64_t seed = 1;             // weights, data order, dropout and masks
  int num_threads = 0;           // 0: OpenMP's default
  NonfinitePolicy nonfinite_policy = NonfinitePolicy::Skip;
  double loss_spike_factor = 0.0;  // skip a step whose loss exceeds this x the running mean (0: off)
  bool tensorboard = true;         // TensorBoard event files in the model directory's train/ and eval/
  // Data-parallel runs (mpirun): gradients are all-reduced in buckets of about this many MiB of
  // payload, each as soon as the backward pass has finished it (PyTorch DDP's bucket_cap_mb).
  double bucket_cap_mb = 25.0;
};

using ModelConfig = std::variant<GptConfig, BertConfig, MlpConfig>;

struct TrainConfig {
  std::string file;  // where it was read from
  std::string text;  // the YAML as written, copied into the model directory
  ModelConfig model;
  bool model_sets_vocab = false;  // gpt, bert: vocab_size given (else the tokenizer's)
  std::string vocab_size_at;      // gpt, bert: "cfg.yaml:3:15: model.vocab_size" where it is given
  // gpt, bert: model.init_from's directory (absolute; empty: none), the Hugging Face GPT-2 or BERT
  // whose weights the run starts from. Its config.json fills the model keys the YAML leaves out,
  // and a key the YAML gives must agree with it (but for those that change no weight: dropout,
  // initializer_range); sparse_init defaults to dense, keeping the pretrained values.
  std::string init_from;
  std::map<std::string, std::string> model_keys_at;  // each key the YAML's model section gives -> where
  SparseInit sparse_init = SparseInit::Scaled;       // model.sparse_init
  // model.mixed_precision + model.fp16_type: bfloat16 -> Bf16 (docs/training.md, "Mixed precision")
  Precision precision = Precision::Fp32;
  InputConfig train_input;
  InputConfig eval_input;
  OptimizerConfig optimizer;
  SparsityConfig sparsity;
  RunConfig run;

  bool is_gpt() const { return std::holds_alternative<GptConfig>(model); }
  bool is_bert() const { return std::holds_alternative<BertConfig>(model); }
  // A language model (gpt, bert), reading text through a tokenizer.
  bool is_text() const { return !std::holds_alternative<MlpConfig>(model); }
  // "gpt", "bert" or "mlp".
  const char* model_name() const;
};

TrainConfig load_train_config_yaml(const std::string& text, const std::string& file);
TrainConfig load_train_config_file(const std::string& path);

// A whole training config when the document is a mapping with a top-level training section
// (model, train_input, eval_input, optimizer or runconfig) or a key one or two edits from one
// (`models:`, so the typo is reported rather than the file read as a sparsity section alone), else
// only its sparsity section (load_sparsity_yaml). Errors are those of the loader chosen.
std::variant<TrainConfig, SparsityConfig> load_train_or_sparsity_file(const std::string& path);

// Command-line values that replace config keys.
struct RunOverrides {
  std::optional<int64_t> max_steps;  // also drops num_epochs
  std::optional<uint64_t> seed;
  std::optional<int> num_threads;
  std::optional<std::string> init_from;  // model.init_from, "hf:DIR" (DIR relative to the working directory)
  std::optional<Precision> precision;    // model.mixed_precision and model.fp16_type
  std::optional<int64_t> eval_batches;   // eval_input.eval_batches
};

// Applies the overrides to config.run (config.model and init_from for --init_from,
// config.eval_input for --eval_batches, as if the YAML had said so) and to config.text, so the copy
// in the model directory is the config the run really used: the keys are replaced and a first
// comment line names the overrides (the YAML is re-emitted, which drops the original comments).
// Without overrides the text stays exactly as written.
void apply_run_overrides(TrainConfig& config, const RunOverrides& overrides);

}  // namespace sparsetrain
