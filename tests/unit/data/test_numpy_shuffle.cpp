#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "error_of.h"
#include "sparsetrain/data/numpy_shuffle.h"

namespace sparsetrain {
namespace {

// One line of numpy_shuffle_fixture.txt (written by make_numpy_shuffle_fixture.py with numpy):
// the first k entries of the permutation of 0..n-1 at `position` in the stream seeded by `seed`.
struct Expected {
  uint32_t seed = 0;
  std::size_t position = 0;
  int64_t n = 0;
  std::vector<int64_t> prefix;
};

std::vector<Expected> read_fixture() {
  std::ifstream in(SPARSETRAIN_NUMPY_SHUFFLE_FIXTURE);
  EXPECT_TRUE(in) << "cannot open " << SPARSETRAIN_NUMPY_SHUFFLE_FIXTURE;
  std::vector<Expected> cases;
  for (std::string line; std::getline(in, line);) {
    std::istringstream s(line);
    Expected e;
    std::size_t k = 0;
    char colon = 0;
    s >> e.seed >> e.position >> e.n >> k >> colon;
    EXPECT_EQ(colon, ':') << line;
    e.prefix.resize(k);
    for (int64_t& i : e.prefix) s >> i;
    EXPECT_FALSE(s.fail()) << line;
    cases.push_back(std::move(e));
  }
  return cases;
}

TEST(NumpyShuffle, MatchesNumpysLegacyGenerator) {
  const std::vector<Expected> cases = read_fixture();
  ASSERT_EQ(cases.size(), 8u);
  std::map<uint32_t, std::vector<const Expected*>> by_seed;
  for (const Expected& e : cases) by_seed[e.seed].push_back(&e);
  for (const auto& [seed, list] : by_seed) {
    std::vector<int64_t> sizes;
    for (const Expected* e : list) sizes.push_back(e->n);
    const std::vector<std::vector<int64_t>> got = numpy_legacy_shuffles(sizes, seed);
    ASSERT_EQ(got.size(), list.size());
    for (const Expected* e : list) {
      const std::vector<int64_t>& order = got[e->position];
      ASSERT_EQ(static_cast<int64_t>(order.size()), e->n);
      const std::vector<int64_t> prefix(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(e->prefix.size()));
      EXPECT_EQ(prefix, e->prefix) << "seed " << seed << ", permutation " << e->position << " of n = " << e->n;
      std::vector<int64_t> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      for (int64_t i = 0; i < e->n; ++i) ASSERT_EQ(sorted[static_cast<std::size_t>(i)], i) << "not a permutation";
    }
  }
}

TEST(NumpyShuffle, TheSecondPermutationContinuesTheFirstsStream) {
  const std::vector<int64_t> both = {60000, 10000}, alone = {10000};
  EXPECT_NE(numpy_legacy_shuffles(both, 0)[1], numpy_legacy_shuffles(alone, 0)[0]);
}

TEST(NumpyShuffle, RejectsSizesItCannotMatch) {
  const std::vector<int64_t> negative = {5, -1};
  EXPECT_EQ(testing::error_of([&] { numpy_legacy_shuffles(negative, 0); }),
            "numpy_legacy_shuffles: n = -1: expected 0 <= n <= 2^32 (numpy draws wider intervals differently)");
}

}  // namespace
}  // namespace sparsetrain
