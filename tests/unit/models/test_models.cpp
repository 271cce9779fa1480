// Whole-model gradients by central finite differences: a tiny GPT and MLP, dense and with sparse
// (compressed and masked-dense) parameters, every parameter tensor probed. The models run in
// float32; the loss is perturbed by +-h and compared with the analytic gradient.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "error_of.h"
#include "gradient_check.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/models/gpt.h"
#include "sparsetrain/models/linear.h"
#include "sparsetrain/models/mlp.h"
#include "sparsetrain/models/sparse_init.h"
#include "sparsetrain/sparsity/algorithms.h"
#include "tiny_gpt.h"

namespace sparsetrain {
namespace {

using testing::check_gradients;
using testing::error_of;

Batch token_batch(int64_t rows, int64_t seq, int32_t vocab) {
  Batch b;
  b.rows = rows;
  b.seq = seq;
  const Philox rng(9, "tokens");
  for (int64_t i = 0; i < rows * seq; ++i) {
    b.ids.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(2 * i), static_cast<uint64_t>(vocab))));
    b.targets.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(2 * i + 1), static_cast<uint64_t>(vocab))));
  }
  return b;
}

TEST(GptGradients, DenseMatchFiniteDifferences) {
  Gpt gpt(tiny_gpt());
  gpt.init_weights(1);
  check_gradients(gpt, token_batch(2, 5, 13), 6, 2e-2);
}

TEST(GptGradients, CompressedAndMaskedDenseMatchFiniteDifferences) {
  Gpt gpt(tiny_gpt());
  gpt.init_weights(2);
  SparsityOptions compressed;
  compressed.format = FormatSpec::csr();
  compressed.filter = ParamFilter::globs({"*.attn.*.weight", "*.mlp.c_fc.weight"});
  Static(0.6, compressed).apply(gpt);
  SparsityOptions masked;  // the remaining projections and the token embedding, masked-dense
  masked.filter = ParamFilter::globs({"*.mlp.c_proj.weight", "transformer.wte.weight"});
  Static(0.5, masked).apply(gpt);
  EXPECT_EQ(gpt.parameter("transformer.h.0.attn.c_attn.weight").storage(), Storage::Compressed);
  EXPECT_EQ(gpt.parameter("transformer.h.1.mlp.c_proj.weight").storage(), Storage::MaskedDense);
  check_gradients(gpt, token_batch(2, 7, 13), 6, 2e-2);
}

TEST(GptGradients, BlockAndNmFormatsMatchFiniteDifferences) {
  for (const FormatSpec& format : {FormatSpec::bcsr(4), FormatSpec::nm(2, 4)}) {
    SCOPED_TRACE(format.name());
    Gpt gpt(tiny_gpt());
    gpt.init_weights(4);
    SparsityOptions o;
    o.format = format;
    Static(0.5, o).apply(gpt);
    EXPECT_EQ(gpt.parameter("transformer.h.0.mlp.c_fc.weight").storage(), Storage::Compressed);
    check_gradients(gpt, token_batch(2, 7, 13), 5, 2e-2);
  }
}

// c_fc's output and c_proj's input pass through GELU inside the packing (Linear::backward_through,
// forward_activated), so c_proj's dense gradient needs its unwritten input made first.
class GptDenseGrad : public ::testing::TestWithParam<std::string> {};

TEST_P(GptDenseGrad, RequestFillsTheFullWeightGradient) {
  Gpt gpt(tiny_gpt());
  gpt.init_weights(3);
  SparsityOptions o;
  o.format = FormatSpec::csr();
  Static(0.7, o).apply(gpt);
  Parameter& w = gpt.parameter(GetParam());
  w.wants_dense_grad = true;
  const Batch b = token_batch(2, 6, 13);
  gpt.forward(b, true, 0, 1);
  gpt.backward();
  ASSERT_EQ(w.dense_grad.rows(), w.rows());
  // At kept positions the dense gradient is the sparse one; elsewhere it is generally nonzero.
  const Mask mask = w.mask();
  const Matrix sparse_grad = [&] {
    Matrix g(w.rows(), w.cols(), 0.0f);
    int64_t k = 0;
    for (int64_t r = 0; r < w.rows(); ++r)
      for (int64_t c = 0; c < w.cols(); ++c)
        if (mask.at(r, c)) g.at(r, c) = w.grad()[static_cast<std::size_t>(k++)];
    return g;
  }();
  int64_t pruned_nonzero = 0;
  for (int64_t r = 0; r < w.rows(); ++r)
    for (int64_t c = 0; c < w.cols(); ++c) {
      if (mask.at(r, c))
        EXPECT_NEAR(w.dense_grad.at(r, c), sparse_grad.at(r, c), 1e-5f);
      else
        pruned_nonzero += w.dense_grad.at(r, c) != 0.0f;
    }
  EXPECT_GT(pruned_nonzero, w.numel() / 2);
}

INSTANTIATE_TEST_SUITE_P(Layers, GptDenseGrad,
                         ::testing::Values("transformer.h.1.mlp.c_fc.weight", "transformer.h.1.mlp.c_proj.weight",
                                         "transformer.h.0.attn.c_attn.weight"));

// A Linear whose input (forward_activated) or output gradient (backward_through) passes through an
// activation gives the bits of the unfused passes, for both storages, with and without the dense
// gradient RigL asks for.
struct FusedCase {
  Activation act;
  bool compressed;
  bool dense_grad;
};

class LinearFusedActivation : public ::testing::TestWithParam<FusedCase> {};

std::unique_ptr<Linear> fused_case_linear(const FusedCase& c, int64_t in, int64_t out) {
  auto lin = std::make_unique<Linear>(in, out);
  for (Parameter* p : lin->parameters()) {
    const Philox rng(11, p->name());
    auto v = p->values();
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = rng.uniform(i) - 0.5f;
  }
  if (c.compressed) {
    SparsityOptions o;
    o.format = FormatSpec::csr();
    o.filter = ParamFilter::globs({"weight"});
    Static(0.6, o).apply(*lin);
  }
  for (Parameter* p : lin->parameters()) p->zero_grad();
  lin->weight().wants_dense_grad = c.dense_grad;
  return lin;
}

Matrix uniform_matrix(int64_t rows, int64_t cols, float scale, const char* stream) {
  Matrix m(rows, cols);
  const Philox rng(12, stream);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = scale * (rng.uniform(static_cast<uint64_t>(i)) - 0.5f);
  return m;
}

void expect_same_gradients(Linear& a, Linear& b) {
  const auto pa = a.parameters(), pb = b.parameters();
  for (std::size_t p = 0; p < pa.size(); ++p) {
    auto g0 = pa[p]->grad(), g1 = pb[p]->grad();
    for (std::size_t i = 0; i < g0.size(); ++i) ASSERT_EQ(g1[i], g0[i]) << pa[p]->name() << " " << i;
  }
  const Matrix &d0 = a.weight().dense_grad, &d1 = b.weight().dense_grad;
  ASSERT_EQ(d0.size(), d1.size());
  for (int64_t i = 0; i < d0.size(); ++i) ASSERT_EQ(d1.data()[i], d0.data()[i]) << "dense gradient " << i;
}

TEST_P(LinearFusedActivation, GivesTheBitsOfTheUnfusedPasses) {
  const FusedCase c = GetParam();
  const int64_t tokens = 70, in = 37, out = 21;  // a partial tile, odd widths
  const Matrix pre = uniform_matrix(tokens, in, 6.0f, "pre");
  const Matrix dy = uniform_matrix(tokens, out, 1.0f, "dy");
  Matrix post(tokens, in);
  activation_forward(c.act, pre.data(), post.data(), pre.size());

  // forward_activated: y = lin(act(pre)), then backward from dy.
  auto plain = fused_case_linear(c, in, out), fused = fused_case_linear(c, in, out);
  Matrix y_plain(tokens, out), y_fused(tokens, out), dx_plain(tokens, in), dx_fused(tokens, in);
  Matrix post_fused(tokens, in, std::numeric_limits<float>::quiet_NaN());
  plain->forward(post, y_plain);
  plain->backward(dy, dx_plain);
  fused->forward_activated(c.act, pre, post_fused, y_fused);
  fused->backward(dy, dx_fused);
  for (int64_t i = 0; i < y_plain.size(); ++i) ASSERT_EQ(y_fused.data()[i], y_plain.data()[i]) << "y " << i;
  for (int64_t i = 0; i < dx_plain.size(); ++i) ASSERT_EQ(dx_fused.data()[i], dx_plain.data()[i]) << "dx " << i;
  expect_same_gradients(*plain, *fused);

  // backward_through: a layer out -> in whose output y = pre went through post = act(pre).
  const Matrix x = uniform_matrix(tokens, out, 1.0f, "x");
  const Matrix dpost = uniform_matrix(tokens, in, 1.0f, "dpost");
  auto before_plain = fused_case_linear(c, out, in), before_fused = fused_case_linear(c, out, in);
  Matrix unused(tokens, in), dy_plain = dpost.clone(), dpost_fused = dpost.clone();
  Matrix dxb_plain(tokens, out), dxb_fused(tokens, out);
  before_plain->forward(x, unused);
  before_fused->forward(x, unused);
  activation_backward(c.act, pre.data(), post.data(), dy_plain.data(), dy_plain.data(), dy_plain.size());
  before_plain->backward(dy_plain, dxb_plain);
  before_fused->backward_through(c.act, pre, post, dpost_fused, dxb_fused);
  for (int64_t i = 0; i < dxb_plain.size(); ++i) ASSERT_EQ(dxb_fused.data()[i], dxb_plain.data()[i]) << "dx " << i;
  expect_same_gradients(*before_plain, *before_fused);
}

INSTANTIATE_TEST_SUITE_P(Cases, LinearFusedActivation,
                         ::testing::Values(FusedCase{Activation::Gelu, true, false}, FusedCase{Activation::Gelu, true, true},
                                           FusedCase{Activation::ReLU, true, false},
                                           FusedCase{Activation::Sigmoid, true, false},
                                           FusedCase{Activation::Gelu, false, false},
                                           FusedCase{Activation::Tanh, false, true}),
                         [](const ::testing::TestParamInfo<FusedCase>& param_info) {
                           const FusedCase& c = param_info.param;
                           return fmt::format("{}_{}{}", activation_name(c.act), c.compressed ? "csr" : "dense",
                                              c.dense_grad ? "_dense_grad" : "");
                         });

// forward_same_input (attention's key and value reading the input query packed, or rounded to
// bf16 for dense weights) gives the bits of a plain forward and backward: output, input gradient
// and parameter gradients, in both precisions, with the output and its gradient as strided views
// (columns of a wider matrix, as BERT's qkv). Where the input cannot be shared (a dense fp32
// layer, a source of the other storage, a source whose last forward read another input or went
// through forward_activated) it falls back to forward().
TEST(LinearSharedInput, GivesTheBitsOfAPlainForward) {
  const int64_t tokens = 70, in = 37, out = 21;
  const Matrix x = uniform_matrix(tokens, in, 1.0f, "x");
  const Matrix other = uniform_matrix(tokens, in, 1.0f, "other");
  const Matrix wide_dy = uniform_matrix(tokens, 3 * out, 1.0f, "dy");
  const ConstMatrixView dy{wide_dy.data() + out, tokens, out, 3 * out};
  for (const Precision precision : {Precision::Fp32, Precision::Bf16})
    for (const char* source_case : {"same", "other_input", "activated"})
      for (const bool compressed : {true, false})
        for (const bool source_compressed : {true, false}) {
          SCOPED_TRACE(fmt::format("{} {} {} from {}", precision == Precision::Bf16 ? "bf16" : "fp32", source_case,
                                   compressed ? "csr" : "dense", source_compressed ? "csr" : "dense"));
          auto source = fused_case_linear(FusedCase{Activation::None, source_compressed, false}, in, out);
          auto plain = fused_case_linear(FusedCase{Activation::None, compressed, false}, in, out);
          auto shared = fused_case_linear(FusedCase{Activation::None, compressed, false}, in, out);
          for (Linear* l : {source.get(), plain.get(), shared.get()}) l->set_precision(precision);
          Matrix y_source(tokens, out), post(tokens, in);
          if (std::string(source_case) == "same") source->forward(x, y_source);
          if (std::string(source_case) == "other_input") source->forward(other, y_source);
          if (std::string(source_case) == "activated") source->forward_activated(Activation::ReLU, x, post, y_source);

          Matrix wide_plain(tokens, 3 * out, 7.0f), wide_shared(tokens, 3 * out, 7.0f);
          plain->forward(x, MatrixView{wide_plain.data() + out, tokens, out, 3 * out});
          shared->forward_same_input(*source, x, MatrixView{wide_shared.data() + out, tokens, out, 3 * out});
          for (int64_t i = 0; i < wide_plain.size(); ++i)
            ASSERT_EQ(wide_shared.data()[i], wide_plain.data()[i]) << "y (with the untouched columns) " << i;
          Matrix dx_plain(tokens, in), dx_shared(tokens, in);
          plain->backward(dy, dx_plain);
          shared->backward(dy, dx_shared);
          for (int64_t i = 0; i < dx_plain.size(); ++i)
            ASSERT_EQ(dx_shared.data()[i], dx_plain.data()[i]) << "dx " << i;
          expect_same_gradients(*plain, *shared);
        }
}

TEST(GptGradients, NamesFollowHuggingFaceGpt2) {
  Gpt gpt(tiny_gpt());
  std::vector<std::string> names;
  for (Parameter* p : gpt.parameters()) names.push_back(p->name());
  EXPECT_EQ(names.front(), "transformer.wte.weight");
  EXPECT_EQ(names[1], "transformer.wpe.weight");
  EXPECT_EQ(names[2], "transformer.h.0.ln_1.weight");
  EXPECT_EQ(names[4], "transformer.h.0.attn.c_attn.weight");
  EXPECT_EQ(names.back(), "transformer.ln_f.bias");
  EXPECT_EQ(gpt.parameter("transformer.h.1.mlp.c_proj.weight").shape(), (Shape{12, 48}));
  EXPECT_EQ(names.size(), 2u + 2u * 12u + 2u);
}

Batch image_batch(int64_t rows, int64_t features, int32_t classes) {
  Batch b;
  b.rows = rows;
  b.inputs = Matrix(rows, features);
  const Philox rng(4, "images");
  for (int64_t i = 0; i < b.inputs.size(); ++i) b.inputs.data()[i] = rng.uniform(static_cast<uint64_t>(i));
  for (int64_t r = 0; r < rows; ++r)
    b.targets.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(1000 + r), static_cast<uint64_t>(classes))));
  return b;
}

struct MlpCase {
  Activation hidden;
  Activation output;
  MlpLoss loss;
  double dropout;
  bool sparse;
  bool inverted_dropout = true;
};

class MlpGradients : public ::testing::TestWithParam<MlpCase> {};

TEST_P(MlpGradients, MatchFiniteDifferences) {
  const MlpCase& c = GetParam();
  MlpConfig config;
  config.inputs = 9;
  config.hidden = {11, 7};
  config.classes = 5;
  config.activation = c.hidden;
  config.output_activation = c.output;
  config.loss = c.loss;
  config.dropout = c.dropout;
  config.inverted_dropout = c.inverted_dropout;
  Mlp mlp(config);
  mlp.init_weights(7);
  if (c.sparse) {
    SparsityOptions o;
    o.format = FormatSpec::csr();
    Static(0.5, o).apply(mlp);
  }
  check_gradients(mlp, image_batch(6, 9, 5), 8, 2e-2);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MlpGradients,
    ::testing::Values(MlpCase{Activation::ReLU, Activation::None, MlpLoss::CrossEntropy, 0.0, false},
                      MlpCase{Activation::Tanh, Activation::None, MlpLoss::CrossEntropy, 0.3, true},
                      MlpCase{Activation::Gelu, Activation::Sigmoid, MlpLoss::Mse, 0.0, true},
                      MlpCase{Activation::Sigmoid, Activation::Sigmoid, MlpLoss::Mse, 0.2, false},
                      MlpCase{Activation::ReLU, Activation::None, MlpLoss::CrossEntropy, 0.4, true, false}));

// Dropout that is not inverted: evaluation multiplies the pre-activation of every layer after the
// first, bias included, by 1 - p (the SET reference code), so with one hidden layer and no output
// activation the logits are (1 - p) times those of the inverted model, bias and all.
TEST(MlpDropout, NotInvertedScalesLaterPreActivationsAtEvaluation) {
  MlpConfig config;
  config.inputs = 9;
  config.hidden = {13};
  config.classes = 4;
  config.dropout = 0.25;
  Mlp inverted(config);
  config.inverted_dropout = false;
  Mlp scaled(config);
  inverted.init_weights(3);
  scaled.init_weights(3);
  const Batch batch = image_batch(5, 9, 4);
  inverted.forward(batch, false, 0, 0);
  scaled.forward(batch, false, 0, 0);
  const std::vector<float> bias(scaled.parameters()[3]->values().begin(), scaled.parameters()[3]->values().end());
  double largest = 0.0, largest_bias = 0.0;
  for (float b : bias) largest_bias = std::max(largest_bias, std::abs(static_cast<double>(b)));
  ASSERT_GT(largest_bias, 0.01) << "an unscaled bias would pass unnoticed";
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 4; ++c) {
      const double want = 0.75 * inverted.outputs().at(r, c);
      EXPECT_NEAR(scaled.outputs().at(r, c), want, 1e-5) << r << " " << c;
      largest = std::max(largest, std::abs(want));
    }
  EXPECT_GT(largest, 0.01);
  // With two hidden layers only the layers after the first scale (no dropout precedes the input).
  config.hidden = {13, 7};
  Mlp deep_scaled(config);
  config.inverted_dropout = true;
  Mlp deep_inverted(config);
  deep_scaled.init_weights(3);
  deep_inverted.init_weights(3);
  deep_scaled.forward(batch, false, 0, 0);
  deep_inverted.forward(batch, false, 0, 0);
  // z2' = 0.75 z2, so ReLU(z2') = 0.75 ReLU(z2), and the logits are 0.75 (0.75 ReLU(z2) W3 + b3)
  // where the inverted model's are ReLU(z2) W3 + b3.
  const Parameter& b3 = *deep_scaled.parameters()[5];
  ASSERT_EQ(b3.numel(), 4);
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 4; ++c) {
      const double b = b3.values()[static_cast<std::size_t>(c)];
      const double want = 0.75 * (0.75 * (deep_inverted.outputs().at(r, c) - b) + b);
      EXPECT_NEAR(deep_scaled.outputs().at(r, c), want, 1e-5) << r << " " << c;
    }
}

// An MLP 13 -> 9 -> 4 with weights drawn from seed 3, its first weight stored csr at level 0.7 (35
// of 117 kept) and its second masked-dense at 0.5 (18 of 36 kept).
std::unique_ptr<Mlp> mixed_storage_mlp() {
  MlpConfig config;
  config.inputs = 13;
  config.hidden = {9};
  config.classes = 4;
  auto mlp = std::make_unique<Mlp>(config);
  mlp->init_weights(3);
  SparsityOptions compressed;
  compressed.format = FormatSpec::csr();
  compressed.filter = ParamFilter::globs({"layers.0.weight"});
  Static(0.7, compressed).apply(*mlp);
  SparsityOptions masked;
  masked.filter = ParamFilter::globs({"layers.1.weight"});
  Static(0.5, masked).apply(*mlp);
  return mlp;
}

TEST(TrainingFlops, ActualCountsWhatTheKernelsExecuteSoMaskedDenseCountsDense) {
  const std::unique_ptr<Mlp> mlp = mixed_storage_mlp();
  ASSERT_EQ(mlp->parameters()[0]->kept(), 35);
  ASSERT_EQ(mlp->parameters()[2]->kept(), 18);  // in a dense GEMM
  const Flops f = mlp->training_flops(8, 1);
  // 6 FLOPs per multiply-add and token (forward, backward-data, backward-weights).
  EXPECT_EQ(f.dense, 6.0 * 8 * (117 + 36));
  EXPECT_EQ(f.actual, 6.0 * 8 * (35 + 36));
}

// Scaled sparse initialization: each row's kept weights times sqrt(cols / kept in the row),
// compressed and masked-dense alike; dense parameters, biases and pruned slots untouched.
TEST(SparseInit, ScaledMultipliesEachRowByItsFanInRatio) {
  const std::unique_ptr<Mlp> holder = mixed_storage_mlp();
  Mlp& mlp = *holder;
  std::vector<Matrix> before;
  for (Parameter* p : mlp.parameters()) before.push_back(p->to_dense());

  apply_sparse_init(mlp, SparseInit::Dense);
  for (std::size_t i = 0; i < before.size(); ++i) {
    const Matrix after = mlp.parameters()[i]->to_dense();
    for (int64_t k = 0; k < after.size(); ++k) ASSERT_EQ(after.data()[k], before[i].data()[k]);
  }

  apply_sparse_init(mlp, SparseInit::Scaled);
  int64_t scaled_rows = 0;
  for (std::size_t i = 0; i < before.size(); ++i) {
    const Parameter& p = *mlp.parameters()[i];
    const Matrix after = p.to_dense();
    const Mask mask = p.mask();
    for (int64_t r = 0; r < after.rows(); ++r) {
      int64_t kept = 0;
      for (int64_t c = 0; c < after.cols(); ++c) kept += mask.at(r, c) ? 1 : 0;
      const bool scaled = p.is_sparse() && p.shape().size() == 2 && kept > 0;
      const double factor = scaled ? std::sqrt(static_cast<double>(after.cols()) / static_cast<double>(kept)) : 1.0;
      if (scaled && kept < after.cols()) ++scaled_rows;
      for (int64_t c = 0; c < after.cols(); ++c) {
        const double want = mask.at(r, c) ? before[i].at(r, c) * factor : 0.0;
        ASSERT_NEAR(after.at(r, c), want, 1e-6 * std::fabs(want)) << p.name() << " [" << r << ", " << c << "]";
      }
    }
  }
  EXPECT_GE(scaled_rows, 9);  // every row of both sparse weights lost connections
  EXPECT_EQ(parse_sparse_init("scaled", "x"), SparseInit::Scaled);
  EXPECT_THROW(parse_sparse_init("he", "model.sparse_init"), Error);
}

TEST(MlpConfig, RefusesContradictions) {
  MlpConfig c;
  c.output_activation = Activation::Sigmoid;  // with cross-entropy
  EXPECT_THROW(Mlp{c}, Error);
  c = MlpConfig{};
  c.dropout = 1.0;
  EXPECT_THROW(Mlp{c}, Error);
  c = MlpConfig{};
  c.loss = MlpLoss::SetMse;  // without a sigmoid output
  EXPECT_NE(error_of([&] { Mlp{c}; }).find("set_mse loss needs 'output_activation' sigmoid"), std::string::npos);
  c.output_activation = Activation::Sigmoid;
  c.init_std = -0.1;
  EXPECT_NE(error_of([&] { Mlp{c}; }).find("'initializer_range'"), std::string::npos);
}

// set_mse: the output layer's gradients follow the SET reference code's delta
// (out - onehot) / rows * s(out) * (1 - s(out)), computed here in float64 from the weights.
TEST(MlpSetMse, OutputLayerGradientsFollowTheReferenceDelta) {
  MlpConfig config;
  config.inputs = 9;
  config.hidden = {11};
  config.classes = 5;
  config.output_activation = Activation::Sigmoid;
  config.loss = MlpLoss::SetMse;
  Mlp mlp(config);
  mlp.init_weights(5);
  const Batch batch = image_batch(7, 9, 5);
  for (Parameter* q : mlp.parameters()) q->zero_grad();
  const double loss = mlp.forward(batch, true, 0, 1).loss;
  mlp.backward();

  const std::vector<Parameter*> p = mlp.parameters();  // layers.0.weight, .bias, layers.1.weight, .bias
  const Matrix w0 = p[0]->to_dense(), b0 = p[1]->to_dense(), w1 = p[2]->to_dense(), b1 = p[3]->to_dense();
  std::vector<double> want_w1(5 * 11, 0.0), want_b1(5, 0.0);
  double want_loss = 0.0;
  for (int64_t r = 0; r < 7; ++r) {
    std::vector<double> h(11);
    for (int64_t j = 0; j < 11; ++j) {
      double a = b0.data()[j];
      for (int64_t k = 0; k < 9; ++k) a += static_cast<double>(w0.at(j, k)) * batch.inputs.at(r, k);
      h[static_cast<std::size_t>(j)] = std::max(a, 0.0);
    }
    for (int64_t c = 0; c < 5; ++c) {
      double z = b1.data()[c];
      for (int64_t j = 0; j < 11; ++j) z += static_cast<double>(w1.at(c, j)) * h[static_cast<std::size_t>(j)];
      const double out = 1.0 / (1.0 + std::exp(-z));
      const double diff = out - (batch.targets[static_cast<std::size_t>(r)] == c ? 1.0 : 0.0);
      const double s = 1.0 / (1.0 + std::exp(-out));
      const double delta = diff / 7.0 * s * (1.0 - s);
      want_loss += diff * diff / 35.0;
      want_b1[static_cast<std::size_t>(c)] += delta;
      for (int64_t j = 0; j < 11; ++j) want_w1[static_cast<std::size_t>(c * 11 + j)] += delta * h[static_cast<std::size_t>(j)];
    }
  }
  EXPECT_NEAR(loss, want_loss, 1e-5 * want_loss);
  for (std::size_t i = 0; i < want_b1.size(); ++i) EXPECT_NEAR(p[3]->grad()[i], want_b1[i], 1e-6) << "bias " << i;
  for (std::size_t i = 0; i < want_w1.size(); ++i) EXPECT_NEAR(p[2]->grad()[i], want_w1[i], 1e-6) << "weight " << i;
  double first_layer = 0.0;
  for (float g : p[0]->grad()) first_layer += std::abs(g);
  EXPECT_GT(first_layer, 0.0) << "the delta reaches the first layer";
}

// dropout_masks_gradient: false backpropagates through dropout as the identity (the SET reference
// code), true through the keep mask. Both models' gradients against a float64 computation from the
// weights and the keep decisions the model's dropout stream makes (dropout.h).
TEST(MlpDropout, GradientThroughDroppedUnitsOnlyWhenUnmasked) {
  MlpConfig config;
  config.inputs = 9;
  config.hidden = {11};
  config.classes = 5;
  config.dropout = 0.5;
  config.inverted_dropout = false;
  const Batch batch = image_batch(7, 9, 5);
  for (const bool masks_gradient : {true, false}) {
    SCOPED_TRACE(masks_gradient ? "masked" : "unmasked");
    config.dropout_masks_gradient = masks_gradient;
    Mlp mlp(config);
    mlp.init_weights(5);
    for (Parameter* q : mlp.parameters()) q->zero_grad();
    mlp.forward(batch, true, /*seed=*/3, /*step=*/2);
    mlp.backward();

    const std::vector<Parameter*> p = mlp.parameters();  // layers.0.weight, .bias, layers.1.weight, .bias
    const Matrix w0 = p[0]->to_dense(), b0 = p[1]->to_dense(), w1 = p[2]->to_dense(), b1 = p[3]->to_dense();
    const Philox stream(3, p[0]->name() + ".dropout", 2);
    std::vector<double> want_w0(11 * 9, 0.0), want_b0(11, 0.0), want_w1(5 * 11, 0.0);
    double through_dropped = 0.0;  // gradient that reaches dropped units: what the flag decides
    for (int64_t r = 0; r < 7; ++r) {
      std::vector<double> z(11), kept(11);
      std::vector<bool> keep(11);
      for (int64_t j = 0; j < 11; ++j) {
        double a = b0.data()[j];
        for (int64_t k = 0; k < 9; ++k) a += static_cast<double>(w0.at(j, k)) * batch.inputs.at(r, k);
        z[static_cast<std::size_t>(j)] = a;
        keep[static_cast<std::size_t>(j)] = stream.uniform(static_cast<uint64_t>(r * 11 + j)) >= 0.5f;
        kept[static_cast<std::size_t>(j)] = keep[static_cast<std::size_t>(j)] ? std::max(a, 0.0) : 0.0;
      }
      std::vector<double> logit(5), dlogit(5);
      double largest = -1e300, total = 0.0;
      for (int64_t c = 0; c < 5; ++c) {
        double v = b1.data()[c];
        for (int64_t j = 0; j < 11; ++j) v += static_cast<double>(w1.at(c, j)) * kept[static_cast<std::size_t>(j)];
        logit[static_cast<std::size_t>(c)] = v;
        largest = std::max(largest, v);
      }
      for (double v : logit) total += std::exp(v - largest);
      for (int64_t c = 0; c < 5; ++c) {
        const double prob = std::exp(logit[static_cast<std::size_t>(c)] - largest) / total;
        dlogit[static_cast<std::size_t>(c)] =
            (prob - (batch.targets[static_cast<std::size_t>(r)] == c ? 1.0 : 0.0)) / 7.0;
        for (int64_t j = 0; j < 11; ++j)
          want_w1[static_cast<std::size_t>(c * 11 + j)] +=
              dlogit[static_cast<std::size_t>(c)] * kept[static_cast<std::size_t>(j)];
      }
      for (int64_t j = 0; j < 11; ++j) {
        if (z[static_cast<std::size_t>(j)] <= 0.0) continue;
        double dz = 0.0;
        for (int64_t c = 0; c < 5; ++c) dz += dlogit[static_cast<std::size_t>(c)] * w1.at(c, j);
        const bool dropped = !keep[static_cast<std::size_t>(j)];
        if (dropped) through_dropped += std::abs(dz);
        if (dropped && masks_gradient) continue;
        want_b0[static_cast<std::size_t>(j)] += dz;
        for (int64_t k = 0; k < 9; ++k) want_w0[static_cast<std::size_t>(j * 9 + k)] += dz * batch.inputs.at(r, k);
      }
    }
    ASSERT_GT(through_dropped, 1e-3) << "no dropped unit with a gradient: the flag would change nothing";
    for (std::size_t i = 0; i < want_w1.size(); ++i) EXPECT_NEAR(p[2]->grad()[i], want_w1[i], 1e-6) << "w1 " << i;
    for (std::size_t i = 0; i < want_b0.size(); ++i) EXPECT_NEAR(p[1]->grad()[i], want_b0[i], 1e-6) << "b0 " << i;
    for (std::size_t i = 0; i < want_w0.size(); ++i) EXPECT_NEAR(p[0]->grad()[i], want_w0[i], 1e-6) << "w0 " << i;
  }
}

// initializer_range: weights N(0, std^2) (sample moments of 20,000 draws), biases 0.
TEST(MlpInit, InitStdDrawsNormalWeightsAndZeroBiases) {
  MlpConfig config;
  config.inputs = 200;
  config.hidden = {100};
  config.classes = 3;
  config.init_std = 0.1;
  Mlp mlp(config);
  mlp.init_weights(11);
  const std::vector<Parameter*> p = mlp.parameters();
  double sum = 0.0, squares = 0.0;
  for (float v : p[0]->values()) sum += v, squares += static_cast<double>(v) * v;
  const double n = static_cast<double>(p[0]->values().size());
  EXPECT_NEAR(sum / n, 0.0, 0.003);
  EXPECT_NEAR(std::sqrt(squares / n), 0.1, 0.002);
  for (float v : p[1]->values()) EXPECT_EQ(v, 0.0f);
  for (float v : p[3]->values()) EXPECT_EQ(v, 0.0f);
}

TEST(MlpOutputs, ExistOnlyAfterAForward) {
  MlpConfig config;
  config.inputs = 3;
  config.hidden = {4};
  config.classes = 2;
  Mlp mlp(config);
  EXPECT_THROW(mlp.outputs(), Error);
  mlp.forward(image_batch(5, 3, 2), false, 0, 0);
  EXPECT_EQ(mlp.outputs().rows(), 5);
  EXPECT_EQ(mlp.outputs().cols(), 2);
}

}  // namespace
}  // namespace sparsetrain
