#include "sparsetrain/train/data_source.h"

#include <fmt/format.h>

#include <algorithm>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/data/numpy_shuffle.h"
#include "sparsetrain/data/text_corpus.h"
#include "sparsetrain/dist/rank_agreement.h"
#include "sparsetrain/text/byte_tokenizer.h"
#include "sparsetrain/text/gpt2_tokenizer.h"
#include "sparsetrain/text/wordpiece_tokenizer.h"
#include "sparsetrain/train/text_documents.h"

namespace sparsetrain {

std::unique_ptr<Tokenizer> make_tokenizer(const std::string& name) {
  if (name == "byte") return std::make_unique<ByteTokenizer>(/*with_end_of_text=*/true);
  if (name == "gpt2") return std::make_unique<Gpt2Tokenizer>(Gpt2Tokenizer::load_default());
  if (name == "wordpiece") return std::make_unique<WordPieceTokenizer>(WordPieceTokenizer::load_default());
  fail("unknown tokenizer '{}'; expected byte, gpt2 or wordpiece", name);
}

namespace {

std::vector<int32_t> tokenize(const std::vector<TextDocument>& docs, const Tokenizer& tokenizer) {
  std::vector<int32_t> stream;
  const int32_t separator = tokenizer.end_of_text().value();
  for (const TextDocument& d : docs) {
    const std::vector<int32_t> ids = tokenizer.encode(d.text);
    stream.insert(stream.end(), ids.begin(), ids.end());
    stream.push_back(separator);
  }
  return stream;
}

class TextSource final : public DataSource {
 public:
  TextSource(const TrainConfig& c, int64_t context, const Tokenizer& tokenizer) : tokenizer_(tokenizer) {
    const InputConfig& in = c.train_input;
    seq_ = in.sequence_length > 0 ? in.sequence_length : context;
    if (seq_ > context)
      fail("train_input.max_sequence_length ({}) is longer than the model's n_positions ({})", seq_, context);
    batch_ = in.batch_size;
    eval_batch_size_ = c.eval_input.batch_size;
    const TextSplit split = load_text_split(c, BlankLines::Paragraphs);
    train_ = tokenize(split.train, tokenizer_);
    validation_ = tokenize(split.validation, tokenizer_);
    name_ = text_data_name(in);
    for (const auto* stream : {&train_, &validation_})
      if (static_cast<int64_t>(stream->size()) < seq_ + 1)
        fail("{}: a split of {} tokens is shorter than one sequence of {} + 1 tokens", name_, stream->size(), seq_);
    const int64_t windows = (static_cast<int64_t>(validation_.size()) - 1) / seq_;
    eval_batches_ = (windows + eval_batch_size_ - 1) / eval_batch_size_;
    if (c.eval_input.eval_batches > 0) eval_batches_ = std::min(eval_batches_, c.eval_input.eval_batches);
  }

  void train_batch(uint64_t seed, int64_t step, Batch& out) override {
    const Philox rng(seed, "train.batch", static_cast<uint64_t>(step));
    const auto starts = static_cast<uint64_t>(static_cast<int64_t>(train_.size()) - seq_);
    const RowRange mine = my_rows();
    fill(
        out, mine.end - mine.begin,
        [&](int64_t row) { return static_cast<int64_t>(rng.below(static_cast<uint64_t>(mine.begin + row), starts)); },
        train_);
    out.first_row = mine.begin;
  }
  int64_t batch_size() const override { return batch_; }
  uint64_t fingerprint() const override {
    const uint64_t parts[] = {content_hash(train_.data(), train_.size() * sizeof(int32_t)),
                              content_hash(validation_.data(), validation_.size() * sizeof(int32_t)),
                              static_cast<uint64_t>(seq_)};
    return content_hash(parts, sizeof parts);
  }

  int64_t eval_batches() const override { return eval_batches_; }
  void eval_batch(int64_t i, Batch& out) const override {
    const int64_t windows = (static_cast<int64_t>(validation_.size()) - 1) / seq_;
    const int64_t first = i * eval_batch_size_;
    fill(out, std::min(eval_batch_size_, windows - first), [&](int64_t row) { return (first + row) * seq_; },
         validation_);
  }
  int64_t steps_per_epoch() const override { return 0; }
  std::string describe() const override {
    return fmt::format("{}: {} training tokens, {} validation tokens ({} tokenizer, {} ids), sequences of {}", name_,
                       with_commas(static_cast<int64_t>(train_.size())),
                       with_commas(static_cast<int64_t>(validation_.size())), tokenizer_.name(),
                       tokenizer_.vocab_size(), seq_);
  }
  int64_t input_size() const override { return tokenizer_.vocab_size(); }

 private:
  template <typename Start>
  void fill(Batch& out, int64_t rows, Start start, const std::vector<int32_t>& stream) const {
    out.rows = rows;
    out.seq = seq_;
    out.first_row = 0;
    out.ids.resize(static_cast<std::size_t>(rows * seq_));
    out.targets.resize(out.ids.size());
    for (int64_t r = 0; r < rows; ++r) {
      const auto s = static_cast<std::size_t>(start(r));
      const auto o = static_cast<std::size_t>(r * seq_);
      std::copy_n(stream.begin() + static_cast<std::ptrdiff_t>(s), seq_, out.ids.begin() + static_cast<std::ptrdiff_t>(o));
      std::copy_n(stream.begin() + static_cast<std::ptrdiff_t>(s + 1), seq_,
                  out.targets.begin() + static_cast<std::ptrdiff_t>(o));
    }
  }

  int64_t seq_ = 0, batch_ = 0, eval_batch_size_ = 0, eval_batches_ = 0;
  const Tokenizer& tokenizer_;
  std::vector<int32_t> train_, validation_;
  std::string name_;
};

class ImageSource final : public DataSource {
 public:
  explicit ImageSource(const TrainConfig& c) {
    FashionMnist data = c.train_input.path.empty() ? load_fashion_mnist() : load_fashion_mnist(c.train_input.path);
    std::vector<int64_t> train_order, test_order;
    if (c.train_input.subset_shuffle == InputConfig::SubsetShuffle::Numpy) {
      const std::vector<int64_t> sizes = {data.train.count(), data.test.count()};
      std::vector<std::vector<int64_t>> orders = numpy_legacy_shuffles(sizes, 0);
      train_order = std::move(orders[0]);
      test_order = std::move(orders[1]);
    } else {
      train_order = shuffled_indices(data.train.count(), 0);
      test_order = shuffled_indices(data.test.count(), 0);
    }
    train_ = first_of(std::move(data.train), train_order, c.train_input.num_examples, "train_input");
    test_ = first_of(std::move(data.test), test_order, c.eval_input.num_examples, "eval_input");
    batch_ = c.train_input.batch_size;
    eval_batch_size_ = c.eval_input.batch_size;
    if (train_.count() < batch_)
      fail("train_input: {} training examples are fewer than one batch of {}", train_.count(), batch_);
    eval_batches_ = (test_.count() + eval_batch_size_ - 1) / eval_batch_size_;
    if (c.eval_input.eval_batches > 0) eval_batches_ = std::min(eval_batches_, c.eval_input.eval_batches);
  }

  void train_batch(uint64_t seed, int64_t step, Batch& out) override {
    const int64_t per_epoch = steps_per_epoch();
    const int64_t epoch = (step - 1) / per_epoch, index = (step - 1) % per_epoch;
    if (epoch != order_epoch_ || order_seed_ != seed) {
      order_ = shuffled_indices(train_.count(), seed, fmt::format("train.epoch.{}", epoch));
      order_epoch_ = epoch;
      order_seed_ = seed;
    }
    const RowRange mine = my_rows();
    fill(out, train_,
         std::span<const int64_t>(order_).subspan(static_cast<std::size_t>(index * batch_ + mine.begin),
                                                  static_cast<std::size_t>(mine.end - mine.begin)));
    out.first_row = mine.begin;
  }
  int64_t batch_size() const override { return batch_; }
  uint64_t fingerprint() const override {
    const uint64_t parts[] = {hash(train_), hash(test_)};
    return content_hash(parts, sizeof parts);
  }
  int64_t eval_batches() const override { return eval_batches_; }
  void eval_batch(int64_t i, Batch& out) const override {
    const int64_t first = i * eval_batch_size_, rows = std::min(eval_batch_size_, test_.count() - first);
    std::vector<int64_t> idx(static_cast<std::size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) idx[static_cast<std::size_t>(r)] = first + r;
    fill(out, test_, idx);
  }
  int64_t steps_per_epoch() const override { return train_.count() / batch_; }
  std::string describe() const override {
    return fmt::format("fashion_mnist: {} training images, {} test images, {} steps per epoch",
                       with_commas(train_.count()), with_commas(test_.count()), steps_per_epoch());
  }
  int64_t input_size() const override { return train_.rows * train_.cols; }

 private:
  static uint64_t hash(const ImageSet& set) {
    const uint64_t parts[] = {
        content_hash(set.images.data(), static_cast<std::size_t>(set.images.size()) * sizeof(float)),
        content_hash(set.labels.data(), set.labels.size() * sizeof(int32_t))};
    return content_hash(parts, sizeof parts);
  }
  static ImageSet first_of(ImageSet set, std::span<const int64_t> order, int64_t n, const char* section) {
    if (n == 0) return set;  // all of them, in order
    if (n > set.count()) fail("{}.num_examples: {} is more than the {} examples there are", section, n, set.count());
    return set.subset(order.first(static_cast<std::size_t>(n)));
  }
  static void fill(Batch& out, const ImageSet& set, std::span<const int64_t> idx) {
    const auto rows = static_cast<int64_t>(idx.size());
    const int64_t features = set.images.cols();
    out.rows = rows;
    out.seq = 1;
    out.first_row = 0;
    if (out.inputs.rows() != rows || out.inputs.cols() != features) out.inputs = Matrix(rows, features);
    out.targets.resize(idx.size());
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = idx[static_cast<std::size_t>(r)];
      std::copy_n(set.image(i), features, out.inputs.data() + r * features);
      out.targets[static_cast<std::size_t>(r)] = set.labels[static_cast<std::size_t>(i)];
    }
  }

  ImageSet train_, test_;
  int64_t batch_ = 0, eval_batch_size_ = 0, eval_batches_ = 0;
  std::vector<int64_t> order_;
  int64_t order_epoch_ = -1;
  uint64_t order_seed_ = 0;
};

}  // namespace

std::string with_commas(int64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

RowRange shard_rows(int64_t rows, int rank, int ranks) {
  const int64_t base = rows / ranks, extra = rows % ranks;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

void DataSource::shard(int rank, int ranks) {
  if (batch_size() < ranks)
    fail(
        "train_input.batch_size: a batch of {} cannot be split over {} ranks (every rank needs at least one "
        "row); use a batch_size of at least {} or fewer ranks",
        batch_size(), ranks, ranks);
  rank_ = rank;
  ranks_ = ranks;
}

std::unique_ptr<DataSource> make_data_source(const TrainConfig& config, int64_t model_context,
                                             const Tokenizer* tokenizer) {
  if (config.train_input.dataset == DatasetKind::FashionMnist) return std::make_unique<ImageSource>(config);
  if (tokenizer == nullptr) fail("{}: text data needs a tokenizer", config.file);
  return std::make_unique<TextSource>(config, model_context, *tokenizer);
}

}  // namespace sparsetrain
