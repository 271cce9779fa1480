#pragma once
// Optimizer: updates a fixed list of parameters from their gradients, whatever their storage.
//
// The k-th call of step() is optimizer step k (from 1; the Cerebras and sparsity-schedule
// convention). It evaluates the learning-rate schedule at k and, for every parameter in order:
//
//   1. p->mask_grad()       masked-dense: keep the gradient at kept positions by selection, so a
//                           NaN or Inf in a pruned slot never reaches the update
//   2. the update           on p->values() from p->grad() and state buffers fetched through
//                           p->state(key) on every step (mask changes remap them); where the
//                           parameter keeps a bf16 copy (bf16 mixed precision), each range of
//                           updated values is rounded into it while still in L1
//                           (Parameter::bf16_update_target)
//   3. p->enforce_mask()    masked-dense: pruned values and state back to exactly 0, so weight
//                           decay and momentum never revive a pruned weight
//
// and then calls the post-step hooks with k. Sparsity algorithms register a hook to update masks
// after the step (the Cerebras `optimizer.apply(sparsity)` wiring); Parameter::set_mask keeps
// survivors' state and starts new connections at zero state.
//
// Numerics are float32, element by element, in the operation order of PyTorch's single-tensor
// implementation (foreach=False, fused=False), with scalars computed in double and rounded to
// float where PyTorch passes a Python float to a float32 kernel. The library is built without
// floating-point contraction, so results do not depend on the target ISA; they can differ from
// PyTorch by an ulp where PyTorch's vectorized CPU kernels fuse a multiply-add.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sparsetrain/core/bf16.h"
#include "sparsetrain/nn/parameter.h"
#include "sparsetrain/optim/lr_schedule.h"

namespace sparsetrain {

class Optimizer {
 public:
  using PostStepHook = std::function<void(int64_t step)>;

  // `params` (e.g. Module::parameters()) must be non-empty, non-null and distinct; they must
  // outlive the optimizer.
  Optimizer(std::vector<Parameter*> params, LrSchedule schedule);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One optimizer step over every parameter, then the post-step hooks.
  void step();
  // Zeroes every parameter's gradient.
  void zero_grad();

  // The learning rate of the most recent step: the schedule at steps() (at 0 before any step).
  double lr() const { return schedule_.at(steps_); }
  const LrSchedule& schedule() const { return schedule_; }
  // Steps taken so far; the next step() is step steps() + 1.
  int64_t steps() const { return steps_; }
  // For resuming from a checkpoint taken after `step` steps (>= 0); state buffers are restored
  // separately through Parameter::state().
  void set_step(int64_t step);

  const std::vector<Parameter*>& params() const { return params_; }
  // Called with the step number after every step(), in the order added.
  void add_post_step_hook(PostStepHook hook);

  virtual const char* name() const = 0;  // "sgd", "adamw"
  // The Parameter::state() keys this optimizer keeps, for checkpoints.
  virtual std::vector<std::string> state_keys() const = 0;

 protected:
  // Updates p.values() in place at step `step` with learning rate `lr`, and writes the updated
  // values rounded to bf16 into `bf16` when it is not null (update_ranges does both); the
  // gradient is already masked. Runs before enforce_mask().
  virtual void update(Parameter& p, Bf16* bf16, double lr, int64_t step) = 0;

  using RangeBody = std::function<void(std::size_t begin, std::size_t end)>;
  // Runs body(begin, end) over contiguous ranges of [0, n), on several threads when n is large.
  // Element updates are independent, so results do not depend on the thread count.
  static void for_ranges(std::size_t n, const RangeBody& body);
  // The same over the n updated `values`, each range (at most kBf16Chunk long when bf16 is set)
  // then rounded into bf16 while it is in L1.
  static void update_ranges(std::size_t n, const float* values, Bf16* bf16, const RangeBody& body);

 private:
  std::vector<Parameter*> params_;
  LrSchedule schedule_;
  int64_t steps_ = 0;
  std::vector<PostStepHook> hooks_;
};

}  // namespace sparsetrain
