#pragma once
// Running a test on every kernel ISA: the ISAs this machine and build can run, and a scoped cap
// (SPARSETRAIN_MAX_ISA's programmatic form, scoped_setting.h) that restores the previous one.
#include <vector>

#include "scoped_setting.h"
#include "sparsetrain/core/isa.h"

namespace sparsetrain::testing_isa {

// Every kernel ISA this machine and build can run, the reference first.
inline std::vector<CpuIsa> usable_isas() {
  std::vector<CpuIsa> isas;
  for (CpuIsa isa : {CpuIsa::Ref, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Avx512Bf16})
    if (isa <= cpu_isa()) isas.push_back(isa);
  return isas;
}

using testing::IsaCap;

}  // namespace sparsetrain::testing_isa
