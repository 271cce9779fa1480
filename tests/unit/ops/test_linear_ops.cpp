// Every sparse format x every ISA path the machine has x the three linear passes x float32 and
// bf16, against a float64 dense reference: odd shapes, one token, empty rows and columns, sparsity
// 0 and 1, NaN-poisoned outputs, outputs large enough to be streamed, overwrite and accumulate
// modes.
//
// In bf16 the reference takes the operands rounded to bf16 (X, W, dY; not the bias). A product
// of two bf16 values is exact in float32 (8 + 8 significand bits), so the kernels' only error is
// float32 summation, and the float32 tolerance applies unchanged: operands that were not rounded
// (or rounded otherwise than to nearest even) would be off by up to 2^-9 of the terms' sum, far
// outside it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "layer_ops_testing.h"
#include "sparsetrain/core/bf16.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/isa.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/core/precision.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/formats/sparse_weight.h"
#include "sparsetrain/kernels/kernel_list.h"
#include "sparsetrain/kernels/spmm.h"
#include "sparsetrain/ops/linear.h"

namespace sparsetrain {
namespace {

using layer_testing::kNaN;

// Nonzero values, magnitude in [0.5, 1.5), random sign.
void fill_nonzero(Matrix& m, const Philox& rng) { layer_testing::fill_nonzero(m.data(), m.size(), rng); }

// A float32 result against a float64 sum of `terms` products whose absolute values add to abs_sum.
void expect_close(double got, double want, double abs_sum, int64_t terms, const std::string& where) {
  double tol = (static_cast<double>(terms) * 1.2e-7 + 1e-6) * abs_sum + 1e-30;
  ASSERT_TRUE(std::isfinite(got)) << where << ": got " << got;
  ASSERT_LE(std::fabs(got - want), tol) << where << ": got " << got << ", want " << want;
}

struct Case {
  std::string format;
  int64_t rows, cols, tokens;
  double sparsity;
  bool empty_lines;  // clear some rows and columns of the mask
};

// A case as part of a test name (letters, digits and underscores): csr_37x53_T67_s90,
// nm2of4_1600x24_T70_s0, bcsr8_96x80_T130_s70_empty_lines.
std::string name_of(const Case& c) {
  std::string format = c.format;
  if (auto colon = format.find(':'); colon != std::string::npos)
    format = "nm" + format.substr(0, colon) + "of" + format.substr(colon + 1);
  return fmt::format("{}_{}x{}_T{}_s{}{}", format, c.rows, c.cols, c.tokens, std::lround(c.sparsity * 100),
                     c.empty_lines ? "_empty_lines" : "");
}
void PrintTo(const Case& c, std::ostream* os) { *os << name_of(c); }

// The implementation `kernel` must have run for format f on isa: the reference, or the vector
// entry of f's block size or N:M pattern (kernels/spmm_list.cpp).
// bf16 kernels carry a _bf16 suffix: spmm_fwd_bf16, its entries spmm_fwd_csr_bf16_avx512 ...
// avx512_bf16 has entries of the bf16 forward of every format, the CSR backward passes, the
// 16 x 16 and N:M weight passes and N:M backward-data for M <= 4; everything else at that cap
// runs the avx512 entry.
std::string impl_of(const std::string& kernel, const FormatSpec& f, CpuIsa isa, Precision precision) {
  const std::string sfx = precision == Precision::Bf16 ? "_bf16" : "";
  if (isa == CpuIsa::Ref) return kernel + sfx + "_ref";
  if (isa == CpuIsa::Avx512Bf16) {
    const bool nm = f.kind == FormatKind::NM;
    const bool dot_product_entry =
        precision == Precision::Bf16 && (kernel == "spmm_fwd" || kernel == "nm_fwd" || kernel == "csr_backward" ||
                                         (kernel == "sddmm" && !nm && (f.block == 1 || f.block == 16)) ||
                                         kernel == "nm_sddmm" || (kernel == "nm_bwd_data" && f.m <= 4));
    if (!dot_product_entry) isa = CpuIsa::Avx512;
  }
  std::string variant;
  if (kernel == "spmm_fwd" || kernel == "sddmm") variant = "_" + f.name();
  if (kernel == "nm_fwd") variant = f.n == 2 ? "_n2" : "_any";
  if (kernel == "nm_bwd_data") variant = f.m <= 4 ? "_buckets" : "_any";
  return fmt::format("{}{}{}_{}", kernel, variant, sfx, isa_name(isa));
}

// The operand as the kernels of `precision` multiply it.
Matrix operand(const Matrix& m, Precision precision) {
  Matrix r = m.clone();
  if (precision == Precision::Bf16)
    for (int64_t i = 0; i < r.size(); ++i) r.data()[i] = round_bf16(r.data()[i]);
  return r;
}

Mask make_mask(const Case& c, const FormatSpec& f, uint64_t seed) {
  Mask mask = random_mask(f, c.rows, c.cols, c.sparsity, Philox(seed, "mask"));
  if (!c.empty_lines) return mask;
  // Whole block-rows and block-columns, so block formats stay block-uniform.
  const int b = f.block;
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t col = 0; col < c.cols; ++col)
      if ((r / b) % 3 == 1 || (col / b) % 4 == 2) mask.set(r, col, false);
  return mask;
}

void run_case(const Case& c, CpuIsa isa, Precision precision) {
  SCOPED_TRACE(fmt::format("{} isa={} precision={}", name_of(c), isa_name(isa), precision_name(precision)));
  const FormatSpec format = FormatSpec::parse(c.format, "test");
  const uint64_t seed = static_cast<uint64_t>(c.rows * 1000003 + c.cols * 101 + c.tokens);
  Matrix x(c.tokens, c.cols), dense(c.rows, c.cols), dy(c.tokens, c.rows), bias(1, c.rows);
  fill_nonzero(x, Philox(seed, "x"));
  fill_nonzero(dense, Philox(seed, "w"));
  fill_nonzero(dy, Philox(seed, "dy"));
  fill_nonzero(bias, Philox(seed, "b"));
  const Mask mask = make_mask(c, format, seed);
  auto w = SparseWeight::from_dense(format, dense, mask);
  w->validate();
  const Matrix wd = operand(w->to_dense(), precision);  // the weight the kernels see (pruned = 0)
  const Matrix xr = operand(x, precision), dyr = operand(dy, precision);
  const std::string sfx = precision == Precision::Bf16 ? "_bf16" : "";
  auto expect_ran = [&](const std::string& kernel) {
    ASSERT_EQ(last_dispatch(kernel + sfx), impl_of(kernel, format, isa, precision))
        << "the path under test did not run";
  };

  Matrix y(c.tokens, c.rows, kNaN), dx(c.tokens, c.cols, kNaN);
  const std::size_t nvalues = w->values().size();
  std::vector<float> dvalues(nvalues, kNaN), dbias(c.rows, kNaN);
  LinearWorkspace ws;
  ws.precision = precision;
  if (precision == Precision::Bf16) w->refresh_bf16();
  linear_forward(*w, bias.data(), x, y, ws);
  linear_backward(*w, dy, ws, dx, dvalues.data(), dbias.data());
  const bool nm = format.kind == FormatKind::NM;
  const bool csr = !nm && format.block == 1;
  for (std::string kernel :
       {nm ? "nm_fwd" : "spmm_fwd", nm ? "nm_sddmm" : (csr ? "csr_backward" : "sddmm"), "pack_rows"})
    expect_ran(kernel);
  if (nm) expect_ran("nm_bwd_data");

  // The reference sums skip W's zeros: terms that add exactly 0 to both sums (every operand is
  // finite), so only the time they took changes. The tolerances still count every term.
  std::vector<std::vector<int64_t>> kept_in_row(c.rows), kept_in_col(c.cols);
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t k = 0; k < c.cols; ++k)
      if (wd.at(r, k) != 0.0f) {
        kept_in_row[r].push_back(k);
        kept_in_col[k].push_back(r);
      }
  int64_t nonzero_outputs = 0;
  for (int64_t t = 0; t < c.tokens; ++t)
    for (int64_t r = 0; r < c.rows; ++r) {
      double want = bias.at(0, r), abs_sum = std::fabs(want);
      for (int64_t k : kept_in_row[r]) {
        want += static_cast<double>(xr.at(t, k)) * wd.at(r, k);
        abs_sum += std::fabs(static_cast<double>(xr.at(t, k)) * wd.at(r, k));
      }
      expect_close(y.at(t, r), want, abs_sum, c.cols + 1, "forward Y[" + std::to_string(t) + "," + std::to_string(r) + "]");
      nonzero_outputs += y.at(t, r) != bias.at(0, r);
    }
  for (int64_t t = 0; t < c.tokens; ++t)
    for (int64_t k = 0; k < c.cols; ++k) {
      double want = 0, abs_sum = 0;
      for (int64_t r : kept_in_col[k]) {
        want += static_cast<double>(dyr.at(t, r)) * wd.at(r, k);
        abs_sum += std::fabs(static_cast<double>(dyr.at(t, r)) * wd.at(r, k));
      }
      expect_close(dx.at(t, k), want, abs_sum, c.rows, "backward-data dX[" + std::to_string(t) + "," + std::to_string(k) + "]");
    }
  // dW at every kept position, located through the dense twin of the gradient values.
  auto grad = SparseWeight::create(format, c.rows, c.cols);
  grad->assign(dense, mask);
  std::copy(dvalues.begin(), dvalues.end(), grad->values().begin());
  const Matrix dwd = grad->to_dense();
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t k = 0; k < c.cols; ++k) {
      if (!mask.at(r, k)) continue;
      double want = 0, abs_sum = 0;
      for (int64_t t = 0; t < c.tokens; ++t) {
        want += static_cast<double>(dyr.at(t, r)) * xr.at(t, k);
        abs_sum += std::fabs(static_cast<double>(dyr.at(t, r)) * xr.at(t, k));
      }
      expect_close(dwd.at(r, k), want, abs_sum, c.tokens, "backward-weights dW[" + std::to_string(r) + "," + std::to_string(k) + "]");
    }
  for (float v : dvalues) ASSERT_TRUE(std::isfinite(v)) << "a stored gradient (padding included) was not written";
  for (int64_t r = 0; r < c.rows; ++r) {
    double want = 0, abs_sum = 0;
    for (int64_t t = 0; t < c.tokens; ++t) {
      want += dy.at(t, r);
      abs_sum += std::fabs(dy.at(t, r));
    }
    expect_close(dbias[r], want, abs_sum, c.tokens, "bias gradient");
    // The documented order, so every ISA and thread count gives these bits: tokens in order
    // within each 64-token tile, then the tiles' sums in order.
    float total = 0.0f;
    for (int64_t t0 = 0; t0 < c.tokens; t0 += kTokenTile) {
      float tile_sum = 0.0f;
      for (int64_t t = t0; t < std::min(c.tokens, t0 + kTokenTile); ++t) tile_sum += dy.at(t, r);
      total += tile_sum;
    }
    ASSERT_EQ(dbias[r], total) << "bias gradient " << r << " not summed in the documented order";
  }
  // Guard against trivially passing comparisons of mostly-zero outputs.
  if (w->nnz() > 0) {
    EXPECT_GT(nonzero_outputs, 0) << "every output equals the bias: the test would be vacuous";
  }

  // dY made block by block while it is packed (a fused element-wise pass): the same bits, and
  // every token asked for exactly once.
  std::vector<int> asked(static_cast<std::size_t>(c.tokens), 0);
  Matrix dx_from(c.tokens, c.cols, kNaN);
  std::vector<float> dvalues_from(nvalues, kNaN), dbias_from(c.rows, kNaN);
  linear_backward_from(
      *w, c.tokens,
      [&](int64_t t0, MatrixView block) {
        for (int64_t i = 0; i < block.rows; ++i) {
          ++asked[static_cast<std::size_t>(t0 + i)];
          std::copy(dy.data() + (t0 + i) * c.rows, dy.data() + (t0 + i + 1) * c.rows, block.row(i));
        }
        return ConstMatrixView(block);
      },
      ws, dx_from, dvalues_from.data(), dbias_from.data());
  for (int n : asked) ASSERT_EQ(n, 1) << "a token of dY was produced " << n << " times";
  for (int64_t i = 0; i < dx.size(); ++i) ASSERT_EQ(dx_from.data()[i], dx.data()[i]) << "dX element " << i;
  for (std::size_t i = 0; i < nvalues; ++i) ASSERT_EQ(dvalues_from[i], dvalues[i]) << "dW value " << i;
  for (int64_t r = 0; r < c.rows; ++r) ASSERT_EQ(dbias_from[r], dbias[r]) << "bias gradient " << r;

  // Accumulate mode adds to what is there.
  std::vector<float> acc(nvalues), acc_bias(c.rows);
  for (std::size_t i = 0; i < nvalues; ++i) acc[i] = 0.25f * static_cast<float>(i % 7);
  for (int64_t r = 0; r < c.rows; ++r) acc_bias[r] = 1.0f;
  linear_backward(*w, dy, ws, MatrixView{}, acc.data(), acc_bias.data(), true);  // weights only
  if (!nm) expect_ran("sddmm");
  // Two float32 sums, in different orders, of c.tokens products no larger than 1.5 * 1.5.
  const double order_tol = 2.0 * static_cast<double>(c.tokens) * 1.2e-7 * 2.25;
  for (std::size_t i = 0; i < nvalues; ++i)
    ASSERT_NEAR(acc[i], dvalues[i] + 0.25f * static_cast<float>(i % 7), order_tol + 1e-5 * (1 + std::fabs(dvalues[i])))
        << "accumulated gradient " << i;
  for (int64_t r = 0; r < c.rows; ++r) ASSERT_NEAR(acc_bias[r], dbias[r] + 1.0f, 1e-5 * (1 + std::fabs(dbias[r])));
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (std::string f : {"csr", "bcsr4", "bcsr8", "bcsr16"}) {
    for (double s : {0.0, 0.5, 0.9, 1.0}) {
      all.push_back({f, 37, 53, 67, s, false});   // odd everything, two tiles (one partial)
      all.push_back({f, 37, 53, 1, s, false});    // one token
    }
    all.push_back({f, 96, 80, 130, 0.7, true});   // empty rows and columns, three tiles
    all.push_back({f, 16, 16, 64, 0.5, false});   // exact multiples
    all.push_back({f, 300, 45, 200, 0.97, false});  // tall, mostly empty rows
  }
  // Wider than one column slice (kSliceCols) in W and in W^T: the sliced CSR paths.
  all.push_back({"csr", 40, 1700, 70, 0.9, false});
  all.push_back({"csr", 1600, 24, 70, 0.9, false});
  all.push_back({"csr", 1100, 24, 130, 0.9, true});  // sliced W^T over a tile pair and the odd tile
  all.push_back({"2:4", 1600, 24, 70, 0.0, false});
  // Block weight pass: X wider than one column slice in both precisions (three of 512 features
  // in float32, two of 1024 in bf16, over a chunk of kSddmmTiles tiles, then a partial chunk)
  // and, on two threads, more block-rows per thread than one group of transposed dY copies
  // (kSddmmTransposedBytes: 2048 rows here) holds.
  for (std::string f : {"bcsr4", "bcsr8", "bcsr16"}) all.push_back({f, 4200, 1100, 260, 0.97, false});
  // More tiles than one N:M weight-pass chunk (kNmChunkTiles: 4 in float32, 8 in bf16), the
  // last chunk partial.
  all.push_back({"2:4", 37, 56, 600, 0.0, false});
  // Outputs of kStreamOutputBytes and more, Y then dX, leave through non-temporal stores. Rows
  // of 1036 floats start on a vector boundary only every fourth (AVX-512) or second (AVX2) token,
  // so streamed and plain stores mix.
  const int64_t wide = 1036, narrow = 24, tokens = kStreamOutputBytes / (wide * 4) + 1;
  for (std::string f : {"csr", "bcsr16", "2:4"}) {
    const double s = f == "2:4" ? 0.0 : 0.9;
    all.push_back({f, wide, narrow, tokens, s, false});
    all.push_back({f, narrow, wide, tokens, s, false});
  }
  for (std::string f : {"2:4", "1:4", "2:8"}) {
    all.push_back({f, 37, 56, 67, 0.0, false});
    all.push_back({f, 37, 56, 1, 0.0, false});
    all.push_back({f, 21, 168, 130, 0.0, false});
  }
  // Odd N: entries paired across groups, an odd count per row leaving one (13 and 21).
  all.push_back({"1:4", 21, 52, 67, 0.0, false});
  all.push_back({"3:8", 21, 56, 67, 0.0, false});
  // Odd N with M <= 4: backward-data's buckets of three kept features (bf16: a pair, then one).
  all.push_back({"3:4", 21, 56, 67, 0.0, false});
  return all;
}

// One test per case, usable ISA and precision, e.g. --gtest_filter='*/bcsr8_37x53_T67_s90_avx2_bf16'.
// fp32 has no avx512_bf16 entries: that cap runs its avx512 ones, tested at the avx512 cap.
std::vector<std::tuple<Case, CpuIsa, Precision>> params() {
  std::vector<std::tuple<Case, CpuIsa, Precision>> all;
  for (const Case& c : cases())
    for (CpuIsa isa : layer_testing::usable_isas())
      for (Precision p : {Precision::Fp32, Precision::Bf16})
        if (isa != CpuIsa::Avx512Bf16 || p == Precision::Bf16) all.emplace_back(c, isa, p);
  return all;
}

class LinearPasses : public ::testing::TestWithParam<std::tuple<Case, CpuIsa, Precision>> {};

TEST_P(LinearPasses, MatchFloat64Reference) {
  const auto& [c, isa, precision] = GetParam();
  const layer_testing::IsaCap cap(isa);
  run_case(c, isa, precision);
}

std::string test_name(const ::testing::TestParamInfo<std::tuple<Case, CpuIsa, Precision>>& param_info) {
  return fmt::format("{}_{}_{}", name_of(std::get<0>(param_info.param)), isa_name(std::get<1>(param_info.param)),
                     precision_name(std::get<2>(param_info.param)));
}

INSTANTIATE_TEST_SUITE_P(EveryFormatEveryIsa, LinearPasses, ::testing::ValuesIn(params()), test_name);

// The bf16 copy must follow the structure: a copy older than it is refused by name.
TEST(LinearOps, StaleBf16CopyIsRefused) {
  const FormatSpec format = FormatSpec::parse("csr", "test");
  Matrix dense(8, 8, 1.0f), x(3, 8, 1.0f), y(3, 8);
  Mask mask = random_mask(format, 8, 8, 0.5, Philox(1, "mask"));
  auto w = SparseWeight::from_dense(format, dense, mask);
  w->refresh_bf16();
  w->update_mask(random_mask(format, 8, 8, 0.75, Philox(2, "mask")));
  LinearWorkspace ws;
  ws.precision = Precision::Bf16;
  try {
    linear_forward(*w, nullptr, x, y, ws);
    FAIL() << "a stale bf16 copy was used";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("refresh_bf16"), std::string::npos) << e.what();
  }
}

// Cases exist only for the ISAs this machine and build run; the others are reported as skipped.
TEST(LinearOps, IsasThisMachineCannotRunAreSkipped) {
  const std::vector<CpuIsa> usable = layer_testing::usable_isas();
  ASSERT_NE(std::find(usable.begin(), usable.end(), CpuIsa::Ref), usable.end()) << "the reference runs everywhere";
  std::string missing;
  for (CpuIsa isa : {CpuIsa::Ref, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Avx512Bf16})
    if (std::find(usable.begin(), usable.end(), isa) == usable.end()) missing.append(" ").append(isa_name(isa));
  if (!missing.empty()) GTEST_SKIP() << "not usable on this machine or build, so not tested:" << missing;
}

}  // namespace
}  // namespace sparsetrain
