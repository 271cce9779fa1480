#pragma once
// Evaluation over the data's evaluation batches, and how a result is reported: a line on stdout
// and a row of metrics.jsonl (perplexity for a GPT, accuracy for an MLP).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "sparsetrain/train/setup.h"

namespace sparsetrain {

struct EvalResult {
  double loss = 0.0;
  double accuracy = 0.0;  // correct predictions / predictions
  int64_t predictions = 0;
};

// Mean loss and accuracy over the data's evaluation batches. Spread over the ranks of `comm`
// (batch i on rank i mod ranks) and summed over them; every rank gets the result.
EvalResult evaluate(Model& model, const DataSource& data, Communicator& comm);

// "eval step 200: loss 1.2345, perplexity 3.44 (40960 tokens)"
std::string eval_line(const Setup& s, int64_t step, const EvalResult& r);
// {"step": 200, "split": "eval", "loss": 1.2345, "perplexity": 3.44}
nlohmann::json eval_row(const Setup& s, int64_t step, const EvalResult& r);

}  // namespace sparsetrain
