#include "sparsetrain/train/step.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <vector>

#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/profile.h"
#include "sparsetrain/dist/rank_agreement.h"
#include "sparsetrain/ops/fast_math.h"

namespace sparsetrain {

namespace {

// The global L2 norm of every gradient. Each parameter's gradient is cut into fixed chunks whose
// sums of squares (double, in fast_math's interleaved lanes) are computed in parallel and added in
// parameter and chunk order, so the result does not depend on the thread count.
double grad_norm(Model& model) {
  constexpr int64_t kChunk = 1 << 15;
  struct Chunk {
    const float* data;
    int64_t size;
  };
  std::vector<Chunk> chunks;
  for (const Parameter* p : model.parameters()) {
    const auto g = p->grad();
    const auto n = static_cast<int64_t>(g.size());
    for (int64_t i = 0; i < n; i += kChunk) chunks.push_back({g.data() + i, std::min(kChunk, n - i)});
  }
  std::vector<double> sums(chunks.size());
  parallel_ranges(static_cast<int64_t>(chunks.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const Chunk& chunk = chunks[static_cast<std::size_t>(c)];
      sums[static_cast<std::size_t>(c)] = row_sum_squared_deviation(chunk.data, chunk.size, /*m=*/0.0);
    }
  });
  double sum = 0.0;
  for (double s : sums) sum += s;
  return std::sqrt(sum);
}

void scale_grads(Model& model, float factor) {
  for (Parameter* p : model.parameters())
    for (float& g : p->grad()) g *= factor;
}

// RigL's dense-gradient GEMMs on its update steps: 2 FLOPs per weight per prediction.
double dense_grad_flops(Model& model, int64_t tokens) {
  double flops = 0.0;
  for (const Parameter* p : model.parameters())
    if (p->wants_dense_grad) flops += 2.0 * static_cast<double>(p->numel()) * static_cast<double>(tokens);
  return flops;
}

}  // namespace

StepResult train_step(Setup& s, int64_t step, Batch& batch, double max_loss) {
  const auto start = std::chrono::steady_clock::now();
  auto timed = [&](StepResult& r) -> StepResult& {
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  };
  Model& model = *s.model;
  Optimizer& optimizer = *s.optimizer;
  if (s.sparsity) s.sparsity->prepare_step(step);
  {
    const ProfileScope profile("zero grad");
    optimizer.zero_grad();
  }
  {
    const ProfileScope profile("batch");
    s.data->train_batch(s.seed, step, batch);
  }
  StepResult r;
  // The global batch's rows and predictions: a data-parallel rank holds only its share of them.
  // Its gradient counts by its share of the predictions; a mean over rows in the loss (BERT's
  // next-sentence term) by its share of the rows.
  const auto mine = static_cast<double>(batch.predictions());  // counted once: a BERT's are counted, not rows x seq
  const auto my_rows = static_cast<double>(batch.rows);
  std::array<double, 2> global = {my_rows, mine};
  if (s.reducer) {
    s.comm().sum(global);
    s.reducer->begin(mine / global[1]);
    model.set_row_mean_weight((my_rows / global[0]) / (mine / global[1]));
  }
  r.predictions = static_cast<int64_t>(global[1]);
  r.tokens = static_cast<int64_t>(global[0]) * batch.seq;
  r.flops = model.training_flops(static_cast<int64_t>(global[0]), batch.seq);
  const LossResult loss = model.forward(batch, /*training=*/true, s.seed, step);
  r.loss = loss.loss;
  model.backward();
  if (s.reducer) {
    s.reducer->finish();
    r.reduce = s.reducer->stats();
    std::array<double, 2> loss_sum = {(loss.loss - loss.nsp_loss) * mine, loss.nsp_loss * my_rows};
    s.comm().sum(loss_sum);
    r.loss = loss_sum[0] / global[1] + loss_sum[1] / global[0];
  }
  {
    const ProfileScope profile("gradient norm");
    r.grad_norm = grad_norm(model);
  }
  r.flops.actual += dense_grad_flops(model, r.tokens);
  if (!std::isfinite(r.loss) || !std::isfinite(r.grad_norm))
    r.outcome = StepOutcome::NonFinite;
  else if (r.loss > max_loss)
    r.outcome = StepOutcome::LossSpike;
  if (r.outcome != StepOutcome::Applied) {
    optimizer.set_step(step);
    for (Parameter* p : model.parameters()) p->wants_dense_grad = false;
    return timed(r);
  }
  const double max_norm = s.config.optimizer.max_gradient_norm;
  const ProfileScope profile("optimizer");
  if (max_norm > 0.0 && r.grad_norm > max_norm) scale_grads(model, static_cast<float>(max_norm / r.grad_norm));
  const int64_t mask_updates = s.sparsity ? s.sparsity->mask_updates() : 0;
  optimizer.step();
  if (s.reducer && s.sparsity && s.sparsity->mask_updates() != mask_updates)
    require_same_masks(s.comm(), model.parameters(), step);
  return timed(r);
}

}  // namespace sparsetrain
