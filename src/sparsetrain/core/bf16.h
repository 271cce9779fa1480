#pragma once
// bfloat16: the upper 16 bits of an IEEE float32 (8-bit exponent, 8-bit significand with the
// implicit bit). The storage type of mixed-precision operands; every product of two of them is
// accumulated in float32.
//
// Conversion from float rounds to nearest, ties to even, as vcvtneps2bf16 does; a NaN stays a
// quiet NaN of the same sign. Conversion to float is exact.
#include <bit>
#include <cstdint>

namespace sparsetrain {

struct Bf16 {
  uint16_t bits = 0;
};
static_assert(sizeof(Bf16) == 2);

inline Bf16 to_bf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return Bf16{static_cast<uint16_t>((u >> 16) | 0x40u)};
  const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return Bf16{static_cast<uint16_t>(rounded >> 16)};
}

inline float to_float(Bf16 h) { return std::bit_cast<float>(static_cast<uint32_t>(h.bits) << 16); }
// The identity, so code written for either value type reads both.
inline float to_float(float f) { return f; }

// f rounded to the nearest bf16, as a float.
inline float round_bf16(float f) { return to_float(to_bf16(f)); }

// Relative spacing of bf16 values: 2^-8 (8 significand bits), so rounding moves a value by at
// most half of it, 2^-9 of its magnitude.
inline constexpr double kBf16Epsilon = 1.0 / 256.0;

// dst[i] = to_bf16(src[i]) and back, over n elements; parallel over the OpenMP pool when n is
// large.
void to_bf16(const float* src, Bf16* dst, int64_t n);
void to_float(const Bf16* src, float* dst, int64_t n);

}  // namespace sparsetrain
