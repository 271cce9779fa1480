#pragma once
// Counter-based random numbers (Philox4x32-10, Salmon et al., SC 2011).
//
// A stream is keyed by (seed, name, stream id): the same three always give the same numbers,
// independent of thread count, call order or what other parameters exist. A parameter's random
// mask therefore depends only on its dotted name and the seed. Element i of a stream is a pure
// function of i, so parallel fills are deterministic and a generator's whole state is its counter.
#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace sparsetrain {

// FNV-1a, 64-bit: stable across platforms and releases, unlike std::hash.
constexpr uint64_t hash_name(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : name) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

class Philox {
 public:
  using Block = std::array<uint32_t, 4>;

  Philox(uint64_t seed, std::string_view name, uint64_t stream = 0)
      : key_{static_cast<uint32_t>(seed ^ hash_name(name)),
             static_cast<uint32_t>((seed ^ hash_name(name)) >> 32)},
        stream_(stream ^ (static_cast<uint64_t>(seed >> 32) * 0x9e3779b97f4a7c15ull)) {}

  // The Philox4x32-10 bijection itself (Salmon et al.): ten rounds of counter `ctr` under `key`.
  static Block rounds(Block ctr, std::array<uint32_t, 2> key) {
    for (int round = 0; round < 10; ++round) {
      uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * ctr[0];
      uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * ctr[2];
      ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<uint32_t>(p1),
             static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<uint32_t>(p0)};
      key[0] += 0x9E3779B9u;
      key[1] += 0xBB67AE85u;
    }
    return ctr;
  }

  // Four 32-bit words for counter `index` of this stream.
  Block block(uint64_t index) const {
    return rounds({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), static_cast<uint32_t>(stream_),
                   static_cast<uint32_t>(stream_ >> 32)},
                  key_);
  }

  uint32_t bits(uint64_t i) const { return block(i / 4)[i % 4]; }
  uint64_t bits64(uint64_t i) const {
    Block b = block(i / 2);
    return i % 2 == 0 ? (uint64_t{b[1]} << 32 | b[0]) : (uint64_t{b[3]} << 32 | b[2]);
  }
  // Uniform in [0, 1) with 24 random bits, exactly representable in float.
  float uniform(uint64_t i) const { return static_cast<float>(bits(i) >> 8) * 0x1.0p-24f; }
  // Uniform integer in [0, n) without modulo bias worth measuring (n << 2^64).
  uint64_t below(uint64_t i, uint64_t n) const {
    __extension__ using u128 = unsigned __int128;
    return static_cast<uint64_t>((static_cast<u128>(bits64(i)) * n) >> 64);
  }
  // Standard normal by Box-Muller on two independent uniforms.
  float normal(uint64_t i) const {
    Block b = block(i);
    double u1 = (static_cast<double>(b[0]) + 1.0) * 0x1.0p-32;
    double u2 = static_cast<double>(b[1]) * 0x1.0p-32;
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }

 private:
  std::array<uint32_t, 2> key_;
  uint64_t stream_;
};

}  // namespace sparsetrain
