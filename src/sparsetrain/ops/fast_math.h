#pragma once
// Float math the layer ops vectorize. libm's expf/exp are opaque calls that loops cannot
// vectorize, and on GPT-sized models (activations, attention and the 8192-way softmax) they
// dominate the step. Everything here is straight-line float code (selects, no branches, no
// calls) so -O3 vectorizes it at any ISA level; each result stays within a few ulp.
//
// Reductions keep a fixed number of partial sums in plain C++, so they vectorize without
// -ffast-math and give the same bits on every ISA.
#include <bit>
#include <cstdint>
#include <cstring>

namespace sparsetrain {

// c ? a : b as bit operations. A float ternary is a branch to GCC under the default
// -ftrapping-math (it will not speculate the arms), which blocks vectorization.
inline float select(bool c, float a, float b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}

// e^x for x in [-87, 88], where 2^n stays a normal float; callers clamp. x = n ln2 + r with
// |r| <= ln2 / 2, ln2 split so n * kLn2Hi is exact, then Cephes' degree-7 polynomial for e^r
// (relative error ~1e-7 on that interval). NaN propagates through r.
inline float exp_bounded(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  // Adding 1.5 * 2^23 rounds to the nearest integer and leaves it in the low mantissa bits,
  // which avoids a float-to-int conversion (undefined for NaN).
  constexpr float kRound = 12582912.0f;
  const float t = x * kLog2e + kRound;
  const float n = t - kRound;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  const float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.0f;
  // Unsigned arithmetic: for a NaN x the bits are garbage, and signed overflow would be UB.
  const uint32_t biased = std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(kRound) + 127u;
  return p * std::bit_cast<float>(biased << 23);
}

// e^x for x <= 0, as softmax needs it: below -87 the result (under 1.7e-38) is clamped there
// instead of becoming denormal; NaN propagates.
inline float exp_nonpositive(float x) { return exp_bounded(select(x < -87.0f, -87.0f, x)); }

// Rows are reduced in kFloatLanes interleaved lanes: lane l takes the entries i = l (mod 16).
// Callers step in whole lane groups (attention's softmax runs its rows on to one).
inline constexpr int kFloatLanes = 16;

// Four floats as a GCC vector type. Every x86-64 ISA has an instruction for its compare-and-select
// (maxps), so four of them make the 16 lanes at any ISA level; one 16-float vector type did so
// only where AVX-512 makes it a register: below that GCC split it into scalar compares that went
// through the stack, and on the AVX2 host that loop was a third of attention's forward pass.
// Keep such values local: a function taking or returning one changes its calling convention
// where the ISA has no register for it, and GCC warns (-Wpsabi).
using FloatQuad = float __attribute__((vector_size(4 * sizeof(float))));

// The largest of x[0..n), n >= 1. A NaN in x may or may not come out; softmax callers get NaN
// from their sums either way. Lanes in order, then the tail: the same result on every ISA.
inline float row_max(const float* x, int64_t n) {
  constexpr int kQuads = kFloatLanes / 4;
  FloatQuad lanes[kQuads];
  for (auto& q : lanes) q = FloatQuad{} + x[0];
  int64_t i = 0;
  for (; i + kFloatLanes <= n; i += kFloatLanes)
    for (int q = 0; q < kQuads; ++q) {
      FloatQuad v;
      std::memcpy(&v, x + i + 4 * q, sizeof v);
      lanes[q] = v > lanes[q] ? v : lanes[q];
    }
  float m = lanes[0][0];
  for (int l = 1; l < kFloatLanes; ++l) m = select(lanes[l / 4][l % 4] > m, lanes[l / 4][l % 4], m);
  for (; i < n; ++i) m = select(x[i] > m, x[i], m);
  return m;
}

// Sum over i in [0, n) of term(i) (a double) in 8 interleaved partial sums, added up lane by lane,
// then the tail in order: the fixed order that vectorizes and gives the same bits on every ISA.
template <typename Term>
inline double lane_sum(int64_t n, Term term) {
  constexpr int kLanes = 8;
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += term(i + l);
  double sum = 0.0;
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  for (; i < n; ++i) sum += term(i);
  return sum;
}

// The sum of x[0..n) in double.
inline double row_sum(const float* x, int64_t n) {
  return lane_sum(n, [x](int64_t i) { return static_cast<double>(x[i]); });
}

// The dot product of x[0..n) and y[0..n) in double.
inline double row_dot_product(const float* x, const float* y, int64_t n) {
  return lane_sum(n, [x, y](int64_t i) { return static_cast<double>(x[i]) * static_cast<double>(y[i]); });
}

// Sum over i of (x[i] - m)^2 in double.
inline double row_sum_squared_deviation(const float* x, int64_t n, double m) {
  return lane_sum(n, [x, m](int64_t i) {
    const double d = static_cast<double>(x[i]) - m;
    return d * d;
  });
}

}  // namespace sparsetrain
