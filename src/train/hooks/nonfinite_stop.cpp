#include "train/hooks/nonfinite_stop.h"

#include <fmt/format.h>

#include "train/checkpoint.h"

namespace sparsetrain {

void NonFiniteStop::on_step_result(Training& t, int64_t step, const StepResult& r) {
  if (r.outcome != StepOutcome::NonFinite) return;
  t.setup.optimizer->set_step(step - 1);
  checkpointer_.ensure_saved(t);  // t.progress has not counted this step
  t.stop(kExitNonFinite, fmt::format("step {}: non-finite loss or gradient (loss {}, gradient norm {}); stopped as "
                                     "runconfig.nonfinite_policy says, the last good state is {}",
                                     step, r.loss, r.grad_norm, checkpoint_model_path(t.options.model_dir, step - 1)));
}

}  // namespace sparsetrain
