#pragma once
// Running a test on every kernel ISA: the ISAs this machine and build can run, and a scoped cap
// (SPARSETRAIN_MAX_ISA's programmatic form) that restores the previous one.
#include <vector>

#include "core/isa.h"

namespace sparsetrain::testing_isa {

// Every kernel ISA this machine and build can run, the reference first.
inline std::vector<CpuIsa> usable_isas() {
  std::vector<CpuIsa> isas;
  for (CpuIsa isa : {CpuIsa::Ref, CpuIsa::Avx2, CpuIsa::Avx512})
    if (isa <= cpu_isa()) isas.push_back(isa);
  return isas;
}

// Caps the kernels' ISA for a scope and restores the previous cap.
class IsaCap {
 public:
  explicit IsaCap(CpuIsa isa) : saved_(max_isa()) { set_max_isa(isa); }
  ~IsaCap() { set_max_isa(saved_); }
  IsaCap(const IsaCap&) = delete;
  IsaCap& operator=(const IsaCap&) = delete;

 private:
  CpuIsa saved_;
};

}  // namespace sparsetrain::testing_isa
