// The loops behind bench linear's measured floor (kernels/peak_rate.h): each ISA's chains do the
// rounds they report, and the measurements name the loop that ran and give rates a machine can have.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "isa_testing.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/kernels/peak_rate.h"

namespace sparsetrain {
namespace {

struct Chains {
  const char* isa;
  CpuIsa needs;
  MultiplyAddChainsFn* run;
  int lanes;  // float32 lanes per vector
};

std::vector<Chains> fp32_chains() {
  std::vector<Chains> all = {{"ref", CpuIsa::Ref, ref::multiply_add_chains, 1}};
#ifdef SPARSETRAIN_HAVE_AVX2
  all.push_back({"avx2", CpuIsa::Avx2, avx2::multiply_add_chains, 8});
#endif
#ifdef SPARSETRAIN_HAVE_AVX512
  all.push_back({"avx512", CpuIsa::Avx512, avx512::multiply_add_chains, 16});
#endif
  return all;
}

// Each lane runs x <- x * 0.5 + 0.5 from 0, so after n rounds it holds 1 - 2^-n exactly (the
// product is exact, fused or not; 1 from n = 25 on); 12 chains of `lanes` lanes, whose sum is
// exact too for these n.
TEST(MultiplyAddChains, Fp32ChainsRunTheRoundsTheyCount) {
  for (const Chains& c : fp32_chains()) {
    if (c.needs > cpu_isa()) continue;
    for (const int64_t n : {1, 3, 12, 64}) {
      SCOPED_TRACE(std::string(c.isa) + " rounds " + std::to_string(n));
      float sum = -1.0f;
      const int64_t flops = c.run(n, 0.5f, &sum);
      EXPECT_EQ(flops, n * 12 * c.lanes * 2);
      const double lane = n >= 25 ? 1.0 : 1.0 - std::ldexp(1.0, -static_cast<int>(n));
      EXPECT_DOUBLE_EQ(sum, 12.0 * c.lanes * static_cast<float>(lane));
    }
  }
}

// vdpbf16ps adds seed * 1 + seed * 0 to every lane from 1: 1 + n * seed after n rounds, exact for
// a seed of 2^-4 and these n; 32 multiply-adds (64 FLOPs) per instruction.
TEST(MultiplyAddChains, Bf16DotChainsRunTheRoundsTheyCount) {
#ifdef SPARSETRAIN_HAVE_AVX512
  if (cpu_isa() < CpuIsa::Avx512Bf16) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  for (const int64_t n : {1, 5, 100}) {
    SCOPED_TRACE(n);
    float sum = -1.0f;
    EXPECT_EQ(avx512_bf16::multiply_add_chains(n, 0.0625f, &sum), n * 12 * 16 * 4);
    EXPECT_EQ(sum, 12.0f * 16.0f * (1.0f + static_cast<float>(n) * 0.0625f));
  }
#else
  GTEST_SKIP() << "built without the AVX-512 kernels";
#endif
}

std::string expected_loop(CpuIsa cap, Precision precision) {
  if (cap == CpuIsa::Avx512Bf16 && precision == Precision::Bf16) return "multiply_add_chains_avx512_bf16";
  return "multiply_add_chains_" + std::string(isa_name(std::min(cap, CpuIsa::Avx512)));
}

// The measured peak runs the list entry of the ISA the kernels use, and gives a rate above 0 and
// below what any core can do: 128 FLOPs a cycle (two vdpbf16ps a cycle) at 6 GHz. A loop the
// compiler had dropped would read as far faster.
TEST(MeasurePeak, RunsTheKernelsIsaAndGivesAPossibleRate) {
  for (const CpuIsa isa : testing_isa::usable_isas())
    for (const Precision precision : {Precision::Fp32, Precision::Bf16}) {
      SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(precision_name(precision)));
      const testing::IsaCap cap(isa);
      const PeakRate peak = measure_peak_gflops(precision);
      EXPECT_EQ(peak.loop, expected_loop(isa, precision));
      EXPECT_GT(peak.gflops, 0.0);
      EXPECT_LT(peak.gflops, 128.0 * 6.0 * num_threads());
    }
}

// Reads of 64 MiB: a rate above 0 and below 10 TB/s (reads the compiler had dropped would be
// instant); a buffer of one word is read, one of less than a word is an error.
TEST(MeasureReadBandwidth, GivesAPossibleRateAndRefusesAnEmptyBuffer) {
  const double gbs = measure_read_gbs(int64_t{64} << 20);
  EXPECT_GT(gbs, 0.0);
  EXPECT_LT(gbs, 10000.0);
  EXPECT_GT(measure_read_gbs(8), 0.0);  // one word, read by one thread
  EXPECT_THROW(measure_read_gbs(7), Error);
}

}  // namespace
}  // namespace sparsetrain
