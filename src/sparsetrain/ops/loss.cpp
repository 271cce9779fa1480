#include "sparsetrain/ops/loss.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/profile.h"
#include "sparsetrain/ops/fast_math.h"

namespace sparsetrain {

namespace {

constexpr int64_t kMinRowsPerThread = 8;

int parts_for(int64_t items) { return static_cast<int>(std::clamp<int64_t>(items / kMinRowsPerThread, 1, 1 << 16)); }

void check_inputs(const char* op, ConstMatrixView scores, std::span<const int32_t> targets, MatrixView grad) {
  if (static_cast<int64_t>(targets.size()) != scores.rows)
    fail("{}: {} targets for {} rows; expected one target per row", op, targets.size(), scores.rows);
  if (grad.data != nullptr && (grad.rows != scores.rows || grad.cols != scores.cols))
    fail("{}: gradient is [{} x {}]; expected the scores' shape [{} x {}]", op, grad.rows, grad.cols, scores.rows,
         scores.cols);
  for (int64_t r = 0; r < scores.rows; ++r)
    if (targets[r] < 0 || targets[r] >= scores.cols)
      fail("{}: target {} at row {} is outside the classes [0, {})", op, targets[r], r, scores.cols);
}

// First index of the largest value: a later equal value does not win.
int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

// The first index holding v (0 when none does, as for a NaN v).
int64_t first_index_of(const float* x, int64_t n, float v) {
  for (int64_t i = 0; i < n; ++i)
    if (x[i] == v) return i;
  return 0;
}

// Row losses are computed in parallel into `row_loss`, then summed here in row order.
LossResult finish(const std::vector<double>& row_loss, const std::vector<uint8_t>& row_correct, double divisor) {
  LossResult result;
  double sum = 0.0;
  for (size_t r = 0; r < row_loss.size(); ++r) {
    sum += row_loss[r];
    result.correct += row_correct[r];
  }
  result.loss = row_loss.empty() ? 0.0 : sum / divisor;
  return result;
}

}  // namespace

// logits, dlogits [N x V]; targets [N].
LossResult softmax_cross_entropy(ConstMatrixView logits, std::span<const int32_t> targets, MatrixView dlogits) {
  const ProfileScope profile("loss");
  check_inputs("softmax_cross_entropy", logits, targets, dlogits);
  const int64_t N = logits.rows, V = logits.cols;
  std::vector<double> row_loss(static_cast<size_t>(N));
  std::vector<uint8_t> row_correct(static_cast<size_t>(N));
  const double inv_n = N > 0 ? 1.0 / static_cast<double>(N) : 0.0;
  std::vector<float> scratch(dlogits.data != nullptr ? 0 : static_cast<size_t>(num_threads() * V));
  parallel_run(parts_for(N), [&](int ith, int nth) {
    int64_t r0 = 0, r1 = 0;
    balance_even(N, ith, nth, r0, r1);
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = logits.row(r);
      const int32_t target = targets[r];
      // Everything is read before the gradient row is written, since dlogits may alias logits.
      const float maxv = row_max(x, V);
      const float target_logit = x[target];
      const int64_t best = first_index_of(x, V, maxv);
      // e = exp(x - max) goes into the gradient row (or a scratch row), then p = e / sum.
      float* e = dlogits.data != nullptr ? dlogits.row(r) : scratch.data() + static_cast<size_t>(ith * V);
      for (int64_t c = 0; c < V; ++c) e[c] = exp_nonpositive(x[c] - maxv);
      const double sum = row_sum(e, V);
      row_loss[r] = static_cast<double>(maxv) + std::log(sum) - target_logit;
      row_correct[r] = best == target ? 1 : 0;
      if (dlogits.data == nullptr) continue;
      const auto scale = static_cast<float>(inv_n / sum);
      for (int64_t c = 0; c < V; ++c) e[c] *= scale;
      e[target] -= static_cast<float>(inv_n);
    }
  });
  return finish(row_loss, row_correct, static_cast<double>(N));
}

// pred, dpred [N x K]; targets [N].
LossResult mse_onehot(ConstMatrixView pred, std::span<const int32_t> targets, MatrixView dpred) {
  const ProfileScope profile("loss");
  check_inputs("mse_onehot", pred, targets, dpred);
  const int64_t N = pred.rows, K = pred.cols;
  std::vector<double> row_loss(static_cast<size_t>(N));
  std::vector<uint8_t> row_correct(static_cast<size_t>(N));
  const double count = static_cast<double>(N) * static_cast<double>(K);
  const double grad_scale = count > 0 ? 2.0 / count : 0.0;
  parallel_run(parts_for(N), [&](int ith, int nth) {
    int64_t r0 = 0, r1 = 0;
    balance_even(N, ith, nth, r0, r1);
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = pred.row(r);
      const int32_t target = targets[r];
      row_correct[r] = argmax(x, K) == target ? 1 : 0;
      double sum = 0.0;
      for (int64_t c = 0; c < K; ++c) {
        const double d = static_cast<double>(x[c]) - (c == target ? 1.0 : 0.0);
        sum += d * d;
        if (dpred.data != nullptr) dpred.at(r, c) = static_cast<float>(grad_scale * d);
      }
      row_loss[r] = sum;
    }
  });
  return finish(row_loss, row_correct, count);
}

}  // namespace sparsetrain
