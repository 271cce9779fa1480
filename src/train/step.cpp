#include "train/step.h"

#include <cmath>

namespace sparsetrain {

namespace {

// The global L2 norm of every gradient, summed in double in parameter order.
double grad_norm(Model& model) {
  double sum = 0.0;
  for (const Parameter* p : model.parameters())
    for (float g : p->grad()) sum += static_cast<double>(g) * g;
  return std::sqrt(sum);
}

void scale_grads(Model& model, float factor) {
  for (Parameter* p : model.parameters())
    for (float& g : p->grad()) g *= factor;
}

// RigL's dense-gradient GEMMs on its update steps: 2 FLOPs per weight per prediction.
double dense_grad_flops(Model& model, int64_t predictions) {
  double flops = 0.0;
  for (const Parameter* p : model.parameters())
    if (p->wants_dense_grad) flops += 2.0 * static_cast<double>(p->numel()) * static_cast<double>(predictions);
  return flops;
}

}  // namespace

StepResult train_step(Setup& s, int64_t step, Batch& batch, double max_loss) {
  Model& model = *s.model;
  Optimizer& optimizer = *s.optimizer;
  if (s.sparsity) s.sparsity->prepare_step(step);
  optimizer.zero_grad();
  s.data->train_batch(s.seed, step, batch);
  StepResult r;
  r.predictions = batch.predictions();
  r.flops = model.training_flops(batch.rows, batch.seq);
  r.loss = model.forward(batch, /*training=*/true, s.seed, step).loss;
  model.backward();
  r.grad_norm = grad_norm(model);
  r.flops.actual += dense_grad_flops(model, r.predictions);
  if (!std::isfinite(r.loss) || !std::isfinite(r.grad_norm))
    r.outcome = StepOutcome::NonFinite;
  else if (r.loss > max_loss)
    r.outcome = StepOutcome::LossSpike;
  if (r.outcome != StepOutcome::Applied) {
    optimizer.set_step(step);
    for (Parameter* p : model.parameters()) p->wants_dense_grad = false;
    return r;
  }
  const double max_norm = s.config.optimizer.max_gradient_norm;
  if (max_norm > 0.0 && r.grad_norm > max_norm) scale_grads(model, static_cast<float>(max_norm / r.grad_norm));
  optimizer.step();
  return r;
}

}  // namespace sparsetrain
