#pragma once
// Batches for the trainer, as pure functions of (seed, step): resuming at step k needs nothing but
// k, and a run's data order depends only on its seed.
//
//   text    the tokenized training split is one stream (documents separated by the tokenizer's
//           end-of-text id); the batch of step k is `batch_size` windows of T + 1 tokens at
//           offsets drawn from Philox(seed, "train.batch", k). Evaluation reads the validation
//           stream in consecutive non-overlapping windows, always the same ones.
//   images  epochs of floor(examples / batch_size) steps; epoch e visits the examples in the
//           order shuffled_indices(examples, seed, "train.epoch.<e>"). Evaluation reads the test
//           set in order.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sparsetrain/config/train_config.h"
#include "sparsetrain/data/fashion_mnist.h"
#include "sparsetrain/models/model.h"
#include "sparsetrain/text/tokenizer.h"

namespace sparsetrain {

class DataSource {
 public:
  virtual ~DataSource() = default;
  // The training batch of optimizer step `step` (>= 1).
  virtual void train_batch(uint64_t seed, int64_t step, Batch& out) = 0;
  // Evaluation batches: how many, and batch i of them.
  virtual int64_t eval_batches() const = 0;
  virtual void eval_batch(int64_t i, Batch& out) const = 0;
  // Steps in one pass over the training examples (images), or 0 (text: windows are sampled).
  virtual int64_t steps_per_epoch() const = 0;
  // "brown: 4,321,000 training tokens, 480,000 validation tokens (byte tokenizer)"
  virtual std::string describe() const = 0;
  // Input features of image data (rows * cols), or the vocabulary of text data.
  virtual int64_t input_size() const = 0;
};

// Loads the datasets the config names (train_input and eval_input). Text is encoded with
// `tokenizer` (which must outlive the source) into sequences of sequence_length tokens (the
// model's context when 0); images need neither.
std::unique_ptr<DataSource> make_data_source(const TrainConfig& config, int64_t model_context,
                                             const Tokenizer* tokenizer);

// The tokenizer a config names: "byte" (with an end-of-text id, 257 tokens) or "gpt2".
std::unique_ptr<Tokenizer> make_tokenizer(const std::string& name);

}  // namespace sparsetrain
