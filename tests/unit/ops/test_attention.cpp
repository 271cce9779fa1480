// Self-attention, causal and bidirectional, with and without padding, in float32 and bf16, against
// a float64 reference: outputs, saved probabilities (layout probs[((b*H + h)*T + t)*T + s]), the
// backward pass analytically and by central differences, strided views, causality under a
// non-finite future token, padding under non-finite padded keys and values, thread-count
// independence and the errors for bad shapes and lengths. In bf16 on a CPU with AVX512-BF16 the
// reference rounds every product's operands to bf16 as the kernels do; each kernel is also checked
// alone against the float64 products of rounded operands, as is the bf16 oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "layer_ops_testing.h"
#include "sparsetrain/core/bf16.h"
#include "sparsetrain/kernels/attention_kernels.h"
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

// An operand of a product as the kernels see it: rounded to bf16 (from float) when `round`.
double operand(double v, bool round) { return round ? round_bf16(static_cast<float>(v)) : v; }

// The kernels round the products' operands in bf16 precision where the CPU has AVX512-BF16; the
// float32 entries run elsewhere.
bool rounds(const AttentionShape& s) { return s.precision == Precision::Bf16 && isa_usable(CpuIsa::Avx512Bf16); }

// qkv dense [B*T x 3C] in float64.
AttRef att_forward_ref(const AttentionShape& s, const std::vector<double>& qkv) {
  const bool r16 = rounds(s);
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
          for (int64_t d = 0; d < D; ++d) dot += operand(q[d], r16) * operand(k[d], r16);
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
          for (int64_t d = 0; d < D; ++d) o[d] += operand(p[j], r16) * operand(v[d], r16);
        }
      }
  return r;
}

// dqkv dense [B*T x 3C] from dout dense [B*T x C].
std::vector<double> att_backward_ref(const AttentionShape& s, const std::vector<double>& dout,
                                     const std::vector<double>& qkv) {
  const int64_t B = s.batch, T = s.seq, H = s.heads, C = s.channels, D = s.head_dim();
  const AttRef f = att_forward_ref(s, qkv);
  const bool r16 = rounds(s);
  const auto rd = [r16](double v) { return operand(v, r16); };
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
          for (int64_t d = 0; d < D; ++d) dp += rd(dy[d]) * rd(qkv[at(b, j, 2, h) + d]);
          ds[j] = dp;
          dot += p[j] * dp;
          for (int64_t d = 0; d < D; ++d) dqkv[at(b, j, 2, h) + d] += rd(p[j]) * rd(dy[d]);  // dv
        }
        for (int64_t j = 0; j < n; ++j) {
          const double g = rd(p[j] * (ds[j] - dot));
          for (int64_t d = 0; d < D; ++d) {
            dqkv[at(b, t, 0, h) + d] += g * rd(qkv[at(b, j, 1, h) + d]) * scale;  // dq
            dqkv[at(b, j, 1, h) + d] += g * rd(qkv[at(b, t, 0, h) + d]) * scale;  // dk
          }
        }
      }
  return dqkv;
}

AttentionShape with_precision(AttentionShape s, Precision precision) {
  s.precision = precision;
  return s;
}

struct Problem {
  AttentionShape s;
  Padded qkv, out, dout, dqkv;
  std::vector<float> probs;

  Problem(AttentionShape shape, uint64_t seed, Precision precision = Precision::Fp32)
      : s(with_precision(shape, precision)),
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

std::string name_of(const AttentionShape& s, CpuIsa isa) {
  return name_of(s) + " isa " + std::string(isa_name(isa)) + " " + std::string(precision_name(s.precision));
}

const Precision kPrecisions[] = {Precision::Fp32, Precision::Bf16};

// check(p.s, p) for every precision, usable kernel ISA and shape, with p after its forward pass
// and the ISA still capped (so a backward pass in check runs on it too).
template <class Check>
void on_every_isa_and_shape(Check check) {
  const std::vector<AttentionShape> shapes = all_shapes();
  for (Precision precision : kPrecisions)
    for (CpuIsa isa : usable_isas())
      for (const AttentionShape& shape : shapes) {
        const IsaCap cap(isa);
        Problem p(shape, static_cast<uint64_t>(shape.seq * 1000 + shape.channels), precision);
        SCOPED_TRACE(name_of(p.s, isa));
        p.forward();
        check(p.s, p);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

// Tolerances: float32 accumulation, or in bf16 the roundings of intermediate values (a
// probability or a score gradient) the float64 reference may round the other way, by at most
// half a bf16 step (2^-9 of its magnitude).
double out_tolerance(const AttentionShape& s) { return rounds(s) ? kBf16Epsilon : 1e-6; }

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
        ASSERT_TRUE(close(p.out.at(r, c), ref.out[static_cast<size_t>(r * s.channels + c)], 1e-5, out_tolerance(s)))
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
        ASSERT_TRUE(close(p.dqkv.at(r, c), ref[static_cast<size_t>(r * p.dqkv.cols + c)], 1e-4,
                          (rounds(s) ? kBf16Epsilon : 1e-5) * scale))
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
  for (Precision precision : kPrecisions)
    for (CpuIsa isa : usable_isas())
      for (AttentionShape s : {AttentionShape{2, 40, 2, 8}, AttentionShape{2, 40, 2, 40}, AttentionShape{1, 70, 1, 64},
                               AttentionShape{2, 33, 1, 20}}) {
        s.precision = precision;
        SCOPED_TRACE(name_of(s, isa));
        const IsaCap cap(isa);
        Problem p(s, 3, precision);
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
  for (Precision precision : kPrecisions)
    for (CpuIsa isa : usable_isas())
      for (const Padding& padding : kPadded) {
        const AttentionShape s = with_precision(padding.shape(), precision);
        if (s.lengths == nullptr) continue;
        SCOPED_TRACE(name_of(s, isa));
        const IsaCap cap(isa);
        Problem clean(s, 11, precision), poisoned(s, 11, precision);
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
    for (Precision precision : kPrecisions) {
      SCOPED_TRACE(name_of(with_precision(s, precision)));
      auto run = [&](int threads) {
        ThreadCount guard(threads);
        Problem p(s, 5, precision);
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
}

// One product kernel's inputs: A and B (scores), P and X (rows, cols), with NaN wherever the
// contract says the kernel does not read: P past end(t), keys and values past L.
struct KernelProblem {
  int64_t T, D;
  AttentionMask m;
  int64_t ld, ldp;
  std::vector<float> a, b, p, x;

  KernelProblem(int64_t t, int64_t d, AttentionMask mask, uint64_t seed)
      : T(t), D(d), m(mask), ld(d + 3), ldp(attention_score_stride(t) + 5) {
    for (auto* v : {&a, &b, &x}) v->assign(static_cast<size_t>(T * ld), kNaN);
    p.assign(static_cast<size_t>(T * ldp), kNaN);
    const Philox rng(seed, "att.kernel");
    uint64_t i = 0;
    auto draw = [&] { return rng.uniform(i++) * 2.0f - 1.0f; };
    for (int64_t r = 0; r < T; ++r) {
      for (int64_t c = 0; c < D; ++c) {
        a[static_cast<size_t>(r * ld + c)] = draw();
        if (r < m.keys) b[static_cast<size_t>(r * ld + c)] = draw();
        x[static_cast<size_t>(r * ld + c)] = draw();
      }
      for (int64_t j = 0; j < m.end(r); ++j) p[static_cast<size_t>(r * ldp + j)] = draw() * 0.5f + 0.5f;
    }
  }
  double at(const std::vector<float>& v, int64_t r, int64_t c, int64_t stride) const {
    return round_bf16(v[static_cast<size_t>(r * stride + c)]);
  }
};

// got against the float64 sum of `terms` products of rounded operands: within float32
// accumulation of the sum of their magnitudes.
::testing::AssertionResult sum_close(float got, double want, double magnitude) {
  return close(got, want, 0.0, 2e-6 * magnitude + 1e-30);
}

void expect_bf16_products(const KernelProblem& k, const AttentionKernels& kernel) {
  const int64_t T = k.T, D = k.D, lds = attention_score_stride(T);
  const float alpha = 0.75f;
  std::vector<float> s(static_cast<size_t>(T * lds), kNaN);
  kernel.scores(T, D, k.m, alpha, k.a.data(), k.ld, k.b.data(), k.ld, s.data(), lds);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k.m.end(t); ++j) {
      double want = 0.0, magnitude = 0.0;
      for (int64_t d = 0; d < D; ++d) {
        const double term = k.at(k.a, t, d, k.ld) * k.at(k.b, j, d, k.ld);
        want += term;
        magnitude += std::abs(term);
      }
      ASSERT_TRUE(sum_close(s[static_cast<size_t>(t * lds + j)], alpha * want, alpha * magnitude))
          << "scores t=" << t << " s=" << j;
    }
  std::vector<float> y(static_cast<size_t>(T * k.ld), kNaN);
  kernel.rows(T, D, k.m, alpha, k.p.data(), k.ldp, k.x.data(), k.ld, y.data(), k.ld);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < D; ++d) {
      double want = 0.0, magnitude = 0.0;
      for (int64_t j = 0; j < k.m.end(t); ++j) {
        const double term = k.at(k.p, t, j, k.ldp) * k.at(k.x, j, d, k.ld);
        want += term;
        magnitude += std::abs(term);
      }
      ASSERT_TRUE(sum_close(y[static_cast<size_t>(t * k.ld + d)], alpha * want, alpha * magnitude))
          << "rows t=" << t << " d=" << d;
    }
  std::fill(y.begin(), y.end(), kNaN);
  kernel.cols(T, D, k.m, alpha, k.p.data(), k.ldp, k.x.data(), k.ld, y.data(), k.ld);
  for (int64_t j = 0; j < T; ++j)
    for (int64_t d = 0; d < D; ++d) {
      double want = 0.0, magnitude = 0.0;
      for (int64_t t = 0; t < T; ++t) {
        if (j >= k.m.end(t)) continue;
        const double term = k.at(k.p, t, j, k.ldp) * k.at(k.x, t, d, k.ld);
        want += term;
        magnitude += std::abs(term);
      }
      ASSERT_TRUE(sum_close(y[static_cast<size_t>(j * k.ld + d)], alpha * want, alpha * magnitude))
          << "cols s=" << j << " d=" << d;
    }
}

// The bf16 products alone, and the bf16 oracle, against float64 sums of the rounded operands: T
// and D odd and even, below, at and past the 16-lane vectors, 6-row blocks and 64-token chunks;
// causal and bidirectional, with L from 1 to T. Without AVX512-BF16 the bf16 list is the float32
// one.
TEST(AttentionKernels, Bf16ProductsMatchFloat64OnRoundedOperands) {
  const AttentionKernels oracle{ref::attention_scores_bf16, ref::attention_rows_bf16, ref::attention_cols_bf16};
  const bool vector = cpu_isa() >= CpuIsa::Avx512Bf16;
  for (const int64_t T : {1, 2, 7, 16, 17, 33, 70, 130})
    for (const int64_t D : {1, 5, 16, 20, 33, 64, 84})
      for (const bool causal : {true, false})
        for (const int64_t L : {int64_t{1}, T / 2 + 1, T}) {
          SCOPED_TRACE("T=" + std::to_string(T) + " D=" + std::to_string(D) + " L=" + std::to_string(L) +
                       (causal ? " causal" : " bidirectional"));
          const KernelProblem k(T, D, {L, causal}, static_cast<uint64_t>(T * 1000 + D * 10 + L));
          expect_bf16_products(k, oracle);
          if (vector) {
            const IsaCap cap(CpuIsa::Avx512Bf16);
            expect_bf16_products(k, attention_kernels(D, Precision::Bf16));
          }
          if (::testing::Test::HasFatalFailure()) return;
        }
  if (!vector) {
    const AttentionKernels bf16 = attention_kernels(64, Precision::Bf16), fp32 = attention_kernels(64);
    EXPECT_EQ(bf16.scores, fp32.scores);
    EXPECT_EQ(bf16.rows, fp32.rows);
    EXPECT_EQ(bf16.cols, fp32.cols);
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
