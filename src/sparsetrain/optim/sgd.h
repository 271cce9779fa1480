#pragma once
// Stochastic gradient descent with momentum, PyTorch's torch.optim.SGD (maximize=False):
//
//   d = g + weight_decay * p                          (L2 added to the gradient, when != 0)
//   p = p * (1 - lr * weight_decay)                   (instead, with decoupled_weight_decay)
//   buf = d                                           at optimizer step 1
//   buf = momentum * buf + (1 - dampening) * d        after                 (when momentum != 0)
//   d = d + momentum * buf   (nesterov)   or   d = buf
//   p = p - lr * d
//
// The momentum buffer lives in p->state("momentum"). PyTorch initialises it to the first
// gradient a parameter sees; here that happens at optimizer step 1 only. Any buffer element that
// did not exist then — a connection regrown by a mask change, a parameter resumed without its
// state — starts from zero and takes the general rule, buf = (1 - dampening) * d on its first
// update (the zero-state start that RigL and Cerebras prescribe for new connections). With the
// default dampening 0 both starts give the same buffer.
#include "sparsetrain/optim/optimizer.h"

namespace sparsetrain {

struct SgdOptions {
  double momentum = 0.0;      // >= 0
  double dampening = 0.0;     // in [0, 1]
  double weight_decay = 0.0;  // >= 0, L2 (coupled) unless decoupled_weight_decay
  // The decay shrinks the weights directly, outside the gradient and the momentum, as in AdamW
  // (torch.optim.Adam's flag of this name) and in the SET reference code's `w -= decay * w`.
  bool decoupled_weight_decay = false;
  bool nesterov = false;      // needs momentum > 0 and dampening == 0
};

class Sgd : public Optimizer {
 public:
  Sgd(std::vector<Parameter*> params, LrSchedule lr, SgdOptions options = {});
  Sgd(std::vector<Parameter*> params, double lr, SgdOptions options = {})
      : Sgd(std::move(params), LrSchedule::constant(lr), options) {}

  const SgdOptions& options() const { return options_; }
  const char* name() const override { return "sgd"; }
  std::vector<std::string> state_keys() const override;

 protected:
  void update(Parameter& p, Bf16* bf16, double lr, int64_t step) override;

 private:
  SgdOptions options_;
};

}  // namespace sparsetrain
