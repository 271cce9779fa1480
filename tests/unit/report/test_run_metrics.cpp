// Reading metrics.jsonl for figures: rows by split, null losses kept as missing, a line cut short
// by a killed run ignored at the end but an error in the middle, and FLOPs and training seconds
// for eval rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "error_of.h"
#include "sparsetrain/report/run_metrics.h"

namespace sparsetrain {
namespace {

using testing::error_of;

const std::string kTrain1 = R"({"step":50,"split":"train","loss":3.28,"lr":0.003,"flops_actual":3.2e11})";
const std::string kTrain2 = R"({"step":100,"split":"train","loss":2.9,"flops_actual":6.4e11})";
const std::string kEval = R"({"step":100,"split":"eval","loss":2.46,"perplexity":11.7})";

TEST(RunMetrics, SplitsRowsAndKeepsStepsLossesAndFlops) {
  const RunMetrics m = parse_run_metrics(kTrain1 + "\n" + kTrain2 + "\n" + kEval + "\n", "m.jsonl");
  ASSERT_EQ(m.train.size(), 2u);
  ASSERT_EQ(m.eval.size(), 1u);
  EXPECT_EQ(m.train[1].step, 100);
  EXPECT_DOUBLE_EQ(*m.train[0].loss, 3.28);
  EXPECT_DOUBLE_EQ(*m.train[1].flops_actual, 6.4e11);
  EXPECT_DOUBLE_EQ(*m.eval[0].loss, 2.46);
  EXPECT_FALSE(m.eval[0].flops_actual.has_value());
}

TEST(RunMetrics, ATruncatedLastLineIsIgnored) {
  const std::string text = kTrain1 + "\n" + kTrain2 + "\n" + R"({"step":150,"split":"tra)";
  const RunMetrics m = parse_run_metrics(text, "m.jsonl");
  EXPECT_EQ(m.train.size(), 2u);
  // A complete last row without its newline is a row.
  EXPECT_EQ(parse_run_metrics(kTrain1 + "\n" + kTrain2, "m.jsonl").train.size(), 2u);
}

TEST(RunMetrics, ABadLineInTheMiddleIsAnErrorNamingTheLine) {
  const std::string text = kTrain1 + "\n" + R"({"step":150,"split":"tra)" + "\n" + kTrain2 + "\n";
  EXPECT_EQ(error_of([&] { parse_run_metrics(text, "runs/a/metrics.jsonl"); }),
            "runs/a/metrics.jsonl:2: not valid JSON; expected one JSON object per line");
  // A bad last line that has its newline was written whole: an error too.
  EXPECT_EQ(error_of([&] { parse_run_metrics(kTrain1 + "\nnot json\n", "m.jsonl"); }),
            "m.jsonl:2: not valid JSON; expected one JSON object per line");
}

TEST(RunMetrics, BadKeysAreErrorsNamingLineAndKey) {
  EXPECT_EQ(error_of([&] { parse_run_metrics(kTrain1 + "\n\n" + R"({"split":"train","loss":1})" + "\n", "m"); }),
            "m:3: \"step\" is missing; expected an integer >= 0");
  EXPECT_EQ(error_of([&] { parse_run_metrics(R"({"step":"5","split":"eval","loss":1})", "m"); }),
            "m:1: \"step\" is \"5\"; expected an integer >= 0");
  EXPECT_EQ(error_of([&] { parse_run_metrics(R"({"step":5,"loss":1})", "m"); }),
            "m:1: \"split\" is missing; expected a string such as \"train\" or \"eval\"");
  EXPECT_EQ(error_of([&] { parse_run_metrics(R"({"step":5,"split":"train","loss":"low"})", "m"); }),
            "m:1: \"loss\" is \"low\"; expected a number or null");
  EXPECT_EQ(error_of([&] { parse_run_metrics(R"({"step":5,"split":"train","loss":1,"ms_per_step":"9"})", "m"); }),
            "m:1: \"ms_per_step\" is \"9\"; expected a number or null");
  EXPECT_EQ(error_of([&] { parse_run_metrics(R"({"step":5,"split":"train"})", "m"); }),
            "m:1: no \"loss\"; expected a number or null");
  EXPECT_EQ(error_of([&] { parse_run_metrics("[1,2]\n", "m"); }),
            "m:1: [1,2] is not a JSON object; expected one object per line");
}

TEST(RunMetrics, NullLossesAreMissingAndOtherSplitsPassedOver) {
  const std::string text = kTrain1 + "\n" +
                           R"({"step":60,"split":"train","loss":null,"nonfinite":true,"flops_actual":4e11})" + "\n" +
                           R"({"step":60,"split":"test","anything":[1]})" + "\n";
  const RunMetrics m = parse_run_metrics(text, "m");
  ASSERT_EQ(m.train.size(), 2u);
  EXPECT_FALSE(m.train[1].loss.has_value());
  EXPECT_DOUBLE_EQ(*m.train[1].flops_actual, 4e11);
  EXPECT_TRUE(m.eval.empty());
}

TEST(FlopsAtStep, TheLastTrainRowAtOrBeforeTheStep) {
  const RunMetrics m = parse_run_metrics(kTrain1 + "\n" + kTrain2 + "\n", "m");
  EXPECT_FALSE(flops_at_step(m.train, 49).has_value());  // before any train row
  EXPECT_DOUBLE_EQ(*flops_at_step(m.train, 50), 3.2e11);
  EXPECT_DOUBLE_EQ(*flops_at_step(m.train, 99), 3.2e11);
  EXPECT_DOUBLE_EQ(*flops_at_step(m.train, 100), 6.4e11);
  EXPECT_DOUBLE_EQ(*flops_at_step(m.train, 1000), 6.4e11);
}

TEST(SecondsAtStep, EachRowsStepTimeOverTheStepsSinceTheRowBefore) {
  // Written out of step order, as nothing promises; rows every 10 steps but the first after 4.
  const std::vector<std::pair<int64_t, double>> rows = {{14, 200.0}, {4, 1500.0}, {34, 180.0}, {24, 250.0}};
  std::string text;
  for (const auto& [step, ms] : rows)
    text += R"({"step":)" + std::to_string(step) + R"(,"split":"train","loss":2,"ms_per_step":)" + std::to_string(ms) +
            "}\n";
  const RunMetrics m = parse_run_metrics(text, "m");
  EXPECT_DOUBLE_EQ(*m.train[0].ms_per_step, 200.0);
  // The reference: every step's own time summed step by step, up to the last row at or before the
  // step (between rows, the time of the row before, as for FLOPs).
  auto step_ms = [](int64_t s) { return s <= 4 ? 1500.0 : s <= 14 ? 200.0 : s <= 24 ? 250.0 : 180.0; };
  auto reference = [&](int64_t step) {
    int64_t at = 0;
    for (const auto& row : rows)
      if (row.first <= step) at = std::max(at, row.first);
    double ms = 0.0;
    for (int64_t s = 1; s <= at; ++s) ms += step_ms(s);
    return ms / 1000.0;
  };
  for (int64_t step : {4, 13, 14, 24, 33, 34, 500})
    EXPECT_NEAR(*seconds_at_step(m.train, step), reference(step), 1e-12) << step;
  EXPECT_FALSE(seconds_at_step(m.train, 3).has_value());  // before any train row
  // A row without a step time (null: it was not finite) leaves the time from it on unknown.
  const RunMetrics gap = parse_run_metrics(text + R"({"step":44,"split":"train","loss":2,"ms_per_step":null})" + "\n" +
                                               R"({"step":54,"split":"train","loss":2,"ms_per_step":100})" + "\n",
                                           "m");
  EXPECT_NEAR(*seconds_at_step(gap.train, 34), reference(34), 1e-12);
  EXPECT_FALSE(seconds_at_step(gap.train, 54).has_value());
}

}  // namespace
}  // namespace sparsetrain
