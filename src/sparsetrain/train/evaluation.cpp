#include "sparsetrain/train/evaluation.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

EvalResult evaluate(Model& model, const DataSource& data, Communicator& comm) {
  // Sums: loss and correct over predictions, next-sentence loss and correct over rows.
  std::array<double, 6> sums{};
  Batch batch;
  for (int64_t i = comm.rank(); i < data.eval_batches(); i += comm.size()) {
    data.eval_batch(i, batch);
    const LossResult r = model.forward(batch, /*training=*/false, 0, 0);
    const auto predictions = static_cast<double>(batch.predictions()), rows = static_cast<double>(batch.rows);
    sums[0] += (r.loss - r.nsp_loss) * predictions;
    sums[1] += static_cast<double>(r.correct);
    sums[2] += predictions;
    sums[3] += r.nsp_loss * rows;
    sums[4] += static_cast<double>(r.nsp_correct);
    sums[5] += rows;
  }
  if (comm.size() > 1) comm.sum(sums);
  if (sums[2] == 0.0) fail("evaluation: the evaluation split has no batches");
  EvalResult r;
  r.loss = sums[0] / sums[2];
  r.accuracy = sums[1] / sums[2];
  r.predictions = static_cast<int64_t>(sums[2]);
  r.nsp_loss = sums[3] / sums[5];
  r.nsp_accuracy = sums[4] / sums[5];
  r.rows = static_cast<int64_t>(sums[5]);
  return r;
}

namespace {

bool has_next_sentence(const Setup& s) {
  const auto* bert = std::get_if<BertConfig>(&s.config.model);
  return bert != nullptr && bert->next_sentence;
}

}  // namespace

std::string eval_line(const Setup& s, int64_t step, const EvalResult& r) {
  if (s.config.is_gpt())
    return fmt::format("eval step {}: loss {:.4f}, perplexity {:.2f} ({} tokens)", step, r.loss, std::exp(r.loss),
                       r.predictions);
  if (s.config.is_bert()) {
    if (!has_next_sentence(s))
      return fmt::format("eval step {}: mlm loss {:.4f}, accuracy {:.2f}% ({} masked tokens)", step, r.loss,
                         100.0 * r.accuracy, r.predictions);
    return fmt::format(
        "eval step {}: loss {:.4f} = mlm loss {:.4f}, accuracy {:.2f}% ({} masked tokens) + nsp loss {:.4f}, accuracy "
        "{:.2f}% ({} pairs)",
        step, r.loss + r.nsp_loss, r.loss, 100.0 * r.accuracy, r.predictions, r.nsp_loss, 100.0 * r.nsp_accuracy,
        r.rows);
  }
  return fmt::format("eval step {}: loss {:.4f}, accuracy {:.2f}% ({} examples)", step, r.loss, 100.0 * r.accuracy,
                     r.predictions);
}

nlohmann::json eval_row(const Setup& s, int64_t step, const EvalResult& r) {
  // A BERT's "loss" is what training minimizes and logs, so the two splits' curves compare.
  nlohmann::json row = {
      {"step", step}, {"split", "eval"}, {"loss", has_next_sentence(s) ? r.loss + r.nsp_loss : r.loss}};
  if (s.config.is_gpt()) {
    row["perplexity"] = std::exp(r.loss);
    return row;
  }
  row["accuracy"] = r.accuracy;
  if (!s.config.is_bert()) return row;
  row["mlm_loss"] = r.loss;
  row["mlm_perplexity"] = std::exp(r.loss);
  if (has_next_sentence(s)) {
    row["nsp_loss"] = r.nsp_loss;
    row["nsp_accuracy"] = r.nsp_accuracy;
  }
  return row;
}

}  // namespace sparsetrain
