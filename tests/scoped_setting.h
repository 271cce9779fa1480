#pragma once
// Process-wide settings a test changes for one scope: the previous value comes back when the
// scope ends, also when a failed ASSERT leaves it early.
#include "sparsetrain/core/isa.h"
#include "sparsetrain/core/parallel.h"

namespace sparsetrain::testing {

template <typename T, T (*Get)(), void (*Set)(T)>
class ScopedSetting {
 public:
  explicit ScopedSetting(T value) : saved_(Get()) { Set(value); }
  ~ScopedSetting() { Set(saved_); }
  ScopedSetting(const ScopedSetting&) = delete;
  ScopedSetting& operator=(const ScopedSetting&) = delete;

 private:
  T saved_;
};

using ThreadCount = ScopedSetting<int, num_threads, set_num_threads>;  // the OpenMP thread count
using IsaCap = ScopedSetting<CpuIsa, max_isa, set_max_isa>;            // the kernels' ISA cap

}  // namespace sparsetrain::testing
