#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "error_of.h"
#include "sparsetrain/data/fashion_mnist.h"
#include "sparsetrain/data/mlm_examples.h"
#include "sparsetrain/text/byte_tokenizer.h"
#include "sparsetrain/train/mlm_source.h"
#include "sparsetrain/train/text_documents.h"
#include "temp_dir.h"

namespace sparsetrain {
namespace {

using testing::error_of;

// A text file of 40 documents separated by blank lines, read with the byte tokenizer into rows of 64.
class MlmSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string text;
    for (int d = 0; d < 40; ++d) {
      for (int s = 0; s < 30; ++s) text += fmt::format("Document {} sentence {}{}.\n", d, s, std::string(s % 9, '!'));
      text += "\n";
    }
    path_ = dir_.write("corpus.txt", text).string();
  }

  TrainConfig config(uint64_t seed = 1) const {
    TrainConfig c;
    c.file = "cfg.yaml";
    c.train_input.dataset = DatasetKind::TextFile;
    c.train_input.path = path_;
    c.train_input.batch_size = 8;
    c.train_input.validation_fraction = 0.25;
    c.train_input.split_seed = 3;
    c.eval_input = c.train_input;
    c.eval_input.batch_size = 5;
    c.run.seed = seed;
    return c;
  }

  std::unique_ptr<DataSource> source(const TrainConfig& c, bool next_sentence = true) const {
    return make_mlm_data_source(c, 64, next_sentence, bytes_);
  }

  // The instances the source should hold, from the public pieces: [CLS] A [SEP] B [SEP] [PAD]...
  struct Expected {
    std::vector<std::vector<int32_t>> train, validation;
    std::vector<int32_t> train_labels;
  };
  Expected expected(const TrainConfig& c, bool next_sentence = true) const {
    const TextSplit split = load_text_split(c, BlankLines::Documents);
    MlmOptions o;
    o.seq = 64;
    o.next_sentence = next_sentence;
    const BertSpecialTokens special = bert_special_tokens(bytes_);
    const auto rows = [&](const std::vector<TextDocument>& docs, uint64_t seed, std::vector<int32_t>* labels) {
      const MlmDocuments m = tokenize_mlm_documents(docs, bytes_);
      std::vector<std::vector<int32_t>> out;
      for (const MlmInstance& in : make_mlm_instances(m, o, seed)) {
        std::vector<int32_t> row = {special.cls};
        row.insert(row.end(), m.tokens.begin() + in.a_begin, m.tokens.begin() + in.a_end);
        row.push_back(special.sep);
        if (next_sentence) {
          row.insert(row.end(), m.tokens.begin() + in.b_begin, m.tokens.begin() + in.b_end);
          row.push_back(special.sep);
        }
        row.resize(64, special.pad);
        out.push_back(row);
        if (labels != nullptr) labels->push_back(in.random_next);
      }
      return out;
    };
    Expected e;
    e.train = rows(split.train, c.run.seed, &e.train_labels);
    e.validation = rows(split.validation, c.train_input.split_seed, nullptr);
    return e;
  }

  // Row r of a batch as it was before masking.
  static std::vector<int32_t> original(const Batch& b, int64_t r) {
    std::vector<int32_t> row(b.ids.begin() + r * b.seq, b.ids.begin() + (r + 1) * b.seq);
    for (int64_t p = 0; p < b.seq; ++p)
      if (const int32_t t = b.targets[static_cast<std::size_t>(r * b.seq + p)]; t != kIgnoreTarget)
        row[static_cast<std::size_t>(p)] = t;
    return row;
  }

  static void expect_same(const Batch& x, const Batch& y) {
    EXPECT_EQ(x.rows, y.rows);
    EXPECT_EQ(x.ids, y.ids);
    EXPECT_EQ(x.token_types, y.token_types);
    EXPECT_EQ(x.targets, y.targets);
    EXPECT_EQ(x.lengths, y.lengths);
    EXPECT_EQ(x.nsp_labels, y.nsp_labels);
  }

  testing::TempDir dir_;
  std::string path_;
  ByteTokenizer bytes_{/*with_end_of_text=*/true};
};

TEST_F(MlmSourceTest, Describes) {
  const TrainConfig c = config();
  const Expected e = expected(c);
  const auto s = source(c);
  EXPECT_EQ(s->describe(),
            fmt::format("{}: {} training sequence pairs, {} validation, byte tokenizer with [PAD] [CLS] [SEP] [MASK] "
                        "appended, sequences of 64, up to 20 predictions each, next-sentence pairs",
                        path_, with_commas(static_cast<int64_t>(e.train.size())),
                        with_commas(static_cast<int64_t>(e.validation.size()))));
  EXPECT_EQ(s->input_size(), 261);
  EXPECT_EQ(s->batch_size(), 8);
  EXPECT_EQ(s->steps_per_epoch(), static_cast<int64_t>(e.train.size()) / 8);
  EXPECT_GT(s->steps_per_epoch(), 50);
}

// Step k of epoch e holds instances [k * batch, (k + 1) * batch) of the order
// shuffled_indices(n, seed, "train.epoch.<e>"), each masked.
TEST_F(MlmSourceTest, EpochsVisitTheShuffledInstances) {
  const TrainConfig c = config(5);
  const Expected e = expected(c);
  const auto s = source(c);
  const auto n = static_cast<int64_t>(e.train.size());
  const int64_t per_epoch = s->steps_per_epoch();
  Batch b;
  for (const int64_t step : {int64_t{1}, int64_t{2}, per_epoch, per_epoch + 1, 3 * per_epoch + 4}) {
    const int64_t epoch = (step - 1) / per_epoch, k = (step - 1) % per_epoch;
    const std::vector<int64_t> order = shuffled_indices(n, 5, fmt::format("train.epoch.{}", epoch));
    s->train_batch(5, step, b);
    ASSERT_EQ(b.rows, 8);
    ASSERT_EQ(b.seq, 64);
    EXPECT_EQ(b.first_row, 0);
    for (int64_t r = 0; r < 8; ++r) {
      const auto i = static_cast<std::size_t>(order[static_cast<std::size_t>(k * 8 + r)]);
      EXPECT_EQ(original(b, r), e.train[i]) << "step " << step << " row " << r;
      EXPECT_EQ(b.nsp_labels[static_cast<std::size_t>(r)], e.train_labels[i]);
      const auto length = std::find(e.train[i].begin() + 1, e.train[i].end(), 257) - e.train[i].begin();
      EXPECT_EQ(b.lengths[static_cast<std::size_t>(r)], length);
    }
    EXPECT_GE(b.predictions(), 8);
    EXPECT_LE(b.predictions(), 8 * 20);
  }
}

TEST_F(MlmSourceTest, BatchesDependOnSeedAndStep) {
  const auto s = source(config());
  Batch a, again, other_step, other_seed, back;
  s->train_batch(1, 5, a);
  source(config())->train_batch(1, 5, again);
  expect_same(a, again);
  s->train_batch(1, 6, other_step);
  EXPECT_NE(a.ids, other_step.ids);
  s->train_batch(2, 5, other_seed);  // another seed: other instances, order and masks
  EXPECT_NE(a.ids, other_seed.ids);
  s->train_batch(1, 5, back);
  expect_same(a, back);
}

TEST_F(MlmSourceTest, ShardedRowsAreThoseOfTheWholeBatch) {
  Batch whole;
  source(config())->train_batch(1, 3, whole);
  for (int rank = 0; rank < 3; ++rank) {
    const auto s = source(config());
    s->shard(rank, 3);
    Batch b;
    s->train_batch(1, 3, b);
    const RowRange rows = shard_rows(8, rank, 3);
    ASSERT_EQ(b.rows, rows.end - rows.begin);
    EXPECT_EQ(b.first_row, rows.begin);
    const auto slice = [&](const std::vector<int32_t>& v, int64_t width) {
      return std::vector<int32_t>(v.begin() + rows.begin * width, v.begin() + rows.end * width);
    };
    EXPECT_EQ(b.ids, slice(whole.ids, 64)) << "rank " << rank;
    EXPECT_EQ(b.token_types, slice(whole.token_types, 64));
    EXPECT_EQ(b.targets, slice(whole.targets, 64));
    EXPECT_EQ(b.lengths, slice(whole.lengths, 1));
    EXPECT_EQ(b.nsp_labels, slice(whole.nsp_labels, 1));
  }
}

TEST_F(MlmSourceTest, EvaluationIsTheSameForEveryRunSeed) {
  const Expected e = expected(config());
  const auto one = source(config(1)), two = source(config(2));
  const auto n = static_cast<int64_t>(e.validation.size());
  ASSERT_EQ(one->eval_batches(), (n + 4) / 5);
  int64_t row = 0;
  for (int64_t i = 0; i < one->eval_batches(); ++i) {
    Batch x, y;
    one->eval_batch(i, x);
    two->eval_batch(i, y);
    expect_same(x, y);
    EXPECT_EQ(x.rows, std::min<int64_t>(5, n - i * 5));
    EXPECT_GE(x.predictions(), x.rows);
    for (int64_t r = 0; r < x.rows; ++r, ++row) EXPECT_EQ(original(x, r), e.validation[static_cast<std::size_t>(row)]);
  }
  EXPECT_EQ(row, n);
  Batch x, y;
  one->train_batch(1, 1, x);
  two->train_batch(2, 1, y);
  EXPECT_NE(x.ids, y.ids);
  EXPECT_EQ(one->fingerprint(), source(config(1))->fingerprint());
  EXPECT_NE(one->fingerprint(), two->fingerprint());  // the training instances differ

  TrainConfig capped = config();
  capped.eval_input.eval_batches = 2;
  EXPECT_EQ(source(capped)->eval_batches(), 2);
}

TEST_F(MlmSourceTest, WithoutNextSentencePairs) {
  const TrainConfig c = config();
  const Expected e = expected(c, false);
  const auto s = source(c, false);
  EXPECT_EQ(s->describe(),
            fmt::format("{}: {} training sequences, {} validation, byte tokenizer with [PAD] [CLS] [SEP] [MASK] "
                        "appended, sequences of 64, up to 20 predictions each, no next-sentence task",
                        path_, with_commas(static_cast<int64_t>(e.train.size())),
                        with_commas(static_cast<int64_t>(e.validation.size()))));
  Batch b;
  s->train_batch(1, 1, b);
  EXPECT_TRUE(b.nsp_labels.empty());
  EXPECT_TRUE(std::all_of(b.token_types.begin(), b.token_types.end(), [](int32_t t) { return t == 0; }));
  const std::vector<int64_t> order = shuffled_indices(static_cast<int64_t>(e.train.size()), 1, "train.epoch.0");
  for (int64_t r = 0; r < b.rows; ++r) EXPECT_EQ(original(b, r), e.train[static_cast<std::size_t>(order[r])]);
}

TEST_F(MlmSourceTest, Errors) {
  TrainConfig c = config();
  c.train_input.sequence_length = 7;
  EXPECT_EQ(error_of([&] { source(c); }),
            "cfg.yaml: train_input.max_sequence_length: 7 tokens leave no room for [CLS], two sentences and their "
            "[SEP]s; expected at least 8");
  EXPECT_EQ(error_of([&] { make_mlm_data_source(config(), 6, true, bytes_); }),
            "cfg.yaml: model.max_position_embeddings: 6 tokens leave no room for [CLS], two sentences and their "
            "[SEP]s; expected at least 8");
  c.train_input.sequence_length = 65;
  EXPECT_EQ(error_of([&] { source(c); }),
            "cfg.yaml: train_input.max_sequence_length (65) is longer than the model's max_position_embeddings (64)");

  const Expected e = expected(config());
  c = config();
  c.train_input.batch_size = 100000;
  EXPECT_EQ(error_of([&] { source(c); }),
            fmt::format("cfg.yaml: {}: the training split makes {} sequence pairs, fewer than one batch of 100000 "
                        "(train_input.batch_size)",
                        path_, e.train.size()));
  c = config();
  c.eval_input.batch_size = 100000;
  EXPECT_EQ(error_of([&] { source(c); }),
            fmt::format("cfg.yaml: {}: the validation split makes {} sequence pairs, fewer than one batch of 100000 "
                        "(eval_input.batch_size)",
                        path_, e.validation.size()));
  c = config();
  c.train_input.path = dir_.write("tiny.txt", "one line\n").string();
  EXPECT_EQ(
      error_of([&] { source(c); }),
      "cfg.yaml: train_input.validation_fraction: " + c.train_input.path +
          ": cannot split 9 bytes at fraction 0.25: a part would be empty (the validation part starts at a line)");
  c = config();
  c.train_input.dataset = DatasetKind::FashionMnist;
  EXPECT_EQ(error_of([&] { source(c); }),
            "cfg.yaml: train_input.data: masked language modelling reads text (brown or text_file), not fashion_mnist");
}

// The whole Brown corpus, as a run would read it.
TEST(MlmSourceBrown, RowsOfTheWholeCorpus) {
  TrainConfig c;
  c.file = "cfg.yaml";
  c.train_input.batch_size = 32;
  c.eval_input = c.train_input;
  const ByteTokenizer bytes(true);
  const auto s = make_mlm_data_source(c, 128, true, bytes);
  EXPECT_GT(s->steps_per_epoch(), 1000);
  Batch b;
  s->train_batch(1, 1, b);
  int64_t random_next = 0;
  for (int64_t r = 0; r < b.rows; ++r) {
    EXPECT_EQ(b.ids[static_cast<std::size_t>(r * 128)], 258);  // [CLS]
    EXPECT_LE(b.lengths[static_cast<std::size_t>(r)], 128);
    EXPECT_GT(b.lengths[static_cast<std::size_t>(r)], 8);
    random_next += b.nsp_labels[static_cast<std::size_t>(r)];
  }
  EXPECT_GT(random_next, 0);
  EXPECT_LT(random_next, b.rows);
}

}  // namespace
}  // namespace sparsetrain
