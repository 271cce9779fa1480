#pragma once
// The rates that bound a kernel on this machine, measured rather than assumed, for the floor
// `bench linear` reports: the multiply-add rate of the instructions the kernels use, and the rate
// at which the threads read memory. Virtual machines of one name land on hosts whose FMA rates
// differ by 2x (docs/benchmarks.md), so any constant is wrong on some of them.
#include <cstdint>
#include <string>

#include "sparsetrain/core/precision.h"

namespace sparsetrain {

// One thread's register-only chains: `iterations` rounds of independent multiply-adds on whole
// vectors, no memory touched. Writes the sum of every lane of every chain to *sum (so the work
// cannot be dropped; it depends only on `iterations` and `seed`, see simd/peak.h) and returns
// the FLOPs done, a multiply-add counting 2.
using MultiplyAddChainsFn = int64_t(int64_t iterations, float seed, float* sum);

namespace ref {
MultiplyAddChainsFn multiply_add_chains;
}
namespace avx2 {
MultiplyAddChainsFn multiply_add_chains;
}
namespace avx512 {
MultiplyAddChainsFn multiply_add_chains;
}
namespace avx512_bf16 {
MultiplyAddChainsFn multiply_add_chains;
}

struct PeakRate {
  double gflops = 0;  // all threads together
  std::string loop;   // the implementation that ran, e.g. "multiply_add_chains_avx512"
};

// The multiply-add peak of num_threads() threads running the chains of the first usable entry of
// avx512 -> avx2 -> ref (fp32 FMA at the widest vector), or, in bf16, avx512_bf16 (vdpbf16ps, two
// multiply-adds per float32 lane) first: the instructions the fp32 or bf16 kernels run on. The
// best of five runs of about 20 ms each, after a warm-up that lets the clocks settle.
PeakRate measure_peak_gflops(Precision precision);

// GB/s at which num_threads() threads read `bytes` of memory, each its own contiguous part: the
// best of five passes over a buffer written once beforehand. 0 = 512 MiB, far beyond any
// last-level cache of the hosts measured (32 MB), or an eighth of the physical memory if less.
double measure_read_gbs(int64_t bytes = 0);

}  // namespace sparsetrain
