#pragma once
// Evaluation over the data's evaluation batches, and how a result is reported: a line on stdout
// and a row of metrics.jsonl (perplexity for a GPT, masked-token accuracy and next-sentence
// accuracy for a BERT, accuracy for an MLP).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "sparsetrain/train/setup.h"

namespace sparsetrain {

struct EvalResult {
  double loss = 0.0;      // per prediction; a BERT's masked-token loss alone, without the next-sentence loss
  double accuracy = 0.0;  // correct predictions / predictions
  int64_t predictions = 0;
  // A BERT with the next-sentence task: its mean loss and accuracy over the rows.
  double nsp_loss = 0.0;
  double nsp_accuracy = 0.0;
  int64_t rows = 0;
};

// Mean loss and accuracy over the data's evaluation batches. Spread over the ranks of `comm`
// (batch i on rank i mod ranks) and summed over them; every rank gets the result.
EvalResult evaluate(Model& model, const DataSource& data, Communicator& comm);

// "eval step 200: loss 1.2345, perplexity 3.44 (40960 tokens)"
// "eval step 200: loss 4.7646 = mlm loss 4.1234, accuracy 31.20% (6120 masked tokens) + nsp loss 0.6412, accuracy
// 61.02% (400 pairs)"
std::string eval_line(const Setup& s, int64_t step, const EvalResult& r);
// {"step": 200, "split": "eval", "loss": 1.2345, "perplexity": 3.44}. A BERT's row has "mlm_loss",
// "mlm_perplexity" and "accuracy" (masked tokens) and, with the next-sentence task, "nsp_loss" and "nsp_accuracy";
// its "loss" is the training loss's sum, mlm_loss + nsp_loss.
nlohmann::json eval_row(const Setup& s, int64_t step, const EvalResult& r);

}  // namespace sparsetrain
