// Spreading one sparsity level over parameters: uniform, and ER/ERK's solve with its dense
// fallback, checked against hand-worked budgets.
#include <gtest/gtest.h>

#include <cmath>

#include "error_of.h"
#include "sparsetrain/sparsity/distribution.h"

namespace sparsetrain {
namespace {

using testing::error_of;

double kept(const std::vector<ParameterShape>& params, const std::vector<double>& levels) {
  double total = 0.0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    double n = 1.0;
    for (int64_t d : params[i].shape) n *= static_cast<double>(d);
    total += (1.0 - levels[i]) * n;
  }
  return total;
}

const std::vector<ParameterShape> kTwo = {{"a.weight", {10, 10}}, {"b.weight", {100, 10}}};

TEST(Distribution, UniformGivesEveryParameterTheLevelAndOverridesWin) {
  EXPECT_EQ(distribute_sparsity(Distribution::Uniform, 0.75, kTwo), (std::vector<double>{0.75, 0.75}));
  EXPECT_EQ(distribute_sparsity(Distribution::Uniform, 0.75, kTwo, {{"b.weight", 0.2}}),
            (std::vector<double>{0.75, 0.2}));
}

TEST(Distribution, ErScalesDensityByFanInPlusFanOutAndKeepsTheUniformBudget) {
  // raw densities 20/100 = 0.2 and 110/1000 = 0.11; budget 50 + 500 = 550 kept, divisor
  // 0.2 * 100 + 0.11 * 1000 = 130, so eps = 550 / 130.
  const std::vector<double> s = distribute_sparsity(Distribution::ER, 0.5, kTwo);
  const double eps = 550.0 / 130.0;
  EXPECT_NEAR(s[0], 1.0 - 0.2 * eps, 1e-12);
  EXPECT_NEAR(s[1], 1.0 - 0.11 * eps, 1e-12);
  EXPECT_NEAR(kept(kTwo, s), 550.0, 1e-9);
  EXPECT_LT(s[0], s[1]);  // the small layer is denser
}

TEST(Distribution, ALayerThatWouldExceedFullDensityTurnsDenseAndTheRestIsResolved) {
  // At 10%, eps = 990 / 130 puts a.weight at density 1.52: it becomes dense. Its 10 extra
  // kept weights come out of b's budget: eps = (900 - 10) / 110.
  const std::vector<double> s = distribute_sparsity(Distribution::ER, 0.1, kTwo);
  EXPECT_EQ(s[0], 0.0);
  EXPECT_NEAR(s[1], 1.0 - 0.11 * 890.0 / 110.0, 1e-12);
  EXPECT_NEAR(kept(kTwo, s), 990.0, 1e-9);
}

TEST(Distribution, ZeroSparsityMakesEverythingDense) {
  for (Distribution d : {Distribution::ER, Distribution::ERK})
    EXPECT_EQ(distribute_sparsity(d, 0.0, kTwo), (std::vector<double>{0.0, 0.0}));
}

TEST(Distribution, ErkCountsEveryDimensionErCountsFanInAndFanOut) {
  const std::vector<ParameterShape> conv = {{"conv.weight", {16, 8, 3, 3}}, {"fc.weight", {10, 1152}}};
  const std::vector<double> er = distribute_sparsity(Distribution::ER, 0.9, conv);
  const std::vector<double> erk = distribute_sparsity(Distribution::ERK, 0.9, conv);
  const double n_conv = 16 * 8 * 9, n_fc = 10 * 1152;
  const double budget = (n_conv - std::floor(0.9 * n_conv)) + (n_fc - std::floor(0.9 * n_fc));
  const double er_raw[] = {24.0 / 128.0, 1162.0 / 11520.0};
  const double erk_raw[] = {30.0 / n_conv, 1162.0 / n_fc};
  const double er_eps = budget / (er_raw[0] * n_conv + er_raw[1] * n_fc);
  const double erk_eps = budget / (erk_raw[0] * n_conv + erk_raw[1] * n_fc);
  EXPECT_NEAR(er[0], 1.0 - er_raw[0] * er_eps, 1e-12);
  EXPECT_NEAR(erk[0], 1.0 - erk_raw[0] * erk_eps, 1e-12);
  EXPECT_NEAR(erk[1], 1.0 - erk_raw[1] * erk_eps, 1e-12);
  EXPECT_NEAR(kept(conv, er), budget, 1e-9);
  EXPECT_NEAR(kept(conv, erk), budget, 1e-9);
}

TEST(Distribution, OverriddenParametersSitOutsideTheSolve) {
  const std::vector<ParameterShape> three = {{"a", {10, 10}}, {"b", {100, 10}}, {"c", {50, 50}}};
  const std::vector<double> s = distribute_sparsity(Distribution::ER, 0.5, three, {{"c", 0.99}});
  EXPECT_EQ(s[2], 0.99);
  EXPECT_NEAR(kept({three[0], three[1]}, {s[0], s[1]}), 550.0, 1e-9);
}

TEST(Distribution, ParsesNamesAndRejectsBadInput) {
  EXPECT_EQ(parse_distribution("erk", "cfg.yaml: sparsity.distribution"), Distribution::ERK);
  EXPECT_STREQ(distribution_name(Distribution::ER), "er");
  EXPECT_EQ(error_of([] { parse_distribution("ERK!", "cfg.yaml: sparsity.distribution"); }),
            "cfg.yaml: sparsity.distribution: unknown distribution 'ERK!'; expected uniform, er or erk");
  EXPECT_EQ(error_of([] { distribute_sparsity(Distribution::ER, 1.5, kTwo); }),
            "er distribution: sparsity must be in [0, 1], got 1.5");
  EXPECT_EQ(error_of([] {
              distribute_sparsity(Distribution::ER, 0.5, kTwo, {{"c.weight", 0.1}});
            }),
            "sparsity distribution: override for 'c.weight', which is not among the sparse parameters");
  EXPECT_EQ(error_of([] {
              distribute_sparsity(Distribution::ER, 0.5, kTwo, {{"a.weight", -0.1}});
            }),
            "sparsity override for 'a.weight': sparsity must be in [0, 1], got -0.1");
  EXPECT_EQ(error_of([] {
              distribute_sparsity(Distribution::Uniform, 0.5, {{"x", {4, 0}}});
            }),
            "sparsity distribution: parameter 'x' has a dimension of 0");
  EXPECT_EQ(error_of([] {
              distribute_sparsity(Distribution::Uniform, 0.5, {{"x", {4}}, {"x", {4}}});
            }),
            "sparsity distribution: parameter 'x' is listed twice");
}

}  // namespace
}  // namespace sparsetrain
