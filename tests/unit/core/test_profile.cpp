// The phase profile: off, scopes record nothing; on, each phase adds up its calls and time in the
// order first entered, and a reset starts over.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "sparsetrain/core/profile.h"

namespace sparsetrain {
namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

TEST(Profile, OffRecordsNothing) {
  set_profiling(false);
  reset_profile();
  {
    const ProfileScope scope("idle");
    sleep_ms(1);
  }
  EXPECT_TRUE(profile_totals().empty());
}

TEST(Profile, AddsCallsAndTimePerPhaseInFirstEnteredOrder) {
  reset_profile();
  set_profiling(true);
  for (int i = 0; i < 3; ++i) {
    const ProfileScope scope("second");
    sleep_ms(2);
  }
  {
    const ProfileScope scope("first");
    sleep_ms(5);
  }
  set_profiling(false);
  {
    const ProfileScope scope("after");  // profiling is off again
  }
  const std::vector<PhaseTime> totals = profile_totals();
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(totals[0].phase, "second");
  EXPECT_EQ(totals[0].calls, 3);
  EXPECT_GE(totals[0].ms, 6.0);
  EXPECT_LT(totals[0].ms, 1000.0);
  EXPECT_EQ(totals[1].phase, "first");
  EXPECT_EQ(totals[1].calls, 1);
  EXPECT_GE(totals[1].ms, 5.0);
  reset_profile();
  EXPECT_TRUE(profile_totals().empty());
}

// A scope that began while profiling was off is not counted when it ends with profiling on.
TEST(Profile, AScopeCountsOnlyIfProfilingWasOnWhenItBegan) {
  set_profiling(false);
  reset_profile();
  {
    const ProfileScope scope("straddling");
    set_profiling(true);
  }
  set_profiling(false);
  EXPECT_TRUE(profile_totals().empty());
}

}  // namespace
}  // namespace sparsetrain
