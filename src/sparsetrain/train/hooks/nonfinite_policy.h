#pragma once
// runconfig.nonfinite_policy. train_step takes back a step whose loss or gradient is not finite
// (no update, no mask change); then
//   stop: the run ends with kExitNonFinite at the step before, whose state is saved;
//   skip: the step is counted as skipped and the run goes on, but a run that ends with more than
//         half of its steps skipped did not train: it ends with kExitNonFinite too.
#include "sparsetrain/config/train_config.h"
#include "sparsetrain/train/hooks/checkpointer.h"
#include "sparsetrain/train/training.h"

namespace sparsetrain {

class NonFinitePolicy : public TrainerHook {
 public:
  NonFinitePolicy(NonfinitePolicy policy, Checkpointer& checkpointer) : policy_(policy), checkpointer_(checkpointer) {}
  void on_step_result(Training& t, int64_t step, const StepResult& r) override;
  void on_train_end(Training& t) override;

 private:
  NonfinitePolicy policy_;
  Checkpointer& checkpointer_;
};

}  // namespace sparsetrain
