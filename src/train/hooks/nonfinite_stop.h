#pragma once
// runconfig.nonfinite_policy: stop. A step whose loss or gradient is not finite ends the run
// with kExitNonFinite at the step before it, whose state is saved (the skip policy needs no
// hook: the step is taken back inside train_step and counted as skipped).
#include "train/hooks/checkpointer.h"
#include "train/training.h"

namespace sparsetrain {

class NonFiniteStop : public TrainerHook {
 public:
  explicit NonFiniteStop(Checkpointer& checkpointer) : checkpointer_(checkpointer) {}
  void on_step_result(Training& t, int64_t step, const StepResult& r) override;

 private:
  Checkpointer& checkpointer_;
};

}  // namespace sparsetrain
