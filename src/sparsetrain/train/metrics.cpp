#include "sparsetrain/train/metrics.h"

#include <cmath>
#include <filesystem>
#include <sstream>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/io/atomic_file.h"

namespace sparsetrain {

using json = nlohmann::json;

MetricsLog::MetricsLog(std::string path, int64_t resume_step) : path_(std::move(path)) {
  if (path_.empty()) return;
  if (resume_step >= 0 && std::filesystem::exists(path_)) {
    std::istringstream in(read_file(path_));
    std::string line, kept;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // no newline: a line cut short by a crash
      const json row = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (row.is_discarded() || !row.contains("step") || row["step"].get<int64_t>() > resume_step) continue;
      kept += line + "\n";
    }
    write_file_atomically(path_, kept);
  }
  file_ = std::fopen(path_.c_str(), "a");
  if (file_ == nullptr) fail("{}: cannot open for appending", path_);
}

MetricsLog::~MetricsLog() {
  if (file_ != nullptr) std::fclose(file_);
}

void MetricsLog::add_listener(Listener listener) { listeners_.push_back(std::move(listener)); }

void MetricsLog::write(const json& given) {
  if (file_ == nullptr) return;
  json row = given;
  bool nonfinite = false;
  for (auto& [key, value] : row.items())
    if (value.is_number_float() && !std::isfinite(value.get<double>())) {
      value = nullptr;
      nonfinite = true;
    }
  if (nonfinite) row["nonfinite"] = true;
  const std::string line = row.dump() + "\n";
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0) fail("{}: cannot append a line", path_);
  for (const Listener& listener : listeners_) listener(given);
}

}  // namespace sparsetrain
