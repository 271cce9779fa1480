#include "sparsetrain/train/evaluation.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

EvalResult evaluate(Model& model, const DataSource& data, Communicator& comm) {
  double loss_sum = 0.0;
  int64_t correct = 0, predictions = 0;
  Batch batch;
  for (int64_t i = comm.rank(); i < data.eval_batches(); i += comm.size()) {
    data.eval_batch(i, batch);
    const LossResult r = model.forward(batch, /*training=*/false, 0, 0);
    loss_sum += r.loss * static_cast<double>(batch.predictions());
    correct += r.correct;
    predictions += batch.predictions();
  }
  if (comm.size() > 1) {
    std::array<double, 3> sums = {loss_sum, static_cast<double>(correct), static_cast<double>(predictions)};
    comm.sum(sums);
    loss_sum = sums[0];
    correct = static_cast<int64_t>(sums[1]);
    predictions = static_cast<int64_t>(sums[2]);
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
