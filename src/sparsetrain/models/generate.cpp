#include "sparsetrain/models/generate.h"

#include <algorithm>
#include <cmath>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/philox.h"

namespace sparsetrain {

int32_t sample_token(std::span<const float> logits, const SamplingOptions& options, float u) {
  if (logits.empty()) fail("generate: no logits to sample from");
  for (std::size_t i = 0; i < logits.size(); ++i)
    if (!std::isfinite(logits[i]))
      fail("generate: the logit of token {} is {}; expected finite logits (is the checkpoint's model finite?)", i,
           logits[i]);
  const std::size_t vocab = logits.size();
  const std::size_t k = options.top_k > 0 ? std::min(vocab, static_cast<std::size_t>(options.top_k)) : vocab;
  std::vector<int32_t> order(vocab);
  for (std::size_t i = 0; i < vocab; ++i) order[i] = static_cast<int32_t>(i);
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  if (options.temperature <= 0.0) return order[0];
  // Weights relative to the likeliest token, so the exponentials cannot overflow.
  std::vector<double> weight(k);
  double sum = 0.0;
  for (std::size_t i = 0; i < k; ++i)
    sum += weight[i] = std::exp((static_cast<double>(logits[order[i]]) - logits[order[0]]) / options.temperature);
  double rest = static_cast<double>(u) * sum;
  for (std::size_t i = 0; i + 1 < k; ++i)
    if ((rest -= weight[i]) < 0.0) return order[i];
  return order[k - 1];
}

std::vector<int32_t> generate(Gpt& gpt, std::vector<int32_t> ids, int64_t tokens, const SamplingOptions& options) {
  if (ids.empty()) fail("generate: expected at least one token to continue");
  const auto context = static_cast<std::size_t>(gpt.config().context);
  const Philox rng(options.seed, "generate");
  for (int64_t n = 0; n < tokens; ++n) {
    const std::size_t window = std::min(ids.size(), context);
    const std::span<const int32_t> last(ids.data() + ids.size() - window, window);
    const Matrix& logits = gpt.logits(last, 1, static_cast<int64_t>(window));
    const std::span<const float> row(logits.view().row(static_cast<int64_t>(window) - 1),
                                     static_cast<std::size_t>(logits.cols()));
    ids.push_back(sample_token(row, options, rng.uniform(static_cast<uint64_t>(n))));
  }
  return ids;
}

}  // namespace sparsetrain
