// Embeddings (gather, accumulate, scatter-add in token order), the two losses against float64
// references (large logits, ties, finite differences, aliasing) and inverted dropout.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "layer_ops_testing.h"
#include "sparsetrain/ops/dropout.h"
#include "sparsetrain/ops/embedding.h"
#include "sparsetrain/ops/loss.h"

namespace sparsetrain {
namespace {

using namespace layer_testing;

std::vector<int32_t> random_ids(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  Philox rng(seed, "ids");
  for (int64_t i = 0; i < n; ++i)
    ids[i] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(i), static_cast<uint64_t>(vocab)));
  return ids;
}

// ---------------------------------------------------------------------------------------------
// Embedding

struct EmbShape {
  int64_t V, C, T;
};
constexpr EmbShape kEmbShapes[] = {{1, 5, 1}, {7, 5, 3}, {11, 12, 17}, {5, 33, 40}, {50, 130, 300}};

std::string name_of(EmbShape s) {
  return "V=" + std::to_string(s.V) + " C=" + std::to_string(s.C) + " T=" + std::to_string(s.T);
}

TEST(Embedding, ForwardGathersRows) {
  for (EmbShape s : kEmbShapes) {
    SCOPED_TRACE(name_of(s));
    Padded table(s.V, s.C, 2), out(s.T, s.C, 3);
    table.fill_nonzero(Philox(s.C, "emb.table"));
    const std::vector<int32_t> ids = random_ids(s.T, s.V, static_cast<uint64_t>(s.T));
    embedding_forward(table.cview(), ids, out.view());
    for (int64_t t = 0; t < s.T; ++t)
      for (int64_t c = 0; c < s.C; ++c) ASSERT_EQ(out.at(t, c), table.at(ids[t], c)) << t << "," << c;
    EXPECT_TRUE(out.padding_untouched());
  }
}

TEST(Embedding, ForwardAccumulates) {
  for (EmbShape s : kEmbShapes) {
    SCOPED_TRACE(name_of(s));
    Padded table(s.V, s.C, 2), out(s.T, s.C, 1);
    table.fill_nonzero(Philox(s.C, "emb.table"));
    out.fill_nonzero(Philox(s.C, "emb.out0"));
    const Padded before = out;
    const std::vector<int32_t> ids = random_ids(s.T, s.V, static_cast<uint64_t>(s.T) + 1);
    embedding_forward(table.cview(), ids, out.view(), /*accumulate=*/true);
    for (int64_t t = 0; t < s.T; ++t)
      for (int64_t c = 0; c < s.C; ++c)
        ASSERT_TRUE(close(out.at(t, c), static_cast<double>(before.at(t, c)) + table.at(ids[t], c), 1e-7, 0.0))
            << t << "," << c;
  }
}

// dtable += scatter of dout: against a float64 sum, and by central differences of
// L = sum(embedding(table) * dout) with respect to every table element.
TEST(Embedding, BackwardAddsIntoTheTable) {
  for (EmbShape s : kEmbShapes) {
    SCOPED_TRACE(name_of(s));
    Padded dout(s.T, s.C, 1), dtable(s.V, s.C, 2), table(s.V, s.C, 0);
    dout.fill_nonzero(Philox(s.C, "emb.dout"));
    dtable.fill_nonzero(Philox(s.C, "emb.dtable0"));
    table.fill_nonzero(Philox(s.C, "emb.table"));
    const std::vector<double> before = dtable.to_double();
    const std::vector<int32_t> ids = random_ids(s.T, s.V, static_cast<uint64_t>(s.T) + 2);
    embedding_backward(dout.cview(), ids, dtable.view());

    std::vector<double> want = before;
    for (int64_t t = 0; t < s.T; ++t)
      for (int64_t c = 0; c < s.C; ++c) want[static_cast<size_t>(ids[t] * s.C + c)] += dout.at(t, c);
    for (int64_t v = 0; v < s.V; ++v)
      for (int64_t c = 0; c < s.C; ++c)
        ASSERT_TRUE(
            close(dtable.at(v, c), want[static_cast<size_t>(v * s.C + c)], 1e-6, 1e-6 * static_cast<double>(s.T)))
            << v << "," << c;
    EXPECT_TRUE(dtable.padding_untouched());

    if (s.V * s.C > 1000) continue;
    std::vector<double> tab = table.to_double();
    const std::vector<double> r = dout.to_double();
    auto loss = [&] {
      double l = 0.0;
      for (int64_t t = 0; t < s.T; ++t)
        for (int64_t c = 0; c < s.C; ++c)
          l += tab[static_cast<size_t>(ids[t] * s.C + c)] * r[static_cast<size_t>(t * s.C + c)];
      return l;
    };
    for (size_t i = 0; i < tab.size(); ++i) {
      const double fd = central_diff(tab, i, loss);
      const int64_t v = static_cast<int64_t>(i) / s.C, c = static_cast<int64_t>(i) % s.C;
      ASSERT_TRUE(close(dtable.at(v, c) - before[i], fd, 1e-5, 1e-5)) << v << "," << c;
    }
  }
}

TEST(Embedding, BackwardDoesNotDependOnTheThreadCount) {
  const int64_t V = 7, C = 256, T = 500;  // few rows: every row collects many tokens
  Padded dout(T, C, 0);
  dout.fill_nonzero(Philox(1, "emb.dout"));
  const std::vector<int32_t> ids = random_ids(T, V, 3);
  auto run = [&](int threads) {
    ThreadCount guard(threads);
    Padded dtable(V, C, 0);
    dtable.fill_nonzero(Philox(2, "emb.dtable0"));
    embedding_backward(dout.cview(), ids, dtable.view());
    return dtable;
  };
  const Padded one = run(1), two = run(2);
  EXPECT_TRUE(bitwise_equal(one.storage.data(), two.storage.data(), one.storage.size()));
}

TEST(Embedding, IdOutOfRangeIsAnErrorNamingPositionAndId) {
  Padded table(10, 4, 0), out(5, 4, 0), dout(5, 4, 0);
  table.fill_nonzero(Philox(1, "t"));
  std::vector<int32_t> ids = {0, 9, 3, 10, 2};
  std::string msg = testing::error_of([&] { embedding_forward(table.cview(), ids, out.view()); });
  EXPECT_TRUE(has_substr(msg, "id 10 at position 3"));
  EXPECT_TRUE(has_substr(msg, "[0, 10)"));
  // Nothing was written before the failure.
  for (int64_t c = 0; c < 4; ++c) EXPECT_TRUE(std::isnan(out.at(0, c)));
  ids[3] = 1;
  ids[1] = -2;
  msg = testing::error_of([&] { embedding_backward(dout.cview(), ids, table.view()); });
  EXPECT_TRUE(has_substr(msg, "id -2 at position 1"));
}

// ---------------------------------------------------------------------------------------------
// Losses

double ref_cross_entropy(const std::vector<double>& logits, const std::vector<int32_t>& targets, int64_t V) {
  const int64_t N = static_cast<int64_t>(targets.size());
  double total = 0.0;
  for (int64_t r = 0; r < N; ++r) {
    const double* x = &logits[static_cast<size_t>(r * V)];
    double m = x[0];
    for (int64_t c = 1; c < V; ++c) m = std::max(m, x[c]);
    double sum = 0.0;
    for (int64_t c = 0; c < V; ++c) sum += std::exp(x[c] - m);
    total += m + std::log(sum) - x[targets[r]];
  }
  return total / static_cast<double>(N);
}

double ref_mse(const std::vector<double>& pred, const std::vector<int32_t>& targets, int64_t K) {
  const int64_t N = static_cast<int64_t>(targets.size());
  double total = 0.0;
  for (int64_t r = 0; r < N; ++r)
    for (int64_t c = 0; c < K; ++c) {
      const double d = pred[static_cast<size_t>(r * K + c)] - (c == targets[r] ? 1.0 : 0.0);
      total += d * d;
    }
  return total / static_cast<double>(N * K);
}

// First index of the largest value.
int64_t ref_correct(const Padded& scores, const std::vector<int32_t>& targets) {
  int64_t correct = 0;
  for (int64_t r = 0; r < scores.rows; ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < scores.cols; ++c)
      if (scores.at(r, c) > scores.at(r, best)) best = c;
    correct += best == targets[r] ? 1 : 0;
  }
  return correct;
}

struct LossShape {
  int64_t N, V;
};
constexpr LossShape kLossShapes[] = {{1, 5}, {3, 12}, {17, 33}, {40, 5}, {64, 257}};

std::string name_of(LossShape s) { return "N=" + std::to_string(s.N) + " V=" + std::to_string(s.V); }

// Random logits with a few rows shifted far out (+-1000) where a naive exp would overflow.
Padded make_logits(LossShape s, uint64_t seed) {
  Padded x(s.N, s.V, 2);
  x.fill_nonzero(Philox(seed, "logits"), 3.0f);
  for (int64_t r = 0; r < s.N; r += 3)
    for (int64_t c = 0; c < s.V; ++c) x.at(r, c) += (r % 2 == 0 ? 1000.0f : -1000.0f);
  return x;
}

TEST(CrossEntropy, MatchesFloat64LogSumExpWithLargeLogits) {
  for (LossShape s : kLossShapes) {
    SCOPED_TRACE(name_of(s));
    const Padded x = make_logits(s, static_cast<uint64_t>(s.N * 7 + s.V));
    const std::vector<int32_t> targets = random_ids(s.N, s.V, static_cast<uint64_t>(s.V));
    Padded g(s.N, s.V, 1);
    const LossResult res = softmax_cross_entropy(x.cview(), targets, g.view());
    const std::vector<double> xd = x.to_double();
    ASSERT_TRUE(std::isfinite(res.loss));
    // Each e^(x - max) is a float with ~1.4e-7 relative error (ops/fast_math.h), summed in
    // double: log(sum) is then within 2e-7 absolute.
    EXPECT_TRUE(close(res.loss, ref_cross_entropy(xd, targets, s.V), 1e-12, 2e-7));
    EXPECT_EQ(res.correct, ref_correct(x, targets));

    // Gradient: (softmax - onehot) / N in float64, and the loss's central differences with
    // respect to every logit.
    std::vector<double> xv = xd;
    for (int64_t r = 0; r < s.N; ++r) {
      const double* row = &xd[static_cast<size_t>(r * s.V)];
      double m = row[0];
      for (int64_t c = 1; c < s.V; ++c) m = std::max(m, row[c]);
      double sum = 0.0;
      for (int64_t c = 0; c < s.V; ++c) sum += std::exp(row[c] - m);
      for (int64_t c = 0; c < s.V; ++c) {
        const double want = (std::exp(row[c] - m) / sum - (c == targets[r] ? 1.0 : 0.0)) / static_cast<double>(s.N);
        ASSERT_TRUE(close(g.at(r, c), want, 1e-6, 1e-9)) << r << "," << c;
        const size_t i = static_cast<size_t>(r * s.V + c);
        if (s.N * s.V > 2000 && i % 7 != 0) continue;  // every 7th element of the largest shape
        // An absolute step, since the logits near +-1000 would otherwise get a large one; the row
        // losses there round at ~1e-13, which the differences turn into ~1e-9.
        const double fd = central_diff(
            xv, i, [&] { return ref_cross_entropy(xv, targets, s.V); }, 1e-4);
        ASSERT_TRUE(close(g.at(r, c), fd, 1e-4, 1e-8)) << "fd " << r << "," << c;
      }
    }
    EXPECT_TRUE(g.padding_untouched());
  }
}

TEST(CrossEntropy, GradientMayAliasLogitsOrBeSkipped) {
  const LossShape s{17, 33};
  const Padded x = make_logits(s, 5);
  const std::vector<int32_t> targets = random_ids(s.N, s.V, 6);
  Padded g(s.N, s.V, 2, kNaN);
  const LossResult separate = softmax_cross_entropy(x.cview(), targets, g.view());
  Padded inplace = x;
  const LossResult aliased = softmax_cross_entropy(inplace.cview(), targets, inplace.view());
  const LossResult skipped = softmax_cross_entropy(x.cview(), targets, MatrixView{});
  EXPECT_EQ(separate.loss, aliased.loss);
  EXPECT_EQ(separate.loss, skipped.loss);
  EXPECT_EQ(separate.correct, aliased.correct);
  EXPECT_EQ(separate.correct, skipped.correct);
  for (int64_t r = 0; r < s.N; ++r)
    for (int64_t c = 0; c < s.V; ++c) ASSERT_EQ(inplace.at(r, c), g.at(r, c)) << r << "," << c;
}

TEST(CrossEntropy, TiesGoToTheFirstIndex) {
  Padded x(4, 4, 0);
  const float rows[4][4] = {{2, 5, 5, 1}, {2, 5, 5, 1}, {7, 7, 7, 7}, {7, 7, 7, 7}};
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 4; ++c) x.at(r, c) = rows[r][c];
  // Row 0 targets the first of the tied maxima (right), row 1 the second (wrong); rows 2 and 3 the
  // first of four equal scores (right). The last index winning would count 1.
  const std::vector<int32_t> targets = {1, 2, 0, 0};
  EXPECT_EQ(softmax_cross_entropy(x.cview(), targets, MatrixView{}).correct, 3);
  EXPECT_EQ(mse_onehot(x.cview(), targets, MatrixView{}).correct, 3);
  EXPECT_EQ(ref_correct(x, targets), 3);
  for (int64_t r = 0; r < 4; ++r) {
    const Padded row(1, 4, 0, 0.0f);
    Padded one = row;
    for (int64_t c = 0; c < 4; ++c) one.at(0, c) = rows[r][c];
    const std::vector<int32_t> t = {targets[r]};
    EXPECT_EQ(softmax_cross_entropy(one.cview(), t, MatrixView{}).correct, r == 1 ? 0 : 1) << "row " << r;
  }
}

TEST(CrossEntropy, TargetOutOfRangeIsAnErrorNamingTheRow) {
  Padded x(4, 6, 0);
  x.fill_nonzero(Philox(1, "x"));
  std::string msg = testing::error_of([&] {
    softmax_cross_entropy(x.cview(), std::vector<int32_t>{0, 5, 6, 1}, x.view());
  });
  EXPECT_TRUE(has_substr(msg, "target 6 at row 2"));
  EXPECT_TRUE(has_substr(msg, "[0, 6)"));
  msg = testing::error_of([&] { softmax_cross_entropy(x.cview(), std::vector<int32_t>{0, -1, 2, 1}, MatrixView{}); });
  EXPECT_TRUE(has_substr(msg, "target -1 at row 1"));
  msg = testing::error_of([&] { mse_onehot(x.cview(), std::vector<int32_t>{0, 1, 2, 9}, MatrixView{}); });
  EXPECT_TRUE(has_substr(msg, "target 9 at row 3"));
  msg = testing::error_of([&] { softmax_cross_entropy(x.cview(), std::vector<int32_t>{0, 1}, MatrixView{}); });
  EXPECT_TRUE(has_substr(msg, "2 targets for 4 rows"));
}

TEST(MseOneHot, MatchesFloat64ReferenceAndFiniteDifferences) {
  for (LossShape s : kLossShapes) {
    SCOPED_TRACE(name_of(s));
    Padded x(s.N, s.V, 1);
    x.fill_nonzero(Philox(static_cast<uint64_t>(s.V), "pred"));
    const std::vector<int32_t> targets = random_ids(s.N, s.V, static_cast<uint64_t>(s.N));
    Padded g(s.N, s.V, 3);
    const LossResult res = mse_onehot(x.cview(), targets, g.view());
    std::vector<double> xd = x.to_double();
    EXPECT_TRUE(close(res.loss, ref_mse(xd, targets, s.V), 1e-12, 0.0));
    EXPECT_EQ(res.correct, ref_correct(x, targets));
    const double count = static_cast<double>(s.N * s.V);
    for (int64_t r = 0; r < s.N; ++r)
      for (int64_t c = 0; c < s.V; ++c) {
        const size_t i = static_cast<size_t>(r * s.V + c);
        const double want = 2.0 * (xd[i] - (c == targets[r] ? 1.0 : 0.0)) / count;
        ASSERT_TRUE(close(g.at(r, c), want, 1e-6, 0.0)) << r << "," << c;
        const double fd = central_diff(xd, i, [&] { return ref_mse(xd, targets, s.V); });
        ASSERT_TRUE(close(g.at(r, c), fd, 1e-5, 1e-9)) << "fd " << r << "," << c;
      }
    EXPECT_TRUE(g.padding_untouched());

    Padded inplace = x;
    const LossResult aliased = mse_onehot(inplace.cview(), targets, inplace.view());
    EXPECT_EQ(aliased.loss, res.loss);
    for (int64_t r = 0; r < s.N; ++r)
      for (int64_t c = 0; c < s.V; ++c) ASSERT_EQ(inplace.at(r, c), g.at(r, c)) << r << "," << c;
  }
}

TEST(Losses, NaNScorePropagatesToTheLoss) {
  Padded x(3, 5, 0);
  x.fill_nonzero(Philox(2, "x"));
  x.at(1, 3) = kNaN;
  const std::vector<int32_t> targets = {0, 1, 2};
  EXPECT_TRUE(std::isnan(softmax_cross_entropy(x.cview(), targets, MatrixView{}).loss));
  EXPECT_TRUE(std::isnan(mse_onehot(x.cview(), targets, MatrixView{}).loss));
}

// ---------------------------------------------------------------------------------------------
// Dropout

TEST(Dropout, ZeroProbabilityIsTheIdentity) {
  Padded x(17, 33, 2), y(17, 33, 1);
  x.fill_nonzero(Philox(1, "x"));
  x.at(3, 4) = kNaN;
  std::vector<uint8_t> keep(17 * 33, 7);
  dropout_forward(0.0f, Philox(1, "drop"), x.cview(), y.view(), keep.data());
  for (int64_t r = 0; r < 17; ++r)
    for (int64_t c = 0; c < 33; ++c) {
      const float a = x.at(r, c), b = y.at(r, c);
      ASSERT_TRUE(bitwise_equal(&a, &b, 1)) << r << "," << c;
      ASSERT_EQ(keep[static_cast<size_t>(r * 33 + c)], 1);
    }
}

TEST(Dropout, KeepsElementIWhenUniformIAtLeastP) {
  const int64_t R = 1000, C = 257;  // C not a multiple of 4: Philox blocks straddle rows
  const float p = 0.3f;
  const Philox rng(11, "dropout", 4);
  Padded x(R, C, 3), y(R, C, 1);
  x.fill_nonzero(Philox(3, "x"));
  std::vector<uint8_t> keep(static_cast<size_t>(R * C), 7);
  dropout_forward(p, rng, x.cview(), y.view(), keep.data());
  int64_t kept = 0;
  const double scale = 1.0 / (1.0 - static_cast<double>(p));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) {
      const uint64_t i = static_cast<uint64_t>(r * C + c);
      const bool want = rng.uniform(i) >= p;
      ASSERT_EQ(keep[i], want ? 1 : 0) << i;
      kept += want ? 1 : 0;
      ASSERT_TRUE(close(y.at(r, c), want ? x.at(r, c) * scale : 0.0, 2.5e-7, 0.0)) << r << "," << c;
    }
  // 1 - p within five standard deviations (sqrt(p (1 - p) / n) ~ 0.0009).
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(R * C), 1.0 - p, 0.0045);
  EXPECT_TRUE(y.padding_untouched());

  // The same stream gives the same mask at any thread count; another stream a different one.
  for (int threads : {1, 2}) {
    ThreadCount guard(threads);
    std::vector<uint8_t> again(keep.size());
    Padded y2(R, C, 1);
    dropout_forward(p, Philox(11, "dropout", 4), x.cview(), y2.view(), again.data());
    EXPECT_EQ(again, keep) << threads << " threads";
    EXPECT_TRUE(bitwise_equal(y2.storage.data(), y.storage.data(), y.storage.size()));
  }
  std::vector<uint8_t> other(keep.size());
  Padded y3(R, C, 1);
  dropout_forward(p, Philox(11, "dropout", 5), x.cview(), y3.view(), other.data());
  EXPECT_NE(other, keep);

  // In place.
  Padded inplace = x;
  std::vector<uint8_t> keep2(keep.size());
  MatrixView v = inplace.view();
  dropout_forward(p, rng, v, v, keep2.data());
  EXPECT_EQ(keep2, keep);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) ASSERT_EQ(inplace.at(r, c), y.at(r, c));
}

// L = sum(y * R) is linear in x: dL/dx = R keep / (1 - p), checked against the formula and by
// central differences of a float64 forward with the saved mask.
// keep = uniform >= p: an element whose uniform equals p exactly is kept.
TEST(Dropout, UniformEqualToPIsKept) {
  const Philox rng(8, "dropout.edge");
  const float p = rng.uniform(5);
  ASSERT_GT(p, 0.0f);
  ASSERT_LT(p, 1.0f);
  Padded x(3, 4, 0), y(3, 4, 0);
  x.fill_nonzero(Philox(8, "x"));
  std::vector<uint8_t> keep(12, 7);
  dropout_forward(p, rng, x.cview(), y.view(), keep.data());
  EXPECT_EQ(keep[5], 1);
  EXPECT_NE(y.at(1, 1), 0.0f);
  for (uint64_t i = 0; i < 12; ++i) EXPECT_EQ(keep[i], rng.uniform(i) >= p ? 1 : 0) << i;
}

TEST(Dropout, BackwardScalesByKeepOverOneMinusP) {
  const int64_t R = 17, C = 12;
  const float p = 0.45f;
  Padded x(R, C, 1), y(R, C, 0), dy(R, C, 2), dx(R, C, 1);
  x.fill_nonzero(Philox(4, "x"));
  dy.fill_nonzero(Philox(4, "dy"));
  std::vector<uint8_t> keep(static_cast<size_t>(R * C));
  dropout_forward(p, Philox(4, "drop"), x.cview(), y.view(), keep.data());
  dropout_backward(p, keep.data(), dy.cview(), dx.view());
  int64_t dropped = 0;
  std::vector<double> xd = x.to_double();
  const std::vector<double> r = dy.to_double();
  const double scale = 1.0 / (1.0 - static_cast<double>(p));
  auto loss = [&] {
    double l = 0.0;
    for (size_t i = 0; i < xd.size(); ++i) l += xd[i] * keep[i] * scale * r[i];
    return l;
  };
  for (int64_t i = 0; i < R * C; ++i) {
    const int64_t row = i / C, col = i % C;
    dropped += keep[static_cast<size_t>(i)] == 0 ? 1 : 0;
    ASSERT_TRUE(close(dx.at(row, col), keep[static_cast<size_t>(i)] * scale * r[static_cast<size_t>(i)], 2.5e-7, 0.0));
    ASSERT_TRUE(close(dx.at(row, col), central_diff(xd, static_cast<size_t>(i), loss), 1e-6, 1e-9));
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, R * C);
  EXPECT_TRUE(dx.padding_untouched());

  Padded inplace = dy;
  dropout_backward(p, keep.data(), inplace.cview(), inplace.view());
  for (int64_t row = 0; row < R; ++row)
    for (int64_t col = 0; col < C; ++col) ASSERT_EQ(inplace.at(row, col), dx.at(row, col));
}

TEST(Dropout, ProbabilityOutsideZeroOneIsAnError) {
  Padded x(2, 3, 0), y(2, 3, 0);
  std::vector<uint8_t> keep(6);
  for (float p : {1.0f, -0.1f, kNaN}) {
    const std::string msg =
        testing::error_of([&] { dropout_forward(p, Philox(1, "d"), x.cview(), y.view(), keep.data()); });
    EXPECT_TRUE(has_substr(msg, "outside [0, 1)")) << p;
  }
}

}  // namespace
}  // namespace sparsetrain
