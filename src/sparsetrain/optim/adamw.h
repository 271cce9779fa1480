#pragma once
// Adam with decoupled weight decay, PyTorch's torch.optim.AdamW (amsgrad=False,
// maximize=False). At optimizer step k, with lr the schedule's rate at k:
//
//   p = p * (1 - lr * weight_decay)                                   (when weight_decay != 0)
//   m = lerp(m, g, 1 - beta1)                                         p->state("exp_avg")
//   v = beta2 * v + (1 - beta2) * g * g                               p->state("exp_avg_sq")
//   p = p - lr / (1 - beta1^k) * m / (sqrt(v) / sqrt(1 - beta2^k) + eps)
//
// The bias corrections use the optimizer step k for every element, as PyTorch uses the
// per-parameter step count (equal to k for a parameter updated on every step). A connection
// regrown by a mask change starts with m = v = 0 but the corrections of the current step, which
// is what RigL and Cerebras do.
#include "sparsetrain/optim/optimizer.h"

namespace sparsetrain {

struct AdamWOptions {
  double beta1 = 0.9;          // in [0, 1)
  double beta2 = 0.999;        // in [0, 1)
  double eps = 1e-8;           // >= 0
  double weight_decay = 0.01;  // >= 0, decoupled
};

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Parameter*> params, LrSchedule lr, AdamWOptions options = {});
  AdamW(std::vector<Parameter*> params, double lr, AdamWOptions options = {})
      : AdamW(std::move(params), LrSchedule::constant(lr), options) {}

  const AdamWOptions& options() const { return options_; }
  const char* name() const override { return "adamw"; }
  std::vector<std::string> state_keys() const override { return {"exp_avg", "exp_avg_sq"}; }

 protected:
  void update(Parameter& p, Bf16* bf16, double lr, int64_t step) override;

 private:
  AdamWOptions options_;
};

}  // namespace sparsetrain
