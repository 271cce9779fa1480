#pragma once
// metrics.jsonl in the model directory: one JSON object per line, flushed as written, e.g.
//   {"step":100,"split":"train","loss":2.31,"lr":0.001,"sparsity":0.9,...}
// Non-finite numbers are written as null with "nonfinite": true (JSON has no NaN).
#include <cstdint>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sparsetrain {

class MetricsLog {
 public:
  // Opens `path` for appending. When resuming at `resume_step`, rows of later steps (written
  // after that checkpoint) and a truncated last line are dropped first, so the file reads as if
  // the run had never stopped. An empty path writes nothing (the ranks of a data-parallel run
  // but rank 0).
  MetricsLog(std::string path, int64_t resume_step);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  void write(const nlohmann::json& row);

  // `listener` gets every row written from now on, as given (non-finite numbers and all), so
  // other logs (train/tensorboard_log.h) report the very values metrics.jsonl holds.
  using Listener = std::function<void(const nlohmann::json& row)>;
  void add_listener(Listener listener);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::vector<Listener> listeners_;
};

}  // namespace sparsetrain
