#include "sparsetrain/train/hooks/nonfinite_policy.h"

#include <fmt/format.h>

#include "sparsetrain/train/checkpoint.h"

namespace sparsetrain {

void NonFinitePolicy::on_step_result(Training& t, int64_t step, const StepResult& r) {
  if (r.outcome != StepOutcome::NonFinite || policy_ != NonfinitePolicy::Stop) return;
  t.setup.optimizer->set_step(step - 1);
  checkpointer_.ensure_saved(t);  // t.progress has not counted this step
  t.stop(kExitNonFinite, fmt::format("step {}: non-finite loss or gradient (loss {}, gradient norm {}); stopped as "
                                     "runconfig.nonfinite_policy says, the last good state is {}",
                                     step, r.loss, r.grad_norm, checkpoint_model_path(t.options.model_dir, step - 1)));
}

void NonFinitePolicy::on_train_end(Training& t) {
  const RunProgress& p = t.progress;
  if (2 * p.skipped_steps <= p.step) return;
  t.stop(kExitNonFinite,
         fmt::format("{} of the run's {} steps were skipped for a non-finite loss or gradient "
                     "(runconfig.nonfinite_policy: skip), more than half: the run did not train; lower the learning "
                     "rate or set max_gradient_norm, and start again",
                     p.skipped_steps, p.step));
}

}  // namespace sparsetrain
