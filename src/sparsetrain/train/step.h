#pragma once
// One training step k, shared by the trainer and `bench train` so the benchmark times exactly
// what training runs:
//
//   sparsity.prepare_step(k)  RigL asks for dense gradients on its update steps
//   batch = data.train_batch(seed, k); loss = model.forward(batch); model.backward()
//   non-finite loss or gradient, or a loss above max_loss: the step is skipped (no update, no
//   mask change)
//   data-parallel (train/distributed.h): each rank reads its share of the batch; the gradients
//   are averaged over the ranks (during backward) and the loss too, so every rank goes on alike
//   clip the global gradient norm (optimizer.max_gradient_norm); optimizer.step()
//   (the sparsity algorithm updates masks after the step; data-parallel ranks then compare them)
#include <cstdint>
#include <limits>

#include "sparsetrain/train/setup.h"

namespace sparsetrain {

enum class StepOutcome { Applied, NonFinite, LossSpike };

struct StepResult {
  double loss = 0.0;
  double grad_norm = 0.0;  // before clipping
  StepOutcome outcome = StepOutcome::Applied;
  int64_t predictions = 0;  // targets the loss averages over (a BERT's masked tokens), all ranks
  int64_t tokens = 0;       // input tokens (rows x seq; a classifier's rows) of the global batch
  Flops flops;  // this step's, RigL's dense-gradient GEMMs included in `actual`
  double seconds = 0.0;  // the step's wall time
  ReduceStats reduce;    // data-parallel runs: what the gradient all-reduce moved and cost
};

StepResult train_step(Setup& setup, int64_t step, Batch& batch,
                      double max_loss = std::numeric_limits<double>::infinity());

}  // namespace sparsetrain
