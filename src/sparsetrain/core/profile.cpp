#include "sparsetrain/core/profile.h"

#include <atomic>
#include <chrono>
#include <mutex>

namespace sparsetrain {

namespace {

std::atomic<bool> enabled{false};
std::mutex totals_mutex;
std::vector<PhaseTime> totals;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

bool profiling() { return enabled.load(std::memory_order_relaxed); }

void set_profiling(bool on) { enabled.store(on, std::memory_order_relaxed); }

ProfileScope::ProfileScope(const char* phase) : phase_(phase), start_ns_(profiling() ? now_ns() : -1) {}

ProfileScope::~ProfileScope() {
  if (start_ns_ < 0) return;
  const double ms = static_cast<double>(now_ns() - start_ns_) / 1e6;
  std::lock_guard lock(totals_mutex);
  for (PhaseTime& t : totals)
    if (t.phase == phase_) {
      t.ms += ms;
      ++t.calls;
      return;
    }
  totals.push_back({phase_, ms, 1});
}

std::vector<PhaseTime> profile_totals() {
  std::lock_guard lock(totals_mutex);
  return totals;
}

void reset_profile() {
  std::lock_guard lock(totals_mutex);
  totals.clear();
}

}  // namespace sparsetrain
