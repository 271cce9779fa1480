// balance_prefix: nnz-balanced contiguous partitions of CSR rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "scoped_setting.h"
#include "sparsetrain/core/parallel.h"

namespace sparsetrain {
namespace {

// Every partition must start at 0, end at n, never decrease, and give each part a weight within
// one row's weight of the even share.
void expect_balanced(std::span<const int32_t> prefix, int nth) {
  SCOPED_TRACE("nth=" + std::to_string(nth));
  const int64_t n = static_cast<int64_t>(prefix.size()) - 1;
  const auto bounds = balance_prefix(prefix, nth);
  ASSERT_EQ(bounds.size(), static_cast<std::size_t>(nth + 1));
  EXPECT_EQ(bounds.front(), 0);
  EXPECT_EQ(bounds.back(), n);
  int32_t heaviest = 0;
  for (int64_t i = 0; i < n; ++i) heaviest = std::max(heaviest, prefix[i + 1] - prefix[i]);
  const double share = static_cast<double>(prefix[n] - prefix[0]) / nth;
  for (int i = 0; i < nth; ++i) {
    ASSERT_LE(bounds[i], bounds[i + 1]) << "part " << i;
    const double weight = prefix[bounds[i + 1]] - prefix[bounds[i]];
    EXPECT_LE(std::abs(weight - share), heaviest + 1.0) << "part " << i << " [" << bounds[i] << ", " << bounds[i + 1] << ")";
  }
}

TEST(BalancePrefix, SplitsSkewedRowsByWeightNotByCount) {
  // Row weights 0, 100, 0, 0, 1, 1, 1, 97.
  const std::vector<int32_t> prefix = {0, 0, 100, 100, 100, 101, 102, 103, 200};
  for (int nth : {1, 2, 3, 4, 7}) expect_balanced(prefix, nth);
  const auto two = balance_prefix(prefix, 2);
  EXPECT_EQ(two[1], 2) << "the heavy first row alone is half the work";
}

TEST(BalancePrefix, UniformRowsSplitEvenly) {
  std::vector<int32_t> prefix(101);
  for (int i = 0; i <= 100; ++i) prefix[i] = 5 * i;
  const auto bounds = balance_prefix(prefix, 4);
  EXPECT_EQ(bounds, (std::vector<int64_t>{0, 25, 50, 75, 100}));
}

TEST(BalancePrefix, HandlesAnOffsetSubrangeOfARowPointer) {
  // Rows 3..9 of a larger row pointer: the prefix does not start at 0.
  const std::vector<int32_t> row_ptr = {0, 4, 9, 20, 20, 30, 31, 45, 60, 61, 80};
  const std::span<const int32_t> rows(row_ptr.data() + 3, 8);
  for (int nth : {1, 2, 3, 5}) expect_balanced(rows, nth);
}

TEST(BalancePrefix, HandlesEmptyRowsAndMorePartsThanRows) {
  const std::vector<int32_t> empty_rows = {0, 0, 0, 0, 0};
  for (int nth : {1, 3, 8}) expect_balanced(empty_rows, nth);
  const std::vector<int32_t> three = {0, 5, 6, 12};
  for (int nth : {4, 16}) expect_balanced(three, nth);
  const std::vector<int32_t> none = {7};  // no rows at all
  EXPECT_EQ(balance_prefix(none, 3), (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(BalanceEven, PartsTileTheRangeAndDifferByAtMostOne) {
  for (int nth : {1, 3, 7}) {
    int64_t expected_begin = 0;
    for (int ith = 0; ith < nth; ++ith) {
      int64_t begin, end;
      balance_even(20, ith, nth, begin, end);
      EXPECT_EQ(begin, expected_begin);
      EXPECT_LE(std::abs(static_cast<double>(end - begin) - 20.0 / nth), 1.0);
      expected_begin = end;
    }
    EXPECT_EQ(expected_begin, 20);
  }
}

// Every item is visited exactly once, in non-empty ranges of at least min_per_part items when
// there is more than one range; small inputs run as one range and an empty one not at all.
TEST(ParallelRanges, CoverEveryItemOnceInLargeEnoughRanges) {
  const testing::ThreadCount two(2);
  for (const auto& [n, min_per_part] : std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {3, 4}, {9, 4}, {100, 1}}) {
    std::vector<int> visits(static_cast<std::size_t>(n), 0);
    std::vector<std::pair<int64_t, int64_t>> ranges(2, {-1, -1});
    int calls = 0;
    parallel_ranges(n, min_per_part, [&](int64_t begin, int64_t end) {
      ranges[begin == 0 ? 0 : 1] = {begin, end};
#pragma omp atomic
      ++calls;
      for (int64_t i = begin; i < end; ++i) ++visits[static_cast<std::size_t>(i)];
    });
    EXPECT_TRUE(std::all_of(visits.begin(), visits.end(), [](int v) { return v == 1; })) << "n=" << n;
    EXPECT_EQ(calls, n == 0 ? 0 : n < 2 * min_per_part ? 1 : 2) << "n=" << n;
    if (calls == 2) {
      EXPECT_GE(ranges[0].second - ranges[0].first, min_per_part);
      EXPECT_GE(ranges[1].second - ranges[1].first, min_per_part);
    }
  }
}

}  // namespace
}  // namespace sparsetrain
