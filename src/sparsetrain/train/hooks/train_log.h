#pragma once
// Every runconfig.log_steps steps and at the last step: a line on stdout and a `train` row of
// metrics.jsonl with the window's mean loss and speed and the run's totals, e.g.
//   step    100/600 | loss 2.3100 | lr 3.00e-03 | sparsity 0.900 | 2755 tokens/s | 743.2 ms/step | FLOPs ...
#include <cstdint>

#include "sparsetrain/train/training.h"

namespace sparsetrain {

class TrainLog : public TrainerHook {
 public:
  void on_train_batch_end(Training& t, const StepResult& r) override;

 private:
  // The steps since the last line.
  double loss_ = 0.0, seconds_ = 0.0;
  int64_t steps_ = 0, tokens_ = 0;
};

}  // namespace sparsetrain
