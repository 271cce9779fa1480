#include "sparsetrain/train/hooks/evaluator.h"

#include "sparsetrain/train/evaluation.h"

namespace sparsetrain {

void Evaluator::on_train_batch_end(Training& t, const StepResult&) {
  const int64_t every = t.setup.config.run.eval_frequency;
  const int64_t step = t.progress.step;
  if (!((every > 0 && step % every == 0) || (t.last_step() && t.options.mode == RunMode::TrainAndEval))) return;
  t.bar.clear();
  const EvalResult r = evaluate(*t.setup.model, *t.setup.data, t.setup.comm());
  t.say(eval_line(t.setup, step, r));
  t.metrics.write(eval_row(t.setup, step, r));
}

}  // namespace sparsetrain
