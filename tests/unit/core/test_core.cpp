// Building blocks: the keyed counter-based RNG, aligned buffers, work partitioning, ISA caps.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/error.h"
#include "core/isa.h"
#include "core/parallel.h"
#include "core/philox.h"

namespace sparsetrain {
namespace {

TEST(Philox, RoundsMatchThePublishedKnownAnswers) {
  // Random123's kat_vectors for philox4x32_10.
  using B = Philox::Block;
  EXPECT_EQ(Philox::rounds(B{0, 0, 0, 0}, {0, 0}), (B{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox::rounds(B{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (B{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Philox::rounds(B{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (B{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, SameKeySameStreamGivesTheSameNumbersInAnyOrder) {
  Philox a(42, "h.0.attn.c_attn.weight", 3), b(42, "h.0.attn.c_attn.weight", 3);
  std::vector<uint32_t> forward, backward(1000);
  for (uint64_t i = 0; i < 1000; ++i) forward.push_back(a.bits(i));
  for (uint64_t i = 1000; i-- > 0;) backward[i] = b.bits(i);
  EXPECT_EQ(forward, backward);
}

TEST(Philox, SeedNameAndStreamEachChangeTheNumbers) {
  auto first = [](const Philox& p) {
    std::vector<uint32_t> v;
    for (uint64_t i = 0; i < 64; ++i) v.push_back(p.bits(i));
    return v;
  };
  const auto base = first(Philox(1, "fc1.weight", 0));
  EXPECT_NE(base, first(Philox(2, "fc1.weight", 0)));
  EXPECT_NE(base, first(Philox(1, "fc2.weight", 0)));
  EXPECT_NE(base, first(Philox(1, "fc1.weight", 1)));
  EXPECT_NE(base, first(Philox(1ull << 32 | 1, "fc1.weight", 0)));  // high seed bits matter
}

TEST(Philox, UniformAndBelowStayInRangeAndCoverIt) {
  Philox p(7, "x");
  double sum = 0;
  std::set<uint64_t> seen;
  for (uint64_t i = 0; i < 20000; ++i) {
    float u = p.uniform(i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    uint64_t k = p.below(i, 10);
    ASSERT_LT(k, 10u);
    seen.insert(k);
  }
  EXPECT_NEAR(sum / 20000, 0.5, 0.01);
  EXPECT_EQ(seen.size(), 10u);
}

TEST(Philox, NormalHasUnitMoments) {
  Philox p(9, "n");
  double sum = 0, sq = 0;
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    double z = p.normal(static_cast<uint64_t>(i));
    sum += z;
    sq += z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.02);
  EXPECT_NEAR(sq / n, 1.0, 0.03);
}

TEST(AlignedBuffer, IsAlignedKeepsDataOnGrowthAndDoesNotMoveWithinCapacity) {
  AlignedBuffer<float> b(37);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kAlignment, 0u);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i) + 0.5f;
  b.reserve(1000);
  const float* stable = b.data();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(stable) % kAlignment, 0u);
  for (std::size_t i = 0; i < 37; ++i) ASSERT_EQ(b[i], static_cast<float>(i) + 0.5f);
  b.resize(900);
  b.resize(10);
  b.resize(1000);
  EXPECT_EQ(b.data(), stable);
  EXPECT_EQ(b.capacity(), 1000u);
}

TEST(Parallel, BalancePrefixSplitsByWeightAndCoversEveryItem) {
  // Row lengths 0, 100, 0, 0, 1, 1, 1, 97 (a skewed CSR row pointer).
  const std::vector<int32_t> prefix = {0, 0, 100, 100, 100, 101, 102, 103, 200};
  for (int nth : {1, 2, 3, 8, 20}) {
    auto b = balance_prefix(prefix, nth);
    ASSERT_EQ(b.size(), static_cast<std::size_t>(nth + 1));
    EXPECT_EQ(b.front(), 0);
    EXPECT_EQ(b.back(), 8);
    for (int i = 0; i < nth; ++i) ASSERT_LE(b[i], b[i + 1]) << "nth=" << nth;
  }
  auto two = balance_prefix(prefix, 2);
  const int64_t first = prefix[two[1]] - prefix[0];
  EXPECT_GE(first, 90);
  EXPECT_LE(first, 110) << "the two halves should carry about 100 each";
}

TEST(Isa, ParseAcceptsTheThreeNamesAndRejectsOthersNamingTheSource) {
  EXPECT_EQ(parse_isa("avx512", "t"), CpuIsa::Avx512);
  EXPECT_EQ(parse_isa("avx2", "t"), CpuIsa::Avx2);
  EXPECT_EQ(parse_isa("ref", "t"), CpuIsa::Ref);
  try {
    parse_isa("sse9", "SPARSETRAIN_MAX_ISA");
    FAIL() << "sse9 accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("SPARSETRAIN_MAX_ISA"), std::string::npos) << what;
    EXPECT_NE(what.find("sse9"), std::string::npos) << what;
  }
}

TEST(Isa, CapLimitsTheEffectiveIsa) {
  const CpuIsa saved = max_isa();
  set_max_isa(CpuIsa::Ref);
  EXPECT_EQ(effective_isa(), CpuIsa::Ref);
  EXPECT_FALSE(isa_usable(CpuIsa::Avx2));
  set_max_isa(CpuIsa::Avx512);
  EXPECT_EQ(effective_isa(), cpu_isa());
  set_max_isa(saved);
}

}  // namespace
}  // namespace sparsetrain
