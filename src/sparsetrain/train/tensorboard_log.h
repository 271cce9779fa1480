#pragma once
// TensorBoard event files in the model directory, as the Cerebras Model Zoo writes its summaries:
// DIR/train/ gets the train rows of metrics.jsonl and DIR/eval/ its eval rows, each row one event
// of its step, so `tensorboard --logdir DIR` shows the runs "train" and "eval" with their common
// tags (loss) on one chart. The rows come from metrics.jsonl's writer as it writes them, so both
// hold the same values; the tags are listed in docs/training.md.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "sparsetrain/io/event_file.h"
#include "sparsetrain/train/metrics.h"
#include "sparsetrain/train/setup.h"

namespace sparsetrain {

class TensorBoardLog {
 public:
  TensorBoardLog(const Setup& s, const std::string& model_dir);

  // One metrics row: {"step": N, "split": "train" | "eval", key: number, ...}.
  void write(const nlohmann::json& row);

 private:
  const Setup& s_;
  EventFileWriter train_, eval_;
};

// Training from step `resume_step` (>= 0) first cuts the event files already in train/ and eval/
// after that step (cut_event_files), printing a line for each damaged record it cut at, whether
// or not this run writes events; evaluation alone (-1) leaves them as they are. Then, when the
// config's runconfig.tensorboard is on, has every row `metrics` writes from now on go to a
// TensorBoardLog of `model_dir` as well.
void log_to_tensorboard(MetricsLog& metrics, const Setup& s, const std::string& model_dir, int64_t resume_step);

}  // namespace sparsetrain
