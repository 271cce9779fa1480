#pragma once
// Evaluates every runconfig.eval_frequency steps and, in train_and_eval, after the last step.
#include "sparsetrain/train/training.h"

namespace sparsetrain {

class Evaluator : public TrainerHook {
 public:
  void on_train_batch_end(Training& t, const StepResult&) override;
};

}  // namespace sparsetrain
