#include "sparsetrain/kernels/peak_rate.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "sparsetrain/core/aligned_buffer.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/kernels/kernel_list.h"

namespace sparsetrain {

namespace ref {
// Scalar chains, as simd/peak.h's: whatever the compiler makes of the plain loop is the rate the
// reference kernels could reach.
int64_t multiply_add_chains(int64_t iterations, float seed, float* sum) {
  constexpr int kChains = 12;
  float chains[kChains] = {};
  for (int64_t i = 0; i < iterations; ++i)
    for (float& c : chains) c = c * 0.5f + seed;
  float total = 0.0f;
  for (const float c : chains) total += c;
  *sum = total;
  return iterations * kChains * 2;
}
}  // namespace ref

namespace {

#define CHAINS(isa) SPARSETRAIN_IMPL(isa, multiply_add_chains, nullptr)
const KernelList<int64_t, MultiplyAddChainsFn> kChains = SPARSETRAIN_IMPL_LIST(CHAINS, multiply_add_chains);
const KernelList<int64_t, MultiplyAddChainsFn> kChainsBf16 =
    SPARSETRAIN_IMPL_LIST_AFTER(CHAINS(avx512_bf16), CHAINS, multiply_add_chains);

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Every thread runs `iterations` rounds at once; returns the seconds, and in `flops` what they did.
double run_everywhere(MultiplyAddChainsFn* chains, int64_t iterations, double& flops) {
  const int nth = num_threads();
  std::vector<int64_t> done(static_cast<std::size_t>(nth), 0);
  std::vector<float> sums(static_cast<std::size_t>(nth), 0.0f);
  const auto start = std::chrono::steady_clock::now();
  parallel_run(nth, [&](int ith, int) { done[ith] = chains(iterations, 0.5f, &sums[ith]); });
  const double seconds = seconds_since(start);
  flops = 0;
  for (const int64_t d : done) flops += static_cast<double>(d);
  return seconds;
}

}  // namespace

PeakRate measure_peak_gflops(Precision precision) {
  const auto& impl = pick("peak_multiply_add", precision == Precision::Bf16 ? kChainsBf16 : kChains, int64_t{0});
  // Doubling the rounds until a run lasts 20 ms is the warm-up.
  constexpr double kRunSeconds = 0.02;
  int64_t iterations = int64_t{1} << 10;
  double flops = 0;
  while (run_everywhere(impl.run, iterations, flops) < kRunSeconds && iterations < (int64_t{1} << 40)) iterations *= 2;
  double best = 0;
  for (int run = 0; run < 5; ++run) best = std::max(best, flops / run_everywhere(impl.run, iterations, flops));
  return {best * 1e-9, impl.name};
}

double measure_read_gbs(int64_t bytes) {
  if (bytes == 0) {
    const int64_t memory = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
    bytes = memory > 0 ? std::min(int64_t{512} << 20, memory / 8) : int64_t{512} << 20;
  }
  const int64_t words = bytes / static_cast<int64_t>(sizeof(uint64_t));
  if (words < 1) fail("measure_read_gbs: {} bytes is less than one 8-byte word", bytes);
  AlignedBuffer<uint64_t> buffer(static_cast<std::size_t>(words));
  parallel_ranges(words, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) buffer[static_cast<std::size_t>(i)] = static_cast<uint64_t>(i) + 1;
  });
  const int nth = num_threads();
  std::vector<uint64_t> seen(static_cast<std::size_t>(nth), 0);
  double best = 0;
  for (int pass = 0; pass < 5; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    parallel_run(nth, [&](int ith, int n) {
      int64_t begin = 0, end = 0;
      balance_even(words, ith, n, begin, end);
      uint64_t any = 0;  // an OR the compiler vectorizes, so the loads, not the adds, set the pace
      for (int64_t i = begin; i < end; ++i) any |= buffer[static_cast<std::size_t>(i)];
      seen[static_cast<std::size_t>(ith)] = any;
    });
    best = std::max(best, static_cast<double>(words * 8) / seconds_since(start));
  }
  // The buffer holds 1 .. words, so every thread with a part saw a nonzero word; checking keeps the reads.
  if (std::none_of(seen.begin(), seen.end(), [](uint64_t v) { return v != 0; }))
    fail("measure_read_gbs: read back nothing of a buffer written with nonzero words");
  return best * 1e-9;
}

}  // namespace sparsetrain
