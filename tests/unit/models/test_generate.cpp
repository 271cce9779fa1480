// Sampling the next token (top-k at a temperature, by inverting the cumulative weights at a
// uniform draw) against probabilities computed directly in float64, and whole continuations of a
// tiny GPT: greedy is the argmax of the window's logits, the window slides past the context, and
// the seed fixes a sample.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "error_of.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/models/generate.h"
#include "tiny_gpt.h"

namespace sparsetrain {
namespace {

using testing::error_of;

// ln of the weights 1, 2, 3, 0.5, 3: ids 2 and 4 tie, so the order is 2, 4, 1, 0, 3.
std::vector<float> five_logits() { return {0.0f, std::log(2.0f), std::log(3.0f), std::log(0.5f), std::log(3.0f)}; }

SamplingOptions sampling(double temperature, int64_t top_k) {
  SamplingOptions o;
  o.temperature = temperature;
  o.top_k = top_k;
  return o;
}

TEST(SampleToken, HandPickedDrawsLandOnTheirTokens) {
  const std::vector<float> logits = five_logits();
  // Temperature 1, all tokens: cumulative 3, 6, 8, 9, 9.5 of 9.5.
  const SamplingOptions all = sampling(1.0, 0);
  EXPECT_EQ(sample_token(logits, all, 0.10f), 2);
  EXPECT_EQ(sample_token(logits, all, 0.50f), 4);
  EXPECT_EQ(sample_token(logits, all, 0.70f), 1);
  EXPECT_EQ(sample_token(logits, all, 0.90f), 0);
  EXPECT_EQ(sample_token(logits, all, 0.99f), 3);
  // The two likeliest only: 3 and 3 of 6.
  EXPECT_EQ(sample_token(logits, sampling(1.0, 2), 0.49f), 2);
  EXPECT_EQ(sample_token(logits, sampling(1.0, 2), 0.51f), 4);
  EXPECT_EQ(sample_token(logits, sampling(1.0, 2), 0.5f), 4);  // intervals are half-open: [0.5, 1)
  // Temperature 0.5 squares the weights: 9, 9, 4, 1, 0.25 of 23.25.
  EXPECT_EQ(sample_token(logits, sampling(0.5, 0), 0.95f), 0);
  EXPECT_EQ(sample_token(logits, sampling(0.5, 0), 0.995f), 3);
  // Greedy, and top-1, take the likeliest whatever the draw; a tie goes to the lower id.
  for (float u : {0.0f, 0.5f, 0.999f}) {
    EXPECT_EQ(sample_token(logits, sampling(0.0, 0), u), 2);
    EXPECT_EQ(sample_token(logits, sampling(1.0, 1), u), 2);
  }
}

// Each token of the top k owns the interval of draws [c_before, c_after) of its float64
// probability; the middle of every interval, and points just inside its ends, land on it.
TEST(SampleToken, EveryIntervalOfTheCumulativeProbabilitiesLandsOnItsToken) {
  const Philox rng(3, "logits");
  std::vector<float> logits(23);
  for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = 4.0f * rng.uniform(i) - 2.0f;
  std::vector<int32_t> order(logits.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  for (double temperature : {0.3, 1.0, 2.5})
    for (int64_t top_k : {0, 1, 5, 23, 40}) {
      SCOPED_TRACE(::testing::Message() << "temperature " << temperature << ", top_k " << top_k);
      const std::size_t k = top_k == 0 ? logits.size() : std::min<std::size_t>(logits.size(), top_k);
      double z = 0.0;
      for (std::size_t i = 0; i < k; ++i) z += std::exp(logits[order[i]] / temperature);
      double before = 0.0;
      for (std::size_t i = 0; i < k; ++i) {
        const double after = before + std::exp(logits[order[i]] / temperature) / z;
        const double width = after - before;
        // Skips intervals too narrow for a float draw near 1 (ulp 6e-8) to fall clearly inside.
        for (double at : {before + 0.01 * width, (before + after) / 2, after - 0.01 * width}) {
          if (width < 1e-4) continue;
          EXPECT_EQ(sample_token(logits, sampling(temperature, top_k), static_cast<float>(at)), order[i])
              << "draw " << at << " in [" << before << ", " << after << ")";
        }
        before = after;
      }
    }
}

TEST(SampleToken, RefusesLogitsThatAreNotFinite) {
  std::vector<float> logits = five_logits();
  logits[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(error_of([&] { sample_token(logits, sampling(1.0, 0), 0.5f); }),
            "generate: the logit of token 3 is nan; expected finite logits (is the checkpoint's model finite?)");
  logits[3] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(error_of([&] { sample_token(logits, sampling(0.0, 0), 0.5f); }),
            "generate: the logit of token 3 is -inf; expected finite logits (is the checkpoint's model finite?)");
  EXPECT_EQ(error_of([] { sample_token({}, sampling(1.0, 0), 0.5f); }), "generate: no logits to sample from");
}

// Greedy continuation: every new token is the argmax (lowest id on ties) of the logits of the
// last `context` tokens before it, here computed by a separate call per position.
TEST(Generate, GreedyFollowsTheArgmaxOfTheSlidingWindow) {
  Gpt gpt(tiny_gpt());
  gpt.init_weights(4);
  const std::vector<int32_t> prompt = {3, 1, 4};
  const std::vector<int32_t> ids = generate(gpt, prompt, 12, sampling(0.0, 0));  // to 15 > context 7
  ASSERT_EQ(ids.size(), 15u);
  EXPECT_TRUE(std::equal(prompt.begin(), prompt.end(), ids.begin()));
  for (std::size_t n = prompt.size(); n < ids.size(); ++n) {
    const std::size_t window = std::min<std::size_t>(n, 7);
    const Matrix& logits = gpt.logits({ids.data() + n - window, window}, 1, static_cast<int64_t>(window));
    const float* row = logits.view().row(static_cast<int64_t>(window) - 1);
    const auto best = static_cast<int32_t>(std::max_element(row, row + 13) - row);
    EXPECT_EQ(ids[n], best) << "token " << n;
  }
}

// Token n of a continuation is drawn with uniform n of the Philox stream (seed, "generate"), so a
// seed gives the same text in every later version.
TEST(Generate, TheSeedFixesTheSample) {
  Gpt gpt(tiny_gpt());
  gpt.init_weights(4);
  SamplingOptions o = sampling(1.0, 0);
  o.seed = 1;
  const std::vector<int32_t> first = generate(gpt, {5}, 20, o);
  ASSERT_EQ(first.size(), 21u);
  const Philox draws(1, "generate");
  for (std::size_t n = 1; n < first.size(); ++n) {
    const std::size_t window = std::min<std::size_t>(n, 7);
    const Matrix& logits = gpt.logits({first.data() + n - window, window}, 1, static_cast<int64_t>(window));
    const std::span<const float> row(logits.view().row(static_cast<int64_t>(window) - 1), 13);
    EXPECT_EQ(first[n], sample_token(row, o, draws.uniform(n - 1))) << "token " << n;
  }
  EXPECT_EQ(generate(gpt, {5}, 20, o), first);
  o.seed = 2;
  EXPECT_NE(generate(gpt, {5}, 20, o), first);
  EXPECT_NE(generate(gpt, {5}, 20, sampling(0.0, 0)), first);
}

TEST(Generate, RefusesAnEmptyStart) {
  Gpt gpt(tiny_gpt());
  gpt.init_weights(4);
  EXPECT_EQ(error_of([&] { generate(gpt, {}, 3, sampling(1.0, 0)); }),
            "generate: expected at least one token to continue");
}

}  // namespace
}  // namespace sparsetrain
