// Whole-model gradients by central finite differences: a tiny GPT and MLP, dense and with sparse
// (compressed and masked-dense) parameters, every parameter tensor probed. The models run in
// float32; the loss is perturbed by +-h and compared with the analytic gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "core/error.h"
#include "core/philox.h"
#include "models/gpt.h"
#include "models/mlp.h"
#include "models/sparse_init.h"
#include "sparsity/algorithms.h"

namespace sparsetrain {
namespace {

// Probes up to `per_tensor` trainable values of every parameter.
void check_gradients(Model& model, const Batch& batch, int per_tensor, double tolerance) {
  const uint64_t seed = 5;
  const int64_t step = 3;
  for (Parameter* p : model.parameters()) p->zero_grad();
  model.forward(batch, true, seed, step);
  model.backward();
  for (Parameter* p : model.parameters()) {
    auto values = p->values();
    const std::vector<float> grad(p->grad().begin(), p->grad().end());
    const std::size_t n = values.size();
    const std::size_t stride = std::max<std::size_t>(1, n / static_cast<std::size_t>(per_tensor));
    for (std::size_t i = (n / 3) % stride; i < n; i += stride) {
      const float saved = values[i];
      const double h = 1e-2 * std::max(1.0, std::fabs(static_cast<double>(saved)));
      values[i] = static_cast<float>(saved + h);
      p->values_changed();
      const double up = model.forward(batch, true, seed, step).loss;
      values[i] = static_cast<float>(saved - h);
      p->values_changed();
      const double down = model.forward(batch, true, seed, step).loss;
      values[i] = saved;
      p->values_changed();
      const double numeric = (up - down) / (2.0 * h);
      const double analytic = grad[i];
      ASSERT_NEAR(analytic, numeric, tolerance * (1.0 + std::fabs(numeric)))
          << p->name() << "[" << i << "] (" << storage_name(p->storage()) << ")";
    }
  }
}

GptConfig tiny_gpt() {
  GptConfig c;
  c.vocab_size = 13;
  c.context = 7;
  c.layers = 2;
  c.heads = 2;
  c.embed = 12;
  c.init_std = 0.3;  // large enough that every path carries a gradient well above float noise
  return c;
}

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

TEST(GptGradients, DenseGradRequestFillsTheFullWeightGradient) {
  Gpt gpt(tiny_gpt());
  gpt.init_weights(3);
  SparsityOptions o;
  o.format = FormatSpec::csr();
  Static(0.7, o).apply(gpt);
  Parameter& w = gpt.parameter("transformer.h.1.mlp.c_fc.weight");
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
                      MlpCase{Activation::Sigmoid, Activation::Sigmoid, MlpLoss::Mse, 0.2, false}));

// Scaled sparse initialization: each row's kept weights times sqrt(cols / kept in the row),
// compressed and masked-dense alike; dense parameters, biases and pruned slots untouched.
TEST(SparseInit, ScaledMultipliesEachRowByItsFanInRatio) {
  MlpConfig config;
  config.inputs = 13;
  config.hidden = {9};
  config.classes = 4;
  Mlp mlp(config);
  mlp.init_weights(3);
  SparsityOptions compressed;
  compressed.format = FormatSpec::csr();
  compressed.filter = ParamFilter::globs({"layers.0.weight"});
  Static(0.7, compressed).apply(mlp);
  SparsityOptions masked;
  masked.filter = ParamFilter::globs({"layers.1.weight"});
  Static(0.5, masked).apply(mlp);
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
