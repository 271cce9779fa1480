#pragma once
// The loss curves of a model directory, read from its metrics.jsonl (train/metrics.h writes it):
// train rows and eval rows with their step, loss, the cumulative actual training FLOPs and the
// steps' wall time.
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
  std::optional<double> ms_per_step;   // train rows: mean step time since the row before; none when absent or null
};

struct RunMetrics {
  std::vector<MetricRow> train, eval;  // in file order
};

// Parses metrics.jsonl text; `name` stands for the file in messages. Every line must be a JSON
// object with an integer "step" >= 0 and a string "split"; "train" and "eval" rows need "loss" as
// a number or null, and "flops_actual" and "ms_per_step", where present, are numbers or null; rows of other splits
// are passed over, as are blank lines. A last line without its newline that is not valid JSON was
// cut short by a killed run and is ignored; any other bad line is an Error naming `name`, the
// line number and the key.
RunMetrics parse_run_metrics(std::string_view text, const std::string& name);
// The same for a file; an Error names the path when it cannot be read.
RunMetrics read_run_metrics(const std::string& path);

// The cumulative FLOPs at `step`: flops_actual of the last train row (in step order) at or before
// `step` that has it. Eval rows carry no FLOPs; this is where they fall on a FLOPs axis.
std::optional<double> flops_at_step(const std::vector<MetricRow>& train, int64_t step);

// The training seconds so far at `step`: over the train rows (in step order) at or before `step`,
// each row's ms_per_step times the steps since the row before it (since step 0 for the first).
// Only the steps count, not evaluations or checkpoints. A resumed run's rows after its checkpoint
// were dropped and rewritten, so the steps between its last kept row and the checkpoint count at
// the pace of the first row after it. None when no train row is at or before `step`, or one of
// them has no ms_per_step.
std::optional<double> seconds_at_step(const std::vector<MetricRow>& train, int64_t step);

}  // namespace sparsetrain
