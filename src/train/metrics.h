#pragma once
// metrics.jsonl in the model directory: one JSON object per line, flushed as written, e.g.
//   {"step":100,"split":"train","loss":2.31,"lr":0.001,"sparsity":0.9,...}
// Non-finite numbers are written as null with "nonfinite": true (JSON has no NaN).
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace sparsetrain {

class MetricsLog {
 public:
  // Opens `path` for appending. When resuming at `resume_step`, rows of later steps (written
  // after that checkpoint) and a truncated last line are dropped first, so the file reads as if
  // the run had never stopped.
  MetricsLog(std::string path, int64_t resume_step);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  void write(nlohmann::json row);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace sparsetrain
