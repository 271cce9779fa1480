// The BERT model: Hugging Face names and shapes, gradients of every parameter by finite
// differences (dense, dropout, sparse formats, with and without the next-sentence task), and the
// padding mask: padded positions change nothing a real token computes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "error_of.h"
#include "gradient_check.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/models/bert.h"
#include "sparsetrain/sparsity/algorithms.h"

namespace sparsetrain {
namespace {

using testing::check_gradients;
using testing::error_of;

// 2 layers, 2 heads, width 12, intermediate 20, 9 positions, vocabulary 13.
BertConfig tiny_bert() {
  BertConfig c;
  c.vocab_size = 13;
  c.hidden = 12;
  c.layers = 2;
  c.heads = 2;
  c.intermediate = 20;
  c.max_positions = 9;
  c.init_std = 0.3;  // large enough that every path carries a gradient well above float noise
  return c;
}

// Rows of `seq` tokens, row r with seq - r real ones (the rest padding, id 0), about a third of
// the real tokens masked (at least one per row), both token types, random next-sentence labels.
Batch mlm_batch(int64_t rows, int64_t seq, int32_t vocab) {
  Batch b;
  b.rows = rows;
  b.seq = seq;
  const Philox rng(9, "bert.tokens");
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t length = std::max<int64_t>(2, seq - r);
    b.lengths.push_back(static_cast<int32_t>(length));
    b.nsp_labels.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(1000 + r), 2)));
    for (int64_t t = 0; t < seq; ++t) {
      const auto i = static_cast<uint64_t>(r * seq + t);
      const bool real = t < length;
      b.ids.push_back(real ? static_cast<int32_t>(rng.below(3 * i, static_cast<uint64_t>(vocab))) : 0);
      b.token_types.push_back(real && 2 * t >= length ? 1 : 0);
      const bool masked = real && t > 0 && (t == 1 || rng.below(3 * i + 1, 3) == 0);
      b.targets.push_back(masked ? static_cast<int32_t>(rng.below(3 * i + 2, static_cast<uint64_t>(vocab)))
                                 : kIgnoreTarget);
    }
  }
  return b;
}

TEST(BertModel, NamesAndShapesFollowHuggingFaceBertForPreTraining) {
  Bert bert(tiny_bert());
  std::vector<std::string> names;
  for (Parameter* p : bert.parameters()) names.push_back(p->name());
  const std::vector<std::string> first = {"bert.embeddings.word_embeddings.weight",
                                          "bert.embeddings.position_embeddings.weight",
                                          "bert.embeddings.token_type_embeddings.weight",
                                          "bert.embeddings.LayerNorm.weight",
                                          "bert.embeddings.LayerNorm.bias",
                                          "bert.encoder.layer.0.attention.self.query.weight",
                                          "bert.encoder.layer.0.attention.self.query.bias",
                                          "bert.encoder.layer.0.attention.self.key.weight",
                                          "bert.encoder.layer.0.attention.self.key.bias",
                                          "bert.encoder.layer.0.attention.self.value.weight",
                                          "bert.encoder.layer.0.attention.self.value.bias",
                                          "bert.encoder.layer.0.attention.output.dense.weight",
                                          "bert.encoder.layer.0.attention.output.dense.bias",
                                          "bert.encoder.layer.0.attention.output.LayerNorm.weight",
                                          "bert.encoder.layer.0.attention.output.LayerNorm.bias",
                                          "bert.encoder.layer.0.intermediate.dense.weight",
                                          "bert.encoder.layer.0.intermediate.dense.bias",
                                          "bert.encoder.layer.0.output.dense.weight",
                                          "bert.encoder.layer.0.output.dense.bias",
                                          "bert.encoder.layer.0.output.LayerNorm.weight",
                                          "bert.encoder.layer.0.output.LayerNorm.bias"};
  ASSERT_GE(names.size(), first.size());
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(first.size())), first);
  const std::vector<std::string> last = {"bert.pooler.dense.weight",
                                         "bert.pooler.dense.bias",
                                         "cls.predictions.bias",  // a module's own parameters first, as torch
                                         "cls.predictions.transform.dense.weight",
                                         "cls.predictions.transform.dense.bias",
                                         "cls.predictions.transform.LayerNorm.weight",
                                         "cls.predictions.transform.LayerNorm.bias",
                                         "cls.seq_relationship.weight",
                                         "cls.seq_relationship.bias"};
  EXPECT_EQ(std::vector<std::string>(names.end() - static_cast<std::ptrdiff_t>(last.size()), names.end()), last);
  EXPECT_EQ(names.size(), 5u + 2u * 16u + last.size());
  EXPECT_EQ(bert.parameter("bert.encoder.layer.1.intermediate.dense.weight").shape(), (Shape{20, 12}));
  EXPECT_EQ(bert.parameter("bert.encoder.layer.1.output.dense.weight").shape(), (Shape{12, 20}));
  EXPECT_EQ(bert.parameter("cls.seq_relationship.weight").shape(), (Shape{2, 12}));
  EXPECT_EQ(bert.parameter("cls.predictions.bias").shape(), (Shape{13}));
  EXPECT_EQ(bert.type(), "BertForPreTraining");

  BertConfig mlm_only = tiny_bert();
  mlm_only.next_sentence = false;
  Bert masked_lm(mlm_only);
  EXPECT_EQ(masked_lm.type(), "BertForMaskedLM");
  for (Parameter* p : masked_lm.parameters()) {
    EXPECT_EQ(p->name().find("pooler"), std::string::npos) << p->name();
    EXPECT_EQ(p->name().find("seq_relationship"), std::string::npos) << p->name();
  }
}

TEST(BertGradients, DenseMatchFiniteDifferences) {
  Bert bert(tiny_bert());
  bert.init_weights(1);
  check_gradients(bert, mlm_batch(3, 7, 13), 6, 2e-2);
}

TEST(BertGradients, WithDropoutMatchFiniteDifferences) {
  BertConfig c = tiny_bert();
  c.hidden_dropout = 0.2f;
  c.attention_dropout = 0.3f;
  Bert bert(c);
  bert.init_weights(2);
  check_gradients(bert, mlm_batch(2, 6, 13), 5, 2e-2);
}

// Each dropout really drops: a training forward differs from evaluation and from the next step's,
// and repeats itself exactly for the same (seed, step).
TEST(BertModel, DropoutDependsOnSeedAndStepOnly) {
  for (const bool attention : {false, true}) {
    SCOPED_TRACE(attention ? "attention_probs_dropout_prob" : "hidden_dropout_prob");
    BertConfig c = tiny_bert();
    (attention ? c.attention_dropout : c.hidden_dropout) = 0.5f;
    Bert bert(c);
    bert.init_weights(7);
    const Batch batch = mlm_batch(2, 8, 13);
    const double eval = bert.forward(batch, false, 1, 1).loss;
    const double step1 = bert.forward(batch, true, 1, 1).loss;
    EXPECT_NE(step1, eval);
    EXPECT_NE(bert.forward(batch, true, 1, 2).loss, step1);
    EXPECT_EQ(bert.forward(batch, true, 1, 1).loss, step1);
  }
}

TEST(BertGradients, WithoutNextSentenceMatchFiniteDifferences) {
  BertConfig c = tiny_bert();
  c.next_sentence = false;
  c.act = Activation::Gelu;  // hidden_act: gelu_new
  Bert bert(c);
  bert.init_weights(3);
  Batch batch = mlm_batch(2, 9, 13);
  batch.nsp_labels.clear();
  check_gradients(bert, batch, 5, 2e-2);
}

TEST(BertGradients, SparseEncoderFormatsMatchFiniteDifferences) {
  for (const FormatSpec& format : {FormatSpec::csr(), FormatSpec::bcsr(4), FormatSpec::nm(2, 4)}) {
    SCOPED_TRACE(format.name());
    Bert bert(tiny_bert());
    bert.init_weights(4);
    SparsityOptions o;
    o.format = format;
    o.filter = ParamFilter::globs({"bert.encoder.*.weight"});
    Static(0.5, o).apply(bert);
    EXPECT_EQ(bert.parameter("bert.encoder.layer.0.attention.self.key.weight").storage(), Storage::Compressed);
    EXPECT_EQ(bert.parameter("bert.pooler.dense.weight").storage(), Storage::Dense);
    check_gradients(bert, mlm_batch(2, 8, 13), 5, 2e-2);
  }
}

// What a padded position holds reaches no real token: neither the masked tokens' loss nor the
// next-sentence loss changes when the padding's ids and token types change.
TEST(BertModel, PaddingChangesNothing) {
  Bert bert(tiny_bert());
  bert.init_weights(5);
  const Batch batch = mlm_batch(3, 8, 13);
  const LossResult base = bert.forward(batch, false, 0, 0);
  Batch other = mlm_batch(3, 8, 13);
  for (int64_t r = 0; r < batch.rows; ++r)
    for (int64_t t = batch.lengths[static_cast<std::size_t>(r)]; t < batch.seq; ++t) {
      other.ids[static_cast<std::size_t>(r * batch.seq + t)] = 7;
      other.token_types[static_cast<std::size_t>(r * batch.seq + t)] = 1;
    }
  const LossResult padded = bert.forward(other, false, 0, 0);
  EXPECT_EQ(padded.loss, base.loss);
  EXPECT_EQ(padded.nsp_loss, base.nsp_loss);
  // ... while a real token's id does change it (the comparison above can fail).
  other.ids[1] = (other.ids[1] + 1) % 13;
  EXPECT_NE(bert.forward(other, false, 0, 0).loss, base.loss);
}

TEST(BertModel, RefusesBatchesThatDoNotFit) {
  Bert bert(tiny_bert());
  bert.init_weights(6);
  Batch batch = mlm_batch(2, 5, 13);
  batch.lengths.pop_back();
  EXPECT_NE(error_of([&] { bert.forward(batch, false, 0, 0); }).find("2 rows"), std::string::npos);
  batch = mlm_batch(2, 5, 13);
  batch.token_types[3] = 2;
  EXPECT_NE(error_of([&] { bert.forward(batch, false, 0, 0); }).find("type_vocab_size"), std::string::npos);
  batch = mlm_batch(2, 5, 13);
  std::fill(batch.targets.begin(), batch.targets.end(), kIgnoreTarget);
  EXPECT_NE(error_of([&] { bert.forward(batch, false, 0, 0); }).find("masks no token"), std::string::npos);
  EXPECT_NE(error_of([&] { bert.forward(mlm_batch(1, 10, 13), false, 0, 0); }).find("max_position_embeddings"),
            std::string::npos);
  EXPECT_NE(error_of([&] { bert.backward(); }).find("without a training forward"), std::string::npos);
}

}  // namespace
}  // namespace sparsetrain
