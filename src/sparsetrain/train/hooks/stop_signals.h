#pragma once
// SIGTERM and SIGINT while training: the handler only records the signal and restores the
// default action (a second signal stops at once); the run finishes its step, saves a checkpoint
// (Checkpointer, after this hook) and exits with 128 + the signal number. The handlers are
// installed for the hook's lifetime, from before the run loads its checkpoint.
#include <csignal>

#include "sparsetrain/train/training.h"

namespace sparsetrain {

class StopSignals : public TrainerHook {
 public:
  StopSignals();
  ~StopSignals() override;
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  void on_train_batch_end(Training& t, const StepResult&) override;

 private:
  struct sigaction old_term_ = {}, old_int_ = {};
};

}  // namespace sparsetrain
