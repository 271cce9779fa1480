// The register-only multiply-add chains of peak_rate.h, written against one ISA's Simd.
#pragma once

#include <cstdint>

namespace sparsetrain::SPARSETRAIN_ISA_NS {

// 12 chains keep two FMA pipes of latency 4 busy (8 would do) and, with the two constants, fit
// AVX2's 16 registers. Each lane runs x <- x * 0.5 + seed from 0, which reaches 2 * seed.
int64_t multiply_add_chains(int64_t iterations, float seed, float* sum) {
  using Simd = SPARSETRAIN_SIMD_NS::Simd;
  constexpr int kChains = 12;
  typename Simd::V chains[kChains];
  for (auto& c : chains) c = Simd::zero();
  const auto half = Simd::bcast(0.5f), add = Simd::bcast(seed);
  for (int64_t i = 0; i < iterations; ++i)
    for (auto& c : chains) c = Simd::fma(c, half, add);
  alignas(64) float lanes[Simd::W];
  float total = 0.0f;
  for (const auto& c : chains) {
    Simd::store(lanes, c);
    for (const float lane : lanes) total += lane;
  }
  *sum = total;
  return iterations * kChains * Simd::W * 2;
}

}  // namespace sparsetrain::SPARSETRAIN_ISA_NS
