#pragma once
// Losses over a batch of rows, returning the mean loss in double and (when the gradient view has
// data) writing its gradient scaled for that mean. Sums run in double in row order.
#include <cstdint>
#include <span>

#include "sparsetrain/core/tensor.h"

namespace sparsetrain {

struct LossResult {
  double loss = 0.0;    // mean over rows (a model with a second task: the sum of both tasks' means)
  int64_t correct = 0;  // rows whose largest score is the target (first index on ties)
  // BERT's next-sentence task, beside the masked tokens above: its mean loss (part of `loss`) and
  // the rows it classified correctly.
  double nsp_loss = 0.0;
  int64_t nsp_correct = 0;
};

// Softmax cross-entropy, torch.nn.functional.cross_entropy(logits, targets) with mean reduction:
//   loss = mean_t( logsumexp(logits[t]) - logits[t, targets[t]] )
//   dlogits[t] = (softmax(logits[t]) - onehot(targets[t])) / rows
// targets in [0, cols); one out of range is an Error naming the row. dlogits may alias logits.
LossResult softmax_cross_entropy(ConstMatrixView logits, std::span<const int32_t> targets, MatrixView dlogits);

// Mean squared error against one-hot targets, torch.nn.functional.mse_loss(pred, onehot) with
// mean reduction over all rows * cols elements (the SET paper's MLP loss):
//   loss = sum (pred - onehot)^2 / (rows * cols),  dpred = 2 (pred - onehot) / (rows * cols)
// targets as for softmax_cross_entropy; dpred may alias pred.
LossResult mse_onehot(ConstMatrixView pred, std::span<const int32_t> targets, MatrixView dpred);

}  // namespace sparsetrain
