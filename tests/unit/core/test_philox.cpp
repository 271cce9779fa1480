// Philox4x32-10: the raw cipher against Random123's published known answers, and the keyed
// streams built on it (seed, parameter name, stream id).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <set>
#include <vector>

#include "sparsetrain/core/philox.h"

namespace sparsetrain {
namespace {

using Block = Philox::Block;

std::vector<uint32_t> first_bits(const Philox& p, uint64_t n = 64) {
  std::vector<uint32_t> v;
  for (uint64_t i = 0; i < n; ++i) v.push_back(p.bits(i));
  return v;
}

TEST(Philox, RoundsMatchRandom123KnownAnswers) {
  // kat_vectors, philox4x32 10: counter, key -> output.
  EXPECT_EQ(Philox::rounds(Block{0, 0, 0, 0}, {0, 0}), (Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox::rounds(Block{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Philox::rounds(Block{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, BlockEnciphersIndexAndStreamUnderTheNameKey) {
  // Seed 0: the key is the name's hash and the counter is (index, stream), low words first.
  const uint64_t h = hash_name("h.0.mlp.c_fc.weight");
  const std::array<uint32_t, 2> key = {static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32)};
  const Philox p(0, "h.0.mlp.c_fc.weight", 0x500000003ull);
  for (uint64_t index : {0ull, 1ull, 0x123456789abull}) {
    const Block ctr = {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 3u, 5u};
    EXPECT_EQ(p.block(index), Philox::rounds(ctr, key)) << "index " << index;
  }
  EXPECT_EQ(p.bits(9), p.block(2)[1]);
}

TEST(Philox, SameKeyGivesTheSameNumbersInAnyOrder) {
  const Philox a(42, "h.0.attn.c_attn.weight", 3), b(42, "h.0.attn.c_attn.weight", 3);
  std::vector<uint32_t> backward(1000);
  for (uint64_t i = 1000; i-- > 0;) backward[i] = b.bits(i);
  EXPECT_EQ(first_bits(a, 1000), backward);
}

TEST(Philox, SeedNameAndStreamEachChangeTheNumbers) {
  const auto base = first_bits(Philox(1, "fc1.weight", 0));
  EXPECT_NE(base, first_bits(Philox(2, "fc1.weight", 0)));
  EXPECT_NE(base, first_bits(Philox(1, "fc2.weight", 0)));
  EXPECT_NE(base, first_bits(Philox(1, "fc1.weight", 1)));
  EXPECT_NE(base, first_bits(Philox(1ull << 32 | 1, "fc1.weight", 0)));  // high seed bits count
}

TEST(Philox, UniformIsInUnitIntervalAndBelowIsInRange) {
  const Philox p(7, "x");
  double sum = 0;
  std::set<uint64_t> seen;
  for (uint64_t i = 0; i < 20000; ++i) {
    const float u = p.uniform(i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    const uint64_t k = p.below(i, 10);
    ASSERT_LT(k, 10u);
    seen.insert(k);
    ASSERT_EQ(p.below(i, 1), 0u);
  }
  EXPECT_NEAR(sum / 20000, 0.5, 0.01);
  EXPECT_EQ(seen.size(), 10u) << "below(i, 10) should reach every value";
}

TEST(Philox, NormalHasZeroMeanAndUnitVariance) {
  const Philox p(9, "n");
  double sum = 0, sq = 0;
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    const double z = p.normal(static_cast<uint64_t>(i));
    sum += z;
    sq += z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.02);
  EXPECT_NEAR(sq / n, 1.0, 0.03);
}

}  // namespace
}  // namespace sparsetrain
