// SGD against hand-computed steps and a float64 re-implementation of PyTorch's algorithm; the
// Optimizer base (step numbering, schedule, hooks, errors); the sparse guarantees.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "optim_test_util.h"
#include "sparsetrain/ops/linear.h"
#include "sparsetrain/optim/sgd.h"

namespace sparsetrain {
namespace {

using optim_test::uniform;
using testing::error_of;

// PyTorch's _single_tensor_sgd in double; decoupled decay shrinks p first, as AdamW does.
struct SgdReference {
  double momentum, dampening, weight_decay;
  bool nesterov, decoupled;
  std::vector<double> p, buf;
  int64_t steps = 0;

  void step(double lr, const std::vector<double>& g) {
    ++steps;
    if (buf.empty()) buf.assign(p.size(), 0.0);
    for (std::size_t i = 0; i < p.size(); ++i) {
      double d = g[i];
      if (decoupled) {
        p[i] *= 1.0 - lr * weight_decay;
      } else {
        d += weight_decay * p[i];
      }
      if (momentum != 0.0) {
        buf[i] = steps == 1 ? d : momentum * buf[i] + (1.0 - dampening) * d;
        d = nesterov ? d + momentum * buf[i] : buf[i];
      }
      p[i] -= lr * d;
    }
  }
};

// Steps a one-element parameter from p0 with the gradient 1 on every step; returns the values.
std::vector<float> scalar_run(float p0, double lr, SgdOptions options, int steps, float grad = 1.0f) {
  Parameter p("w", {1});
  p.values()[0] = p0;
  Sgd sgd({&p}, lr, options);
  std::vector<float> out;
  for (int s = 0; s < steps; ++s) {
    p.grad()[0] = grad;
    sgd.step();
    out.push_back(p.values()[0]);
  }
  return out;
}

void expect_values(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "after step " << i + 1;
}

TEST(Sgd, PlainStepsByHand) {
  Parameter p("fc.bias", {3});
  const float init[] = {1.0f, -2.0f, 0.5f};
  const float grad[] = {0.5f, 0.25f, -1.0f};
  std::copy(std::begin(init), std::end(init), p.values().begin());
  Sgd sgd({&p}, 0.1);
  for (const auto& want : {std::vector<double>{0.95, -2.025, 0.6}, std::vector<double>{0.9, -2.05, 0.7}}) {
    std::copy(std::begin(grad), std::end(grad), p.grad().begin());
    sgd.step();
    for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(p.values()[i], want[i], 1e-6) << i;
  }
  EXPECT_TRUE(p.states().empty()) << "plain SGD keeps no state";
  EXPECT_TRUE(sgd.state_keys().empty());
}

TEST(Sgd, MomentumStepsByHand) {
  // buf = 1, 1.9, 2.71; p = 1 - 0.1 * buf cumulatively.
  expect_values(scalar_run(1.0f, 0.1, {.momentum = 0.9}, 3), {0.9, 0.71, 0.439});
}

TEST(Sgd, NesterovStepsByHand) {
  // buf = 1, 1.9, 2.71; d = 1 + 0.9 * buf = 1.9, 2.71, 3.439.
  expect_values(scalar_run(1.0f, 0.1, {.momentum = 0.9, .nesterov = true}, 3), {0.81, 0.539, 0.1951});
}

TEST(Sgd, DampeningStartsFromTheFirstGradientAtStepOne) {
  // buf = 1 (the gradient itself, not 0.5), then 0.9 * 1 + 0.5 = 1.4, then 1.26 + 0.5 = 1.76.
  expect_values(scalar_run(1.0f, 0.1, {.momentum = 0.9, .dampening = 0.5}, 3), {0.9, 0.76, 0.584});
}

TEST(Sgd, WeightDecayByHand) {
  // d = 1 + 0.1 * p: 1.1, 1.089, 1.07811.
  expect_values(scalar_run(1.0f, 0.1, {.weight_decay = 0.1}, 3), {0.89, 0.7811, 0.673289});
}

TEST(Sgd, DecoupledWeightDecayByHand) {
  // p = p * (1 - 0.1 * 0.5) - 0.1 * buf with buf = 1, 1.9: 0.95 - 0.1 = 0.85, 0.8075 - 0.19 = 0.6175.
  expect_values(scalar_run(1.0f, 0.1, {.momentum = 0.9, .weight_decay = 0.5, .decoupled_weight_decay = true}, 2),
                {0.85, 0.6175});
  // The decay stays out of the momentum: with a zero gradient the weight only shrinks.
  expect_values(scalar_run(2.0f, 0.1, {.momentum = 0.9, .weight_decay = 0.5, .decoupled_weight_decay = true}, 2, 0.0f),
                {1.9, 1.805});
}

TEST(Sgd, MatchesAFloat64ReferenceOverSeveralSteps) {
  struct Case {
    const char* name;
    SgdOptions options;
  };
  const Case cases[] = {
      {"plain", {}},
      {"momentum", {.momentum = 0.9}},
      {"nesterov", {.momentum = 0.8, .nesterov = true}},
      {"dampening", {.momentum = 0.9, .dampening = 0.3}},
      {"weight decay", {.weight_decay = 0.05}},
      {"all", {.momentum = 0.7, .dampening = 0.1, .weight_decay = 0.02}},
      {"nesterov + weight decay", {.momentum = 0.9, .weight_decay = 0.01, .nesterov = true}},
      {"decoupled weight decay", {.momentum = 0.9, .weight_decay = 0.3, .decoupled_weight_decay = true}},
      {"decoupled, no momentum", {.weight_decay = 0.3, .decoupled_weight_decay = true}},
  };
  const LrSchedule schedule = LrSchedule::warmup_cosine(0.2, 2, 7, 0.01);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Parameter p("w", {3, 4});
    SgdReference ref{c.options.momentum, c.options.dampening,     c.options.weight_decay,
                     c.options.nesterov, c.options.decoupled_weight_decay, {}, {}};
    for (std::size_t i = 0; i < 12; ++i) {
      p.values()[i] = uniform(1, "p", i, 2.0f);
      ref.p.push_back(p.values()[i]);
    }
    Sgd sgd({&p}, schedule, c.options);
    for (int64_t s = 1; s <= 6; ++s) {
      std::vector<double> g(12);
      for (std::size_t i = 0; i < 12; ++i) {
        p.grad()[i] = uniform(static_cast<uint64_t>(s), "g", i);
        g[i] = p.grad()[i];
      }
      sgd.step();
      ref.step(schedule.at(s), g);
      for (std::size_t i = 0; i < 12; ++i) {
        ASSERT_NEAR(p.values()[i], ref.p[i], 2e-6 * std::max(1.0, std::abs(ref.p[i]))) << "step " << s << " i " << i;
        if (c.options.momentum != 0.0) {
          ASSERT_NEAR(p.state("momentum")[i], ref.buf[i], 2e-6 * std::max(1.0, std::abs(ref.buf[i])))
              << "step " << s << " i " << i;
        }
      }
    }
  }
}

// The float32 result is PyTorch's sequence of rounded tensor ops, bit for bit (no fused
// multiply-adds), which is what comparisons with torch fixtures rely on.
TEST(Sgd, Float32ResultsFollowPyTorchsOperationOrderBitForBit) {
  using optim_test::bits, optim_test::f32_add, optim_test::f32_mul;
  const SgdOptions cases[] = {{.momentum = 0.9, .dampening = 0.2, .weight_decay = 0.03},
                              {.momentum = 0.8, .weight_decay = 0.01, .nesterov = true}};
  const LrSchedule schedule = LrSchedule::warmup_cosine(0.3, 1, 6, 0.01);
  for (const SgdOptions& o : cases) {
    SCOPED_TRACE(o.nesterov ? "nesterov" : "dampening");
    Parameter p("w", {2, 5});
    std::vector<float> x(10), buf(10);
    for (std::size_t i = 0; i < 10; ++i) x[i] = p.values()[i] = uniform(7, "p", i, 3.0f);
    Sgd sgd({&p}, schedule, o);
    const auto wd = static_cast<float>(o.weight_decay), m = static_cast<float>(o.momentum);
    const auto keep = static_cast<float>(1.0 - o.dampening);
    for (int64_t s = 1; s <= 5; ++s) {
      for (std::size_t i = 0; i < 10; ++i) p.grad()[i] = uniform(static_cast<uint64_t>(s), "g", i);
      sgd.step();
      const auto neg_lr = static_cast<float>(-schedule.at(s));
      for (std::size_t i = 0; i < 10; ++i) {
        float d = f32_add(p.grad()[i], f32_mul(wd, x[i]));
        buf[i] = s == 1 ? d : f32_add(f32_mul(buf[i], m), f32_mul(keep, d));
        d = o.nesterov ? f32_add(d, f32_mul(m, buf[i])) : buf[i];
        x[i] = f32_add(x[i], f32_mul(neg_lr, d));
        ASSERT_EQ(bits(p.values()[i]), bits(x[i])) << "step " << s << " i " << i;
        ASSERT_EQ(bits(p.state("momentum")[i]), bits(buf[i])) << "step " << s << " i " << i;
      }
    }
  }
}

TEST(Sgd, LargeParametersAreUpdatedInFullAcrossThreads) {
  // Large enough to be split into ranges; every element must get exactly its own update.
  constexpr int64_t kCols = 40000;
  Parameter p("wte.weight", {4, kCols});
  auto v = p.values();
  auto g = p.grad();
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = optim_test::f32_mul(static_cast<float>(i % 1000), 0.001f);
    g[i] = static_cast<float>(i % 7) - 3.0f;
  }
  Sgd sgd({&p}, 0.25, {.momentum = 0.9});
  sgd.step();
  for (std::size_t i = 0; i < v.size(); ++i) {
    const float want = optim_test::f32_add(optim_test::f32_mul(static_cast<float>(i % 1000), 0.001f),
                                           optim_test::f32_mul(-0.25f, static_cast<float>(i % 7) - 3.0f));
    ASSERT_EQ(v[i], want) << i;
    ASSERT_EQ(p.state("momentum")[i], g[i]) << i;
  }
}

TEST(Sgd, OptionErrorsNameTheArgument) {
  Parameter p("w", {2});
  auto make = [&](SgdOptions o) { return error_of([&] { Sgd({&p}, 0.1, o); }); };
  EXPECT_EQ(make({.nesterov = true}),
            "sgd: nesterov momentum needs 'momentum' > 0 and 'dampening' == 0, got momentum 0 and dampening 0");
  EXPECT_EQ(make({.momentum = 0.9, .dampening = 0.1, .nesterov = true}),
            "sgd: nesterov momentum needs 'momentum' > 0 and 'dampening' == 0, got momentum 0.9 and dampening 0.1");
  EXPECT_EQ(make({.momentum = -0.5}), "sgd: 'momentum' must be a finite number >= 0, got -0.5");
  EXPECT_EQ(make({.momentum = 0.9, .dampening = 1.5}), "sgd: 'dampening' must be in [0, 1], got 1.5");
  EXPECT_EQ(make({.weight_decay = -1}), "sgd: 'weight_decay' must be a finite number >= 0, got -1");
  EXPECT_EQ(error_of([&] { Sgd({&p}, -0.1); }), "constant lr schedule: 'lr' must be a finite number >= 0, got -0.1");
  EXPECT_EQ(make({.momentum = 0.9, .nesterov = true}), "no error");
}

const optim_test::MakeOptimizer kSgdForSparse = [](std::vector<Parameter*> params) {
  return std::make_unique<Sgd>(std::move(params), 0.1, SgdOptions{.momentum = 0.9, .weight_decay = 0.1});
};

TEST(Sgd, MaskedDensePrunedWeightsStayZeroAndANanInAPrunedSlotIsIgnored) {
  optim_test::expect_sparse_matches_dense_twin(std::nullopt, kSgdForSparse, {"momentum"});
}

TEST(Sgd, MaskedDenseNesterovWithWeightDecay) {
  optim_test::expect_sparse_matches_dense_twin(
      std::nullopt,
      [](std::vector<Parameter*> params) {
        return std::make_unique<Sgd>(std::move(params), 0.05,
                                     SgdOptions{.momentum = 0.9, .weight_decay = 0.5, .nesterov = true});
      },
      {"momentum"});
}

TEST(Sgd, CompressedUpdatesOnlyStoredEntries) {
  optim_test::expect_sparse_matches_dense_twin(FormatSpec::csr(), kSgdForSparse, {"momentum"});
}

TEST(Sgd, MaskChangeRegrowsWithZeroMomentumAndSurvivorsKeepTheirs) {
  // dampening 0.5 tells the two starts apart: a regrown connection takes buf = 0.9 * 0 + 0.5 * g,
  // not PyTorch's first-step buf = g.
  const SgdOptions options{.momentum = 0.9, .dampening = 0.5, .weight_decay = 0.1};
  const optim_test::MakeOptimizer make = [&](std::vector<Parameter*> params) {
    return std::make_unique<Sgd>(std::move(params), 0.1, options);
  };
  auto grown = [](const std::string&, float g) { return 0.5f * g; };
  {
    SCOPED_TRACE("compressed csr");
    optim_test::expect_mask_change_remaps_state(FormatSpec::csr(), make, {"momentum"}, grown);
  }
  {
    SCOPED_TRACE("masked-dense");
    optim_test::expect_mask_change_remaps_state(std::nullopt, make, {"momentum"}, grown);
  }
}

TEST(Optimizer, CompressedBackwardDataSeesTheUpdatedValues) {
  // Backward-data gathers W^T's values from W's on every call, so after a step it sees the new ones.
  const Mask mask = random_mask(FormatSpec::csr(), 8, 16, 0.5, Philox(4, "m"));
  Parameter p = optim_test::make_sparse(mask, FormatSpec::csr());
  Matrix x(5, 16), dy(5, 8), y(5, 8), dx(5, 16);
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = uniform(1, "x", static_cast<uint64_t>(i));
  for (int64_t i = 0; i < dy.size(); ++i) dy.data()[i] = uniform(1, "dy", static_cast<uint64_t>(i));
  LinearWorkspace ws;
  Sgd sgd({&p}, 0.5);
  for (int s = 0; s < 2; ++s) {
    linear_forward(p.compressed(), nullptr, x, y, ws);
    linear_backward(p.compressed(), dy, ws, dx, p.grad().data(), nullptr);
    const Matrix w = p.to_dense();
    for (int64_t t = 0; t < 5; ++t)
      for (int64_t k = 0; k < 16; ++k) {
        double want = 0.0;
        for (int64_t r = 0; r < 8; ++r) want += static_cast<double>(dy.at(t, r)) * w.at(r, k);
        ASSERT_NEAR(dx.at(t, k), want, 1e-5) << "after " << s << " steps, dX[" << t << "," << k << "]";
      }
    sgd.step();
  }
}

TEST(Optimizer, StepKUsesTheScheduleAtK) {
  // Warm-up over 4 steps from 0: rates 0.25, 0.5, 0.75, 1, then 1.
  Parameter p("w", {1});
  Sgd sgd({&p}, LrSchedule::constant(1.0).with_warmup(4));
  EXPECT_EQ(sgd.steps(), 0);
  EXPECT_EQ(sgd.lr(), 0.0);
  const double want_lr[] = {0.25, 0.5, 0.75, 1.0, 1.0};
  double sum = 0.0;
  for (int s = 0; s < 5; ++s) {
    p.grad()[0] = 1.0f;
    sgd.step();
    sum += want_lr[s];
    EXPECT_EQ(sgd.steps(), s + 1);
    EXPECT_EQ(sgd.lr(), want_lr[s]);
    EXPECT_FLOAT_EQ(p.values()[0], static_cast<float>(-sum)) << "step " << s + 1;
  }
}

TEST(Optimizer, PostStepHooksReceiveTheStepNumberAfterTheUpdate) {
  Parameter p("w", {2});
  Sgd sgd({&p}, 0.5);
  std::vector<int64_t> first, second;
  std::vector<float> seen_values;
  sgd.add_post_step_hook([&](int64_t step) {
    first.push_back(step);
    seen_values.push_back(p.values()[0]);
  });
  sgd.add_post_step_hook([&](int64_t step) {
    second.push_back(step);
    EXPECT_EQ(sgd.steps(), step) << "steps() is already the new step inside a hook";
    EXPECT_EQ(first.size(), second.size()) << "hooks run in the order added";
  });
  for (int s = 0; s < 3; ++s) {
    p.grad()[0] = 1.0f;
    sgd.step();
  }
  EXPECT_EQ(first, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(second, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(seen_values, (std::vector<float>{-0.5f, -1.0f, -1.5f})) << "hooks run after the update";
  sgd.set_step(10);
  EXPECT_EQ(sgd.steps(), 10);
  sgd.step();
  EXPECT_EQ(first.back(), 11);
  EXPECT_EQ(second.back(), 11);
}

TEST(Optimizer, ZeroGradZeroesEveryGradient) {
  Parameter a("a", {3}), b("b", {2, 2});
  const Mask mask = random_mask(FormatSpec::csr(), 2, 2, 0.5, Philox(2, "m"));
  b.sparsify(mask, FormatSpec::csr());
  for (float& g : a.grad()) g = 1.0f;
  for (float& g : b.grad()) g = 2.0f;
  Sgd sgd({&a, &b}, 0.1);
  sgd.zero_grad();
  for (float g : a.grad()) EXPECT_EQ(g, 0.0f);
  for (float g : b.grad()) EXPECT_EQ(g, 0.0f);
  EXPECT_EQ(b.grad().size(), static_cast<std::size_t>(mask.nnz()));
}

TEST(Optimizer, ConstructionAndStepErrors) {
  Parameter a("h.0.attn.c_attn.weight", {2, 2});
  EXPECT_EQ(error_of([] { Sgd({}, 0.1); }), "optimizer: the parameter list is empty");
  EXPECT_EQ(error_of([&] { Sgd({&a, nullptr}, 0.1); }), "optimizer: parameter 1 of 2 is null");
  EXPECT_EQ(error_of([&] { Sgd({&a, &a}, 0.1); }), "optimizer: parameter 'h.0.attn.c_attn.weight' is listed twice");
  Sgd sgd({&a}, 0.1);
  EXPECT_EQ(error_of([&] { sgd.set_step(-1); }), "optimizer: the step must be >= 0, got -1");
  EXPECT_EQ(error_of([&] { sgd.add_post_step_hook({}); }), "optimizer: a post-step hook must be callable");
  EXPECT_STREQ(sgd.name(), "sgd");
}

}  // namespace
}  // namespace sparsetrain
