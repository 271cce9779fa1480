// The bf16 weight copy of mixed precision: written by the optimizer as it updates the float32
// master values (no pass of its own), and remade whenever the values change any other way.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <ostream>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "optim_test_util.h"
#include "sparsetrain/core/bf16.h"
#include "sparsetrain/formats/format_spec.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/optim/adamw.h"
#include "sparsetrain/optim/sgd.h"

namespace sparsetrain {
namespace {

using optim_test::uniform;

// A [rows x cols] parameter of nonzero values, sparse under a random half-dense mask when a
// storage other than dense is asked for.
struct Case {
  std::string name;
  std::optional<FormatSpec> format;  // compressed in this format
  bool masked = false;               // masked-dense
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

Parameter make_param(const Case& c, int64_t rows, int64_t cols, uint64_t seed) {
  Parameter p("w", {rows, cols});
  float* v = p.dense().data;
  for (int64_t i = 0; i < rows * cols; ++i) v[i] = uniform(seed, "w", static_cast<uint64_t>(i));
  const FormatSpec mask_format = c.format.value_or(FormatSpec::csr());
  if (c.format || c.masked) p.sparsify(random_mask(mask_format, rows, cols, 0.5, Philox(seed, "mask")), c.format);
  return p;
}

void set_grad(Parameter& p, uint64_t seed, int step) {
  std::span<float> g = p.grad();
  for (std::size_t i = 0; i < g.size(); ++i)
    g[i] = uniform(seed, "g" + std::to_string(step), static_cast<uint64_t>(i), 0.1f);
}

// Every entry of the copy against the values rounded to nearest even.
void expect_copy_is_rounded_values(Parameter& p, const std::string& when) {
  const std::span<const float> v = std::as_const(p).values();
  const Bf16* copy = p.bf16_values();
  for (std::size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(copy[i].bits, to_bf16(v[i]).bits) << when << ": entry " << i << " of " << v.size();
}

using Make = std::function<std::unique_ptr<Optimizer>(std::vector<Parameter*>)>;

struct Bf16CopyTest : ::testing::TestWithParam<Case> {};

// A parameter large enough for several threads and several copy chunks per thread, updated by
// both optimizers: the copy is current after each step without being remade, and the float32
// values are bit for bit those of a twin that keeps no copy.
TEST_P(Bf16CopyTest, TheOptimizerWritesTheCopyAndTheValuesDoNotChange) {
  const Make makers[] = {
      [](std::vector<Parameter*> ps) {
        return std::make_unique<AdamW>(std::move(ps), 1e-2, AdamWOptions{.weight_decay = 0.1});
      },
      [](std::vector<Parameter*> ps) {
        return std::make_unique<Sgd>(std::move(ps), 0.1, SgdOptions{.momentum = 0.9, .nesterov = true});
      },
  };
  for (const Make& make : makers) {
    Parameter p = make_param(GetParam(), 400, 404, 7);
    Parameter twin = make_param(GetParam(), 400, 404, 7);
    auto opt = make({&p});
    auto twin_opt = make({&twin});
    expect_copy_is_rounded_values(p, "before the first step");
    for (int step = 1; step <= 3; ++step) {
      set_grad(p, 3, step);
      set_grad(twin, 3, step);
      opt->step();
      twin_opt->step();
      const std::string when = std::string(opt->name()) + " step " + std::to_string(step);
      // Masked-dense zeroes its pruned values after the update, so its copy is remade on demand.
      EXPECT_EQ(p.bf16_current(), !GetParam().masked) << when;
      expect_copy_is_rounded_values(p, when);
      const std::span<const float> got = std::as_const(p).values(), want = std::as_const(twin).values();
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(optim_test::bits(got[i]), optim_test::bits(want[i])) << when << ": value " << i;
    }
    EXPECT_FALSE(twin.bf16_current()) << "a parameter never asked for a copy keeps none";
  }
}

// Every other way of changing the values marks the copy stale, and the next bf16_values() remakes
// it: a write through values(), assign_dense, a mask change (a new number of entries when
// compressed).
TEST_P(Bf16CopyTest, OtherChangesOfTheValuesRemakeTheCopy) {
  Parameter p = make_param(GetParam(), 36, 52, 11);
  expect_copy_is_rounded_values(p, "first copy");
  ASSERT_TRUE(p.bf16_current());

  p.values()[0] = 3.0f;
  EXPECT_FALSE(p.bf16_current()) << "a write through values()";
  expect_copy_is_rounded_values(p, "after a write through values()");
  EXPECT_EQ(to_float(p.bf16_values()[0]), 3.0f);

  Matrix dense(36, 52);
  for (int64_t i = 0; i < dense.size(); ++i) dense.data()[i] = uniform(12, "d", static_cast<uint64_t>(i));
  p.assign_dense(dense);
  EXPECT_FALSE(p.bf16_current()) << "assign_dense";
  expect_copy_is_rounded_values(p, "after assign_dense");

  if (!p.is_sparse()) return;
  const FormatSpec mask_format = GetParam().format.value_or(FormatSpec::csr());
  p.set_mask(random_mask(mask_format, 36, 52, 0.8, Philox(13, "mask")));
  EXPECT_FALSE(p.bf16_current()) << "set_mask";
  expect_copy_is_rounded_values(p, "after set_mask");
}

INSTANTIATE_TEST_SUITE_P(Storages, Bf16CopyTest,
                         ::testing::Values(Case{"dense", std::nullopt, false}, Case{"masked_dense", std::nullopt, true},
                                         Case{"csr", FormatSpec::csr(), false},
                                         Case{"bcsr4", FormatSpec::bcsr(4), false},
                                         Case{"nm_2_4", FormatSpec::nm(2, 4), false}),
                         [](const ::testing::TestParamInfo<Case>& param) { return param.param.name; });

}  // namespace
}  // namespace sparsetrain
