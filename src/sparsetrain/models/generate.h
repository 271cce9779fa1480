#pragma once
// Continuing token sequences with a GPT: top-k sampling at a temperature (0 is greedy), one
// Philox draw per new token, so a seed fixes the sample (at a given thread count, which the
// logits' last bits may depend on).
#include <cstdint>
#include <span>
#include <vector>

#include "sparsetrain/models/gpt.h"

namespace sparsetrain {

struct SamplingOptions {
  double temperature = 0.8;  // 0: the likeliest token
  int64_t top_k = 40;        // sample among the k likeliest tokens; 0: all of them
  uint64_t seed = 0;
};

// The token that logits (one row, one per vocabulary entry) give for the uniform draw u in
// [0, 1): the k likeliest tokens (ties to the lower id) weighted by exp(logit / temperature),
// chosen by inverting their cumulative sum at u. Throws naming the first logit that is not finite.
int32_t sample_token(std::span<const float> logits, const SamplingOptions& options, float u);

// `ids` (at least one) followed by `tokens` new ones; each is sampled from the logits of the
// last `context` ids before it.
std::vector<int32_t> generate(Gpt& gpt, std::vector<int32_t> ids, int64_t tokens, const SamplingOptions& options);

}  // namespace sparsetrain
