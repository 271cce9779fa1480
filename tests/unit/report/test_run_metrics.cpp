// Reading metrics.jsonl for figures: rows by split, null losses kept as missing, a line cut short
// by a killed run ignored at the end but an error in the middle, and FLOPs for eval rows.
#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace sparsetrain
