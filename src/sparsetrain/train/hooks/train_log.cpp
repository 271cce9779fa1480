#include "sparsetrain/train/hooks/train_log.h"

#include <fmt/format.h>

#include <cmath>

namespace sparsetrain {

namespace {

std::string si(double x) {
  const char* units[] = {"", "k", "M", "G", "T", "P", "E"};
  int u = 0;
  while (std::fabs(x) >= 1000.0 && u < 6) x /= 1000.0, ++u;
  return fmt::format("{:.3g}{}", x, units[u]);
}

}  // namespace

void TrainLog::on_train_batch_end(Training& t, const StepResult& r) {
  loss_ += r.loss;
  seconds_ += r.seconds;
  ++steps_;
  tokens_ += r.tokens;
  const Setup& s = t.setup;
  const RunProgress& p = t.progress;
  if (p.step % s.config.run.log_steps != 0 && !t.last_step()) return;

  const double loss = loss_ / static_cast<double>(steps_);
  const double rate = static_cast<double>(tokens_) / seconds_;
  const double ms = 1000.0 * seconds_ / static_cast<double>(steps_);
  const double sparsity = s.sparsity ? s.sparsity->measured_sparsity() : 0.0;  // 0: a dense run
  const double lr = s.optimizer->lr();
  t.say(fmt::format(
      "step {:>6}/{} | loss {:.4f} | lr {:.2e} | sparsity {:.3f} | {:.0f} {} | {:.1f} ms/step | FLOPs "
      "dense-eq {} actual {}{}{}",
      p.step, t.total_steps, loss, lr, sparsity, rate, s.config.is_text() ? "tokens/s" : "samples/s", ms,
      si(p.flops_dense), si(p.flops_actual), p.skipped_steps > 0 ? fmt::format(" | skipped {}", p.skipped_steps) : "",
      p.loss_spikes > 0 ? fmt::format(" | loss spikes {}", p.loss_spikes) : ""));
  t.metrics.write({{"step", p.step},
                   {"split", "train"},
                   {"loss", loss},
                   {"lr", lr},
                   {"grad_norm", r.grad_norm},
                   {"sparsity", sparsity},
                   {s.config.is_text() ? "tokens_per_s" : "samples_per_s", rate},
                   {"ms_per_step", ms},
                   {"flops_dense", p.flops_dense},
                   {"flops_actual", p.flops_actual},
                   {"skipped", p.skipped_steps},
                   {"loss_spikes", p.loss_spikes}});
  loss_ = seconds_ = 0.0;
  steps_ = tokens_ = 0;
}

}  // namespace sparsetrain
