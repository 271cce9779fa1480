// AdamW against hand-computed steps and a float64 re-implementation of PyTorch's algorithm, and
// the sparse guarantees.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "optim_test_util.h"
#include "sparsetrain/optim/adamw.h"

namespace sparsetrain {
namespace {

using optim_test::uniform;
using testing::error_of;

// PyTorch's _single_tensor_adamw in double.
struct AdamWReference {
  AdamWOptions o;
  std::vector<double> p, m, v;
  int64_t steps = 0;

  void step(double lr, const std::vector<double>& g) {
    ++steps;
    if (m.empty()) {
      m.assign(p.size(), 0.0);
      v.assign(p.size(), 0.0);
    }
    const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(steps));
    const double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(steps));
    for (std::size_t i = 0; i < p.size(); ++i) {
      p[i] *= 1.0 - lr * o.weight_decay;
      m[i] = o.beta1 * m[i] + (1.0 - o.beta1) * g[i];
      v[i] = o.beta2 * v[i] + (1.0 - o.beta2) * g[i] * g[i];
      p[i] -= lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + o.eps);
    }
  }
};

std::vector<float> scalar_run(double lr, AdamWOptions options, const std::vector<float>& grads) {
  Parameter p("w", {1});
  p.values()[0] = 1.0f;
  AdamW adamw({&p}, lr, options);
  std::vector<float> out;
  for (float g : grads) {
    p.grad()[0] = g;
    adamw.step();
    out.push_back(p.values()[0]);
  }
  return out;
}

void expect_values(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "after step " << i + 1;
}

TEST(AdamW, DefaultsArePyTorchs) {
  const AdamWOptions o;
  EXPECT_EQ(o.beta1, 0.9);
  EXPECT_EQ(o.beta2, 0.999);
  EXPECT_EQ(o.eps, 1e-8);
  EXPECT_EQ(o.weight_decay, 0.01);
}

TEST(AdamW, ConstantGradientStepsByLrByHand) {
  // With a constant gradient the bias-corrected moments are g and g^2, so every step moves by
  // lr * g / (|g| + eps) ~ lr; decoupled decay multiplies by 1 - lr * wd first.
  expect_values(scalar_run(0.1, {.weight_decay = 0.0}, {0.5f, 0.5f, 0.5f}), {0.9, 0.8, 0.7});
  // 1 * 0.999 - 0.1; 0.899 * 0.999 - 0.1; 0.798101 * 0.999 - 0.1
  expect_values(scalar_run(0.1, {}, {0.5f, 0.5f, 0.5f}), {0.899, 0.798101, 0.697302899});
}

TEST(AdamW, ChangingGradientByHand) {
  // Step 2 (g = -1): m = 0.9 * 0.05 - 0.1 = -0.055, v = 0.999 * 0.00025 + 0.001 = 0.00124975,
  // m / 0.19 = -0.289474, sqrt(v / 0.001999) = 0.790688, p = 0.899 * 0.999 + 0.1 * 0.366099.
  expect_values(scalar_run(0.1, {}, {0.5f, -1.0f, 0.25f}), {0.899000002, 0.934711354, 0.947445709});
}

TEST(AdamW, MatchesAFloat64ReferenceOverSeveralSteps) {
  struct Case {
    const char* name;
    AdamWOptions options;
  };
  const Case cases[] = {
      {"no weight decay", {.weight_decay = 0.0}},
      {"defaults", {}},
      {"strong decay, other betas", {.beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1}},
      {"beta1 above the lerp switch", {.beta1 = 0.3, .beta2 = 0.9}},
  };
  const LrSchedule schedule = LrSchedule::warmup_linear(0.05, 2, 7, 0.005);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Parameter p("w", {3, 4});
    AdamWReference ref{c.options, {}, {}, {}};
    for (std::size_t i = 0; i < 12; ++i) {
      p.values()[i] = uniform(3, "p", i, 2.0f);
      ref.p.push_back(p.values()[i]);
    }
    AdamW adamw({&p}, schedule, c.options);
    for (int64_t s = 1; s <= 6; ++s) {
      std::vector<double> g(12);
      for (std::size_t i = 0; i < 12; ++i) {
        p.grad()[i] = uniform(static_cast<uint64_t>(s), "g", i);
        g[i] = p.grad()[i];
      }
      adamw.step();
      ref.step(schedule.at(s), g);
      for (std::size_t i = 0; i < 12; ++i) {
        ASSERT_NEAR(p.values()[i], ref.p[i], 2e-6 * std::max(1.0, std::abs(ref.p[i]))) << "step " << s << " i " << i;
        ASSERT_NEAR(p.state("exp_avg")[i], ref.m[i], 1e-6) << "step " << s << " i " << i;
        ASSERT_NEAR(p.state("exp_avg_sq")[i], ref.v[i], 1e-7) << "step " << s << " i " << i;
      }
    }
  }
}

// The float32 result is PyTorch's sequence of rounded tensor ops, bit for bit (no fused
// multiply-adds), including both branches of its lerp, in the vector loops and their tails,
// which is what comparisons with torch fixtures rely on.
TEST(AdamW, Float32ResultsFollowPyTorchsOperationOrderBitForBit) {
  using optim_test::bits, optim_test::f32_add, optim_test::f32_div, optim_test::f32_mul, optim_test::f32_sub;
  const AdamWOptions cases[] = {{.weight_decay = 0.05}, {.beta1 = 0.3, .beta2 = 0.95, .eps = 1e-6}};
  const LrSchedule schedule = LrSchedule::warmup_linear(0.02, 2, 8, 0.001);
  for (const AdamWOptions& o : cases) {
    SCOPED_TRACE(o.beta1);
    Parameter p("w", {2, 37});  // vector loops and their tails on every ISA
    const std::size_t n = p.values().size();
    std::vector<float> x(n), m(n), v(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = p.values()[i] = uniform(8, "p", i, 3.0f);
    AdamW adamw({&p}, schedule, o);
    const auto w = static_cast<float>(1.0 - o.beta1), b2 = static_cast<float>(o.beta2);
    const auto one_b2 = static_cast<float>(1.0 - o.beta2), eps = static_cast<float>(o.eps);
    for (int64_t s = 1; s <= 6; ++s) {
      for (std::size_t i = 0; i < n; ++i) p.grad()[i] = uniform(static_cast<uint64_t>(s), "g", i);
      adamw.step();
      const double lr = schedule.at(s), k = static_cast<double>(s);
      const auto decay = static_cast<float>(1.0 - lr * o.weight_decay);
      const auto neg_step = static_cast<float>(-(lr / (1.0 - std::pow(o.beta1, k))));
      const auto bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(o.beta2, k)));
      for (std::size_t i = 0; i < n; ++i) {
        const float g = p.grad()[i];
        x[i] = f32_mul(x[i], decay);
        m[i] = w < 0.5f ? f32_add(m[i], f32_mul(w, f32_sub(g, m[i])))
                        : f32_sub(g, f32_mul(f32_sub(g, m[i]), f32_sub(1.0f, w)));
        v[i] = f32_add(f32_mul(v[i], b2), f32_mul(f32_mul(one_b2, g), g));
        const float denom = f32_add(f32_div(std::sqrt(v[i]), bc2_sqrt), eps);
        x[i] = f32_add(x[i], f32_div(f32_mul(neg_step, m[i]), denom));
        ASSERT_EQ(bits(p.values()[i]), bits(x[i])) << "step " << s << " i " << i;
        ASSERT_EQ(bits(p.state("exp_avg")[i]), bits(m[i])) << "step " << s << " i " << i;
        ASSERT_EQ(bits(p.state("exp_avg_sq")[i]), bits(v[i])) << "step " << s << " i " << i;
      }
    }
  }
}

TEST(AdamW, OptionErrorsNameTheArgument) {
  Parameter p("w", {2});
  auto make = [&](AdamWOptions o) { return error_of([&] { AdamW({&p}, 1e-3, o); }); };
  EXPECT_EQ(make({.beta1 = 1.0}), "adamw: 'beta1' must be in [0, 1), got 1");
  EXPECT_EQ(make({.beta2 = -0.1}), "adamw: 'beta2' must be in [0, 1), got -0.1");
  EXPECT_EQ(make({.eps = -1e-8}), "adamw: 'eps' must be a finite number >= 0, got -1e-08");
  EXPECT_EQ(make({.weight_decay = NAN}), "adamw: 'weight_decay' must be a finite number >= 0, got nan");
  EXPECT_EQ(make({.beta1 = 0.0, .eps = 0.0, .weight_decay = 0.0}), "no error");
  AdamW adamw({&p}, 1e-3);
  EXPECT_STREQ(adamw.name(), "adamw");
  EXPECT_EQ(adamw.state_keys(), (std::vector<std::string>{"exp_avg", "exp_avg_sq"}));
}

const optim_test::MakeOptimizer kAdamWForSparse = [](std::vector<Parameter*> params) {
  return std::make_unique<AdamW>(std::move(params), 0.01, AdamWOptions{.weight_decay = 0.1});
};

TEST(AdamW, MaskedDensePrunedWeightsStayZeroAndANanInAPrunedSlotIsIgnored) {
  optim_test::expect_sparse_matches_dense_twin(std::nullopt, kAdamWForSparse, {"exp_avg", "exp_avg_sq"});
}

TEST(AdamW, CompressedUpdatesOnlyStoredEntries) {
  optim_test::expect_sparse_matches_dense_twin(FormatSpec::csr(), kAdamWForSparse, {"exp_avg", "exp_avg_sq"});
}

TEST(AdamW, MaskChangeRegrowsWithZeroMomentsAndSurvivorsKeepTheirs) {
  // From zero moments: exp_avg = 0 + 0.1 * (g - 0), exp_avg_sq = 0 * 0.999 + 0.001 * g * g.
  const float w = static_cast<float>(1.0 - 0.9), one_b2 = static_cast<float>(1.0 - 0.999);
  auto grown = [&](const std::string& key, float g) { return key == "exp_avg" ? w * g : one_b2 * g * g; };
  {
    SCOPED_TRACE("compressed csr");
    optim_test::expect_mask_change_remaps_state(FormatSpec::csr(), kAdamWForSparse, {"exp_avg", "exp_avg_sq"}, grown);
  }
  {
    SCOPED_TRACE("masked-dense");
    optim_test::expect_mask_change_remaps_state(std::nullopt, kAdamWForSparse, {"exp_avg", "exp_avg_sq"}, grown);
  }
}

}  // namespace
}  // namespace sparsetrain
