#pragma once
// The loss curves of a model directory, read from its metrics.jsonl (train/metrics.h writes it):
// train rows and eval rows with their step, loss and the cumulative actual training FLOPs.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sparsetrain {

struct MetricRow {
  int64_t step = 0;
  std::optional<double> loss;          // none when written as null (a non-finite loss)
  std::optional<double> flops_actual;  // train rows; none when absent or null
};

struct RunMetrics {
  std::vector<MetricRow> train, eval;  // in file order
};

// Parses metrics.jsonl text; `name` stands for the file in messages. Every line must be a JSON
// object with an integer "step" >= 0 and a string "split"; "train" and "eval" rows need "loss" as
// a number or null, and "flops_actual", where present, is a number or null; rows of other splits
// are passed over, as are blank lines. A last line without its newline that is not valid JSON was
// cut short by a killed run and is ignored; any other bad line is an Error naming `name`, the
// line number and the key.
RunMetrics parse_run_metrics(std::string_view text, const std::string& name);
// The same for a file; an Error names the path when it cannot be read.
RunMetrics read_run_metrics(const std::string& path);

// The cumulative FLOPs at `step`: flops_actual of the last train row (in step order) at or before
// `step` that has it. Eval rows carry no FLOPs; this is where they fall on a FLOPs axis.
std::optional<double> flops_at_step(const std::vector<MetricRow>& train, int64_t step);

}  // namespace sparsetrain
