#include "sparsetrain/train/evaluation.h"

#include <fmt/format.h>

#include <cmath>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

EvalResult evaluate(Model& model, const DataSource& data) {
  double loss_sum = 0.0;
  int64_t correct = 0, predictions = 0;
  Batch batch;
  for (int64_t i = 0; i < data.eval_batches(); ++i) {
    data.eval_batch(i, batch);
    const LossResult r = model.forward(batch, /*training=*/false, 0, 0);
    loss_sum += r.loss * static_cast<double>(batch.predictions());
    correct += r.correct;
    predictions += batch.predictions();
  }
  if (predictions == 0) fail("evaluation: the evaluation split has no batches");
  return {loss_sum / static_cast<double>(predictions), static_cast<double>(correct) / static_cast<double>(predictions),
          predictions};
}

std::string eval_line(const Setup& s, int64_t step, const EvalResult& r) {
  if (s.config.is_gpt())
    return fmt::format("eval step {}: loss {:.4f}, perplexity {:.2f} ({} tokens)", step, r.loss, std::exp(r.loss),
                       r.predictions);
  return fmt::format("eval step {}: loss {:.4f}, accuracy {:.2f}% ({} examples)", step, r.loss, 100.0 * r.accuracy,
                     r.predictions);
}

nlohmann::json eval_row(const Setup& s, int64_t step, const EvalResult& r) {
  nlohmann::json row = {{"step", step}, {"split", "eval"}, {"loss", r.loss}};
  if (s.config.is_gpt())
    row["perplexity"] = std::exp(r.loss);
  else
    row["accuracy"] = r.accuracy;
  return row;
}

}  // namespace sparsetrain
