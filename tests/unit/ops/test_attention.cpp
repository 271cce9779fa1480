// Self-attention, causal and bidirectional, with and without padding, against a float64
// reference: outputs, saved probabilities (layout probs[((b*H + h)*T + t)*T + s]), the backward
// pass analytically and by central differences, strided views, causality under a non-finite
// future token, padding under non-finite padded keys and values, thread-count independence and
// the errors for bad shapes and lengths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "layer_ops_testing.h"
#include "sparsetrain/ops/attention.h"

namespace sparsetrain {
namespace {

using namespace layer_testing;

// One past the last key query t of batch row b sees, from AttentionShape's contract.
int64_t key_end(const AttentionShape& s, int64_t b, int64_t t) {
  const int64_t real = s.lengths != nullptr ? s.lengths[b] : s.seq;
  return s.causal ? std::min(t + 1, real) : real;
}

// Key s of batch row b is padding.
bool padded(const AttentionShape& s, int64_t b, int64_t key) { return s.lengths != nullptr && key >= s.lengths[b]; }

struct AttRef {
  std::vector<double> out;    // [B*T x C]
  std::vector<double> probs;  // [B*H*T*T]
};

// qkv dense [B*T x 3C] in float64.
AttRef att_forward_ref(const AttentionShape& s, const std::vector<double>& qkv) {
  const int64_t B = s.batch, T = s.seq, H = s.heads, C = s.channels, D = s.head_dim();
  AttRef r{std::vector<double>(static_cast<size_t>(B * T * C)),
           std::vector<double>(static_cast<size_t>(s.probs_size()))};
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> row(static_cast<size_t>(T));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t n = key_end(s, b, t);
        const double* q = &qkv[static_cast<size_t>((b * T + t) * 3 * C + h * D)];
        double maxv = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
          const double* k = &qkv[static_cast<size_t>((b * T + j) * 3 * C + C + h * D)];
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += q[d] * k[d];
          row[j] = dot * scale;
          maxv = std::max(maxv, row[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < n; ++j) sum += (row[j] = std::exp(row[j] - maxv));
        double* p = &r.probs[static_cast<size_t>(((b * H + h) * T + t) * T)];
        for (int64_t j = 0; j < n; ++j) p[j] = row[j] / sum;
        double* o = &r.out[static_cast<size_t>((b * T + t) * C + h * D)];
        for (int64_t j = 0; j < n; ++j) {
          const double* v = &qkv[static_cast<size_t>((b * T + j) * 3 * C + 2 * C + h * D)];
          for (int64_t d = 0; d < D; ++d) o[d] += p[j] * v[d];
        }
      }
  return r;
}

// dqkv dense [B*T x 3C] from dout dense [B*T x C].
std::vector<double> att_backward_ref(const AttentionShape& s, const std::vector<double>& dout,
                                     const std::vector<double>& qkv) {
  const int64_t B = s.batch, T = s.seq, H = s.heads, C = s.channels, D = s.head_dim();
  const AttRef f = att_forward_ref(s, qkv);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> dqkv(qkv.size(), 0.0), ds(static_cast<size_t>(T));
  auto at = [&](int64_t b, int64_t t, int64_t part, int64_t h) {
    return static_cast<size_t>((b * T + t) * 3 * C + part * C + h * D);
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t n = key_end(s, b, t);
        const double* p = &f.probs[static_cast<size_t>(((b * H + h) * T + t) * T)];
        const double* dy = &dout[static_cast<size_t>((b * T + t) * C + h * D)];
        double dot = 0.0;
        for (int64_t j = 0; j < n; ++j) {
          double dp = 0.0;
          for (int64_t d = 0; d < D; ++d) dp += dy[d] * qkv[at(b, j, 2, h) + d];
          ds[j] = dp;
          dot += p[j] * dp;
          for (int64_t d = 0; d < D; ++d) dqkv[at(b, j, 2, h) + d] += p[j] * dy[d];  // dv
        }
        for (int64_t j = 0; j < n; ++j) {
          const double g = p[j] * (ds[j] - dot) * scale;
          for (int64_t d = 0; d < D; ++d) {
            dqkv[at(b, t, 0, h) + d] += g * qkv[at(b, j, 1, h) + d];  // dq
            dqkv[at(b, j, 1, h) + d] += g * qkv[at(b, t, 0, h) + d];  // dk
          }
        }
      }
  return dqkv;
}

struct Problem {
  AttentionShape s;
  Padded qkv, out, dout, dqkv;
  std::vector<float> probs;

  Problem(AttentionShape shape, uint64_t seed)
      : s(shape),
        qkv(s.batch * s.seq, 3 * s.channels, 3),
        out(s.batch * s.seq, s.channels, 2),
        dout(s.batch * s.seq, s.channels, 1),
        dqkv(s.batch * s.seq, 3 * s.channels, 4),
        probs(static_cast<size_t>(s.probs_size()), kNaN) {
    qkv.fill_nonzero(Philox(seed, "att.qkv"));
    dout.fill_nonzero(Philox(seed, "att.dout"));
  }
  void forward() { attention_forward(s, qkv.cview(), out.view(), probs.data()); }
  void backward() { attention_backward(s, dout.cview(), qkv.cview(), probs.data(), dqkv.view()); }
};

std::string name_of(const AttentionShape& s) {
  std::string name = "B=" + std::to_string(s.batch) + " T=" + std::to_string(s.seq) + " H=" + std::to_string(s.heads) +
                     " C=" + std::to_string(s.channels) + (s.causal ? " causal" : " bidirectional");
  if (s.lengths != nullptr) {
    name += " lengths";
    for (int64_t b = 0; b < s.batch; ++b) name.append(" ").append(std::to_string(s.lengths[b]));
  }
  return name;
}

// Sequence lengths below, at and past the kernels' 6-row blocks and 64-token key tiles (70 and
// 140 cross tiles); head widths below, at and past the vector widths: 16 and 32 (one and two
// vectors), 20 (a vector and a tail), 48 (three), 64 (one chunk of four), 84 (four, one more,
// a tail), 136 (two chunks and, in 16-float vectors, a tail).
const AttentionShape kShapes[] = {{1, 1, 1, 5},   {2, 3, 1, 5},   {1, 17, 3, 12}, {2, 17, 3, 33},
                                  {1, 33, 3, 6},  {1, 40, 1, 8},  {1, 64, 2, 8},  {2, 70, 3, 24},
                                  {1, 35, 2, 32}, {1, 40, 2, 40}, {1, 70, 1, 64}, {1, 140, 2, 16},
                                  {1, 40, 1, 84}, {2, 37, 2, 64}, {1, 50, 1, 48}, {1, 29, 1, 136}};

// A shape with padding: batch row b holds lengths[b] real tokens (all of them when empty).
struct Padding {
  AttentionShape s;
  std::vector<int32_t> lengths;
  AttentionShape shape() const {
    AttentionShape r = s;
    r.lengths = lengths.empty() ? nullptr : lengths.data();
    return r;
  }
};

// Bidirectional, and causal with padding. T = 1, 7, 33, 130 (130 crosses two 64-token key
// tiles); head widths 5, 7 and 11 (all in the vector kernels' reference channel tail), 17 (a
// vector or two and a tail), 20, 24, 64 (one chunk of four vectors) and 136; lengths 1, T and
// between, on and off the 6-row blocks, the vector widths and the key tiles.
const Padding kPadded[] = {
    {{1, 1, 1, 5, false}, {1}},          {{2, 17, 3, 12, false}, {}},          {{3, 7, 1, 7, false}, {1, 7, 4}},
    {{2, 7, 3, 33, false}, {7, 2}},      {{3, 33, 2, 40, false}, {33, 1, 17}}, {{2, 33, 1, 64, false}, {13, 32}},
    {{2, 130, 1, 24, false}, {130, 65}}, {{2, 130, 2, 34, false}, {1, 129}},   {{1, 70, 1, 136, false}, {67}},
    {{2, 33, 3, 33, true}, {33, 10}},    {{2, 130, 1, 16, true}, {100, 3}},    {{3, 7, 1, 7, true}, {1, 6, 7}}};

// kShapes, then kPadded.
std::vector<AttentionShape> all_shapes() {
  std::vector<AttentionShape> shapes(std::begin(kShapes), std::end(kShapes));
  for (const Padding& p : kPadded) shapes.push_back(p.shape());
  return shapes;
}

std::string name_of(const AttentionShape& s, CpuIsa isa) { return name_of(s) + " isa " + std::string(isa_name(isa)); }

// check(s, p) for every usable kernel ISA and every shape, with p after its forward pass and
// the ISA still capped (so a backward pass in check runs on it too).
template <class Check>
void on_every_isa_and_shape(Check check) {
  const std::vector<AttentionShape> shapes = all_shapes();
  for (CpuIsa isa : usable_isas())
    for (const AttentionShape& s : shapes) {
      SCOPED_TRACE(name_of(s, isa));
      const IsaCap cap(isa);
      Problem p(s, static_cast<uint64_t>(s.seq * 1000 + s.channels));
      p.forward();
      check(s, p);
      if (::testing::Test::HasFatalFailure()) return;
    }
}

TEST(Attention, ForwardMatchesFloat64ReferenceOnEveryIsa) {
  on_every_isa_and_shape([](const AttentionShape& s, Problem& p) {
    const AttRef ref = att_forward_ref(s, p.qkv.to_double());
    const int64_t T = s.seq;
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < T; ++j) {
          const size_t i = static_cast<size_t>((bh * T + t) * T + j);
          if (j >= key_end(s, bh / s.heads, t)) {
            ASSERT_EQ(p.probs[i], 0.0f) << "unseen key: pair " << bh << " t=" << t << " s=" << j;
          } else {
            ASSERT_TRUE(close(p.probs[i], ref.probs[i], 1e-5, 1e-7)) << "pair " << bh << " t=" << t << " s=" << j;
          }
        }
    for (int64_t r = 0; r < s.batch * T; ++r)
      for (int64_t c = 0; c < s.channels; ++c)
        ASSERT_TRUE(close(p.out.at(r, c), ref.out[static_cast<size_t>(r * s.channels + c)], 1e-5, 1e-6))
            << "out " << r << "," << c;
    EXPECT_TRUE(p.out.padding_untouched());
  });
}

TEST(Attention, BackwardMatchesFloat64ReferenceOnEveryIsa) {
  on_every_isa_and_shape([](const AttentionShape& s, Problem& p) {
    p.backward();
    const std::vector<double> ref = att_backward_ref(s, p.dout.to_double(), p.qkv.to_double());
    const double scale = max_abs(ref);
    ASSERT_GT(scale, 0.0);
    for (int64_t r = 0; r < p.dqkv.rows; ++r)
      for (int64_t c = 0; c < p.dqkv.cols; ++c)
        ASSERT_TRUE(close(p.dqkv.at(r, c), ref[static_cast<size_t>(r * p.dqkv.cols + c)], 1e-4, 1e-5 * scale))
            << "dqkv " << r << "," << c;
    for (int64_t r = 0; r < p.dqkv.rows; ++r) {
      if (!padded(s, r / s.seq, r % s.seq)) continue;
      for (int64_t c = s.channels; c < 3 * s.channels; ++c)
        ASSERT_EQ(p.dqkv.at(r, c), 0.0f) << "padded key or value " << r << "," << c;
    }
    EXPECT_TRUE(p.dqkv.padding_untouched());
  });
}

// L = sum(out * dout), differentiated by central differences of the float64 forward with respect
// to every element of qkv (every 13th, or 131st, for the largest shapes).
TEST(Attention, BackwardMatchesFiniteDifferences) {
  for (const AttentionShape& s : all_shapes()) {
    SCOPED_TRACE(name_of(s));
    Problem p(s, static_cast<uint64_t>(s.seq * 1000 + s.channels + 7));
    p.forward();
    p.backward();
    std::vector<double> qkv = p.qkv.to_double();
    const std::vector<double> r = p.dout.to_double();
    auto loss = [&] {
      const AttRef f = att_forward_ref(s, qkv);
      double l = 0.0;
      for (size_t i = 0; i < r.size(); ++i) l += f.out[i] * r[i];
      return l;
    };
    const size_t stride = qkv.size() > 10000 ? 131 : qkv.size() > 5000 ? 13 : 1;
    std::vector<double> fd(qkv.size(), 0.0);
    for (size_t i = 0; i < qkv.size(); i += stride) fd[i] = central_diff(qkv, i, loss);
    const double scale = max_abs(fd);
    ASSERT_GT(scale, 0.0);
    for (size_t i = 0; i < qkv.size(); i += stride) {
      const int64_t row = static_cast<int64_t>(i) / p.qkv.cols, col = static_cast<int64_t>(i) % p.qkv.cols;
      ASSERT_TRUE(close(p.dqkv.at(row, col), fd[i], 1e-4, 1e-4 * scale)) << "dqkv " << row << "," << col;
    }
  }
}

// A non-finite key and value at the last position reach only that position's outputs, and in
// the backward pass no earlier query's gradient (keys' and values' gradients all see the last
// query's NaN probabilities, and the other batch element sees nothing).
TEST(Attention, FutureNaNDoesNotReachEarlierTokensOnEveryIsa) {
  for (CpuIsa isa : usable_isas())
    for (const AttentionShape& s :
         {AttentionShape{2, 40, 2, 8}, AttentionShape{2, 40, 2, 40}, AttentionShape{1, 70, 1, 64}}) {
      SCOPED_TRACE(name_of(s, isa));
      const IsaCap cap(isa);
      Problem p(s, 3);
      const int64_t last = s.seq - 1;  // batch 0
      for (int64_t c = 0; c < s.channels; ++c) {
        p.qkv.at(last, s.channels + c) = kNaN;
        p.qkv.at(last, 2 * s.channels + c) = kNaN;
      }
      p.forward();
      for (int64_t r = 0; r < s.batch * s.seq; ++r)
        for (int64_t c = 0; c < s.channels; ++c) {
          if (r == last) {
            ASSERT_TRUE(std::isnan(p.out.at(r, c))) << c;
          } else {
            ASSERT_TRUE(std::isfinite(p.out.at(r, c))) << r << "," << c;
          }
        }
      p.backward();
      for (int64_t r = 0; r < s.batch * s.seq; ++r) {
        const bool other_batch = r > last;
        for (int64_t c = 0; c < s.channels; ++c) {
          if (r == last) continue;
          ASSERT_TRUE(std::isfinite(p.dqkv.at(r, c))) << "dq " << r << "," << c;
          if (other_batch) {
            ASSERT_TRUE(std::isfinite(p.dqkv.at(r, s.channels + c))) << "dk " << r << "," << c;
            ASSERT_TRUE(std::isfinite(p.dqkv.at(r, 2 * s.channels + c))) << "dv " << r << "," << c;
          }
        }
      }
    }
}

// NaN in every padded key and value changes nothing: outputs (padded queries' included, which
// see the real keys), probabilities and gradients are bitwise those of a run with finite
// padding, and the padded keys' and values' gradients are zero.
TEST(Attention, PaddedNaNDoesNotReachAnyTokenOnEveryIsa) {
  for (CpuIsa isa : usable_isas())
    for (const Padding& padding : kPadded) {
      const AttentionShape s = padding.shape();
      if (s.lengths == nullptr) continue;
      SCOPED_TRACE(name_of(s, isa));
      const IsaCap cap(isa);
      Problem clean(s, 11), poisoned(s, 11);
      for (int64_t r = 0; r < s.batch * s.seq; ++r)
        if (padded(s, r / s.seq, r % s.seq))
          for (int64_t c = s.channels; c < 3 * s.channels; ++c) poisoned.qkv.at(r, c) = kNaN;
      for (Problem* p : {&clean, &poisoned}) {
        p->forward();
        p->backward();
      }
      EXPECT_TRUE(bitwise_equal(clean.out.storage.data(), poisoned.out.storage.data(), clean.out.storage.size()));
      EXPECT_TRUE(bitwise_equal(clean.probs.data(), poisoned.probs.data(), clean.probs.size()));
      EXPECT_TRUE(bitwise_equal(clean.dqkv.storage.data(), poisoned.dqkv.storage.data(), clean.dqkv.storage.size()));
      for (int64_t r = 0; r < s.batch * s.seq; ++r)
        for (int64_t c = 0; c < s.channels; ++c) ASSERT_TRUE(std::isfinite(poisoned.out.at(r, c))) << r << "," << c;
    }
}

TEST(Attention, ResultsDoNotDependOnTheThreadCount) {
  const int32_t lengths[] = {70, 1, 45};
  for (const AttentionShape& s :
       {AttentionShape{2, 70, 3, 24}, AttentionShape{1, 70, 1, 8}, AttentionShape{3, 96, 4, 64},
        AttentionShape{3, 70, 2, 24, false, lengths}, AttentionShape{3, 70, 2, 24, true, lengths}}) {
    SCOPED_TRACE(name_of(s));
    auto run = [&](int threads) {
      ThreadCount guard(threads);
      Problem p(s, 5);
      p.forward();
      p.backward();
      return p;
    };
    const Problem one = run(1), two = run(2);
    EXPECT_TRUE(bitwise_equal(one.out.storage.data(), two.out.storage.data(), one.out.storage.size()));
    EXPECT_TRUE(bitwise_equal(one.probs.data(), two.probs.data(), one.probs.size()));
    EXPECT_TRUE(bitwise_equal(one.dqkv.storage.data(), two.dqkv.storage.data(), one.dqkv.storage.size()));
  }
}

TEST(Attention, ShapeErrorsNameTheShapes) {
  Problem p({1, 3, 2, 8}, 1);
  const std::string heads = testing::error_of([&] {
    attention_forward({1, 3, 3, 8}, p.qkv.cview(), p.out.view(), p.probs.data());
  });
  EXPECT_TRUE(has_substr(heads, "heads 3, channels 8"));
  const std::string rows = testing::error_of([&] {
    attention_forward({2, 3, 2, 8}, p.qkv.cview(), p.out.view(), p.probs.data());
  });
  EXPECT_TRUE(has_substr(rows, "qkv is [3 x 24]"));
}

TEST(Attention, LengthErrorsNameTheRowAndValue) {
  Problem p({2, 3, 2, 8, false}, 1);
  for (const auto& [lengths, message] :
       {std::pair<std::vector<int32_t>, std::string>{{3, 0}, "lengths[1] is 0; expected 1 to seq 3"},
        {{4, 1}, "lengths[0] is 4; expected 1 to seq 3"},
        {{-2, 3}, "lengths[0] is -2"}}) {
    AttentionShape s = p.s;
    s.lengths = lengths.data();
    EXPECT_TRUE(
        has_substr(testing::error_of([&] { attention_forward(s, p.qkv.cview(), p.out.view(), p.probs.data()); }),
                   "attention_forward: " + message));
    EXPECT_TRUE(has_substr(
        testing::error_of([&] { attention_backward(s, p.dout.cview(), p.qkv.cview(), p.probs.data(), p.dqkv.view()); }),
        "attention_backward: " + message));
  }
}

}  // namespace
}  // namespace sparsetrain
