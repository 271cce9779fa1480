#include "sparsetrain/train/hooks/stop_signals.h"

#include <fmt/format.h>

#include <vector>

#include "sparsetrain/train/checkpoint.h"

namespace sparsetrain {

namespace {

volatile std::sig_atomic_t stop_signal = 0;

extern "C" void record_stop_signal(int signal_number) {
  stop_signal = signal_number;
  std::signal(signal_number, SIG_DFL);
}

}  // namespace

StopSignals::StopSignals() {
  stop_signal = 0;
  struct sigaction action = {};
  action.sa_handler = record_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, &old_term_);
  sigaction(SIGINT, &action, &old_int_);
}

StopSignals::~StopSignals() {
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGINT, &old_int_, nullptr);
}

void StopSignals::on_train_batch_end(Training& t, const StepResult&) {
  int received = stop_signal;
  if (Communicator& comm = t.setup.comm(); comm.size() > 1) {
    // The ranks stop after the same step: mpirun passes a signal on to every rank, but not at
    // the same moment.
    std::vector<uint64_t> any = {static_cast<uint64_t>(received)};
    comm.max(any);
    received = static_cast<int>(any[0]);
  }
  if (received == 0 || t.last_step()) return;  // the last step ends the run anyway, normally
  t.stop(128 + received, fmt::format("stopped by {} after step {}; checkpoint: {} (train again with the same "
                                     "--model_dir to resume)",
                                     received == SIGTERM ? "SIGTERM" : "SIGINT", t.progress.step,
                                     checkpoint_model_path(t.options.model_dir, t.progress.step)));
}

}  // namespace sparsetrain
