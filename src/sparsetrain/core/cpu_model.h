#pragma once
// The processor a run executes on, as the determinism contract names it: the same binary and ISA
// path can round differently on another CPU model, because oneDNN sizes its GEMM blocks by the
// caches it finds (docs/reliability.md#determinism-contract).
#include <string>

namespace sparsetrain {

struct CpuModel {
  std::string vendor;  // e.g. "AuthenticAMD"
  std::string name;    // the brand string, e.g. "AMD EPYC 9R14" (a virtual machine may shorten it)
  int family = 0;      // display family and model, as /proc/cpuinfo's "cpu family" and "model"
  int model = 0;
  int stepping = 0;
};

const CpuModel& cpu_model();
// One line: "AMD EPYC (AuthenticAMD family 25 model 17 stepping 1)".
std::string describe(const CpuModel& cpu);

}  // namespace sparsetrain
