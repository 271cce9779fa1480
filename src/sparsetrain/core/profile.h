#pragma once
// Phase profile of training steps: with profiling on (`bench train --profile`), every
// ProfileScope adds its wall time to its phase's total, so a step's time can be split into
// linear layers, attention, the head, the optimizer... Off, a scope costs one relaxed load.
//
// Scopes are placed so that they never nest (op entry points, the model's head, the step's
// bookkeeping): each phase's total is time spent in it alone, and what no scope covers is the
// rest of the step.
#include <cstdint>
#include <string>
#include <vector>

namespace sparsetrain {

bool profiling();
void set_profiling(bool on);

class ProfileScope {
 public:
  explicit ProfileScope(const char* phase);  // phase: a string literal, the phase's name
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  const char* phase_;
  int64_t start_ns_;  // < 0: profiling was off when the scope began
};

struct PhaseTime {
  std::string phase;
  double ms = 0.0;
  int64_t calls = 0;
};

// Totals since the last reset, phases in the order they were first entered.
std::vector<PhaseTime> profile_totals();
void reset_profile();

}  // namespace sparsetrain
