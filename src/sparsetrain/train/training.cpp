#include "sparsetrain/train/training.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

namespace sparsetrain {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ProgressBar::ProgressBar(bool enabled, int64_t total) : on_(enabled && ::isatty(STDERR_FILENO) == 1), total_(total) {}

void ProgressBar::update(int64_t step) {
  if (!on_ || now_seconds() - last_ < 0.1) return;
  last_ = now_seconds();
  const int width = 30;
  const auto filled = static_cast<int>(width * step / std::max<int64_t>(total_, 1));
  fmt::print(stderr, "\r[{}{}] {}/{}", std::string(static_cast<std::size_t>(filled), '#'),
             std::string(static_cast<std::size_t>(width - filled), ' '), step, total_);
  std::fflush(stderr);
}

void ProgressBar::clear() {
  if (on_) fmt::print(stderr, "\r\033[K");
}

Training::Training(Setup& s, const RunOptions& o, const RunProgress& p, int64_t total)
    : setup(s),
      options(o),
      progress(p),
      total_steps(total),
      metrics(s.writes() ? (std::filesystem::path(o.model_dir) / "metrics.jsonl").string() : std::string(), p.step),
      bar(o.progress, total) {}

void Training::say(const std::string& text) {
  bar.clear();
  fmt::print("{}\n", text);
  std::fflush(stdout);
}

void Training::stop(int exit_code, std::string message) {
  if (!stop_) stop_ = Stop{exit_code, std::move(message)};
}

}  // namespace sparsetrain
