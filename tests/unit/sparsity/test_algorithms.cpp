// Static, GMP, SET, RigL and Group on small models: exact counts, hand-worked mask evolution,
// determinism by name and seed, optimizer state at prune and regrow, skipped updates.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "error_of.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/optim/sgd.h"
#include "sparsetrain/sparsity/algorithms.h"
#include "sparsetrain/sparsity/group.h"
#include "sparsetrain/sparsity/mask_select.h"
#include "toy_modules.h"

namespace sparsetrain {
namespace {

using Linear = testing::ToyLinear;

// A GPT-2-shaped toy: names that do not say "embedding" or "norm" for wte / ln_1.
struct Toy : Module {
  Toy() : Module("Toy") {
    wte = &register_module("wte", std::make_unique<Linear>(6, 10, "Embedding"));
    ln_1 = &register_module("ln_1", std::make_unique<Linear>(6, 6, "LayerNorm"));
    c_fc = &register_module("c_fc", std::make_unique<Linear>(12, 16));
    c_proj = &register_module("c_proj", std::make_unique<Linear>(16, 12));
    lm_head = &register_module("lm_head", std::make_unique<Linear>(12, 10));
    testing::fill_distinct(*this);
  }
  Linear *wte, *ln_1, *c_fc, *c_proj, *lm_head;
};

using testing::error_of;

TEST(Algorithms, DefaultFilterTakesMatricesOfLinearModulesOnly) {
  Toy toy;
  Static s(0.5);
  EXPECT_EQ(s.apply(toy), 2);
  EXPECT_EQ(s.parameters()[0]->name(), "c_fc.weight");
  EXPECT_EQ(s.parameters()[1]->name(), "c_proj.weight");
  EXPECT_FALSE(toy.wte->weight->is_sparse());
  EXPECT_FALSE(toy.ln_1->weight->is_sparse());
  EXPECT_FALSE(toy.lm_head->weight->is_sparse());
  EXPECT_FALSE(toy.c_fc->bias->is_sparse());
}

TEST(Algorithms, AFilterThatClaimsNothingIsAnErrorNotASilentlyDenseRun) {
  Toy toy;
  SparsityOptions o;
  o.filter = ParamFilter::globs({"*.c_fcc.weight"});
  Static s(0.5, o);
  EXPECT_EQ(error_of([&] { s.apply(toy); }),
            "static: the filter globs(*.c_fcc.weight) matches no parameter that can be sparsified (not "
            "requires_dense, not already sparse); the model has: wte.weight, wte.bias, ln_1.weight, ln_1.bias, "
            "c_fc.weight, c_fc.bias, c_proj.weight, c_proj.bias, and 2 more");
  Group group;
  group.add(std::make_unique<Static>(0.5));
  group.add(std::make_unique<Static>(0.9, o));
  EXPECT_NE(error_of([&] { group.apply(toy); }).find("group member 2 (static): the filter globs(*.c_fcc.weight)"),
            std::string::npos);
  EXPECT_FALSE(toy.c_fc->weight->is_sparse()) << "nothing is claimed when a member fails";
}

TEST(Algorithms, StaticKeepsExactCountsAndDependsOnlyOnNameAndSeed) {
  auto masks = [](uint64_t seed, bool extra_module) {
    Toy toy;
    if (extra_module) toy.c_proj->requires_dense = true;  // a different set of sparse parameters
    SparsityOptions o;
    o.seed = seed;
    Static s(0.7, o);
    s.apply(toy);
    EXPECT_EQ(toy.c_fc->weight->kept(), kept_units(0.7, 16 * 12));
    return toy.c_fc->weight->mask();
  };
  const Mask a = masks(1, false);
  EXPECT_TRUE(a == masks(1, true)) << "a parameter's mask must not depend on the other parameters";
  EXPECT_FALSE(a == masks(2, false)) << "the seed must change the mask";
}

TEST(Algorithms, StaticTopkKeepsTheLargestMagnitudes) {
  Toy toy;
  const Matrix w = toy.c_fc->weight->to_dense();
  SparsityOptions o;
  o.init_method = InitMethod::TopK;
  o.filter = ParamFilter::globs({"c_fc.weight"});
  Static s(0.75, o);
  s.apply(toy);
  const Mask m = toy.c_fc->weight->mask();
  float smallest_kept = INFINITY, largest_pruned = 0.0f;
  for (int64_t r = 0; r < w.rows(); ++r)
    for (int64_t c = 0; c < w.cols(); ++c)
      (m.at(r, c) ? smallest_kept = std::min(smallest_kept, std::fabs(w.at(r, c)))
                  : largest_pruned = std::max(largest_pruned, std::fabs(w.at(r, c))));
  EXPECT_EQ(m.nnz(), 48);
  EXPECT_GT(smallest_kept, largest_pruned);
}

TEST(Algorithms, CompressedFormatsKeepWholeBlocksAndExactBlockCounts) {
  Toy toy;
  SparsityOptions o;
  o.format = FormatSpec::bcsr(4);
  Static s(0.5, o);
  s.apply(toy);
  EXPECT_EQ(toy.c_fc->weight->storage(), Storage::Compressed);
  EXPECT_EQ(toy.c_fc->weight->compressed().format().name(), "bcsr4");
  // 16 x 12 in 4 x 4 blocks: 12 blocks, half kept.
  EXPECT_EQ(toy.c_fc->weight->kept(), 6 * 16);
}

TEST(Algorithms, AParameterTheFormatCannotHoldIsReportedWithItsRealStorageAndLevel) {
  Toy toy;
  SparsityOptions o;
  o.format = FormatSpec::nm(3, 7);
  o.filter = ParamFilter::globs({"c_fc.weight", "c_proj.weight"});
  Static nm(1.0 - 3.0 / 7.0, o);
  nm.apply(toy);
  EXPECT_EQ(toy.c_fc->weight->storage(), Storage::MaskedDense);
  EXPECT_EQ(nm.storage_warnings(),
            (std::vector<std::string>{
                "static: 'c_fc.weight' (16x12) is stored masked-dense, not 3:7: its 12 columns (inputs) are not a "
                "multiple of 7; it is masked to level 0.5714 and runs at dense speed",
                "static: 'c_proj.weight' (12x16) is stored masked-dense, not 3:7: its 16 columns (inputs) are not a "
                "multiple of 7; it is masked to level 0.5714 and runs at dense speed"}));

  Toy other;
  o.format = FormatSpec::csr();
  o.filter = ParamFilter::globs({"wte.weight", "lm_head.bias", "lm_head.weight"});
  Static csr(0.5, o);
  csr.apply(other);
  EXPECT_EQ(csr.storage_warnings(),
            (std::vector<std::string>{"static: 'wte.weight' (10x6) is stored masked-dense, not csr: embedding and "
                                      "normalization parameters have no compressed kernels; it is masked to level "
                                      "0.5000 and runs at dense speed",
                                      "static: 'lm_head.bias' (10) is stored masked-dense, not csr: only matrices are "
                                      "stored compressed; it is masked to level 0.5000 and runs at dense speed"}));
  EXPECT_EQ(other.lm_head->weight->storage(), Storage::Compressed);
}

TEST(Algorithms, ALevelThatKeepsNoUnitOfALayerIsRefused) {
  Linear layer(64, 256);
  SparsityOptions o;
  o.format = FormatSpec::bcsr(16);
  o.filter = ParamFilter::globs({"weight"});
  Static blocks(0.99, o);
  EXPECT_EQ(error_of([&] { blocks.apply(layer); }),
            "static: 'weight' (256x64) would keep 0 of its 64 16x16 blocks at level 0.9900, so every weight would be "
            "zero; lower its level to at most 0.9843 (1 unit kept) or use smaller blocks or csr");
  EXPECT_FALSE(layer.weight->is_sparse());
  Static at_most(0.984, o);
  at_most.apply(layer);
  EXPECT_EQ(layer.weight->kept(), 16 * 16);
  // One block: no level above 0 keeps it.
  Linear one_block(16, 16);
  Static half(0.5, o);
  EXPECT_EQ(error_of([&] { half.apply(one_block); }),
            "static: 'weight' (16x16) would keep 0 of its 1 16x16 blocks at level 0.5000, so every weight would be "
            "zero; leave it out of the group's filter or use smaller blocks or csr");
}

TEST(Algorithms, AGroupSaysWhichMemberTheModelRefused) {
  Linear layer(64, 256);
  SparsityOptions blocks;
  blocks.format = FormatSpec::bcsr(16);
  blocks.filter = ParamFilter::globs({"weight"});
  SparsityOptions bias;
  bias.filter = ParamFilter::globs({"bias"});
  Group ordered;
  ordered.add(std::make_unique<Static>(0.5, bias));
  ordered.add(std::make_unique<Static>(0.99, blocks));
  try {
    ordered.apply(layer);
    FAIL() << "a level that keeps no block was applied";
  } catch (const GroupMemberError& e) {
    EXPECT_EQ(e.member(), 1u);
    EXPECT_EQ(e.detail(),
              "static: 'weight' (256x64) would keep 0 of its 64 16x16 blocks at level 0.9900, so every weight would "
              "be zero; lower its level to at most 0.9843 (1 unit kept) or use smaller blocks or csr");
    EXPECT_EQ(std::string(e.what()), "group member 2 (static): " + e.detail());
  }
}

TEST(Algorithms, AutoFormatCompressesWhereTheKernelsWinAndKeepsTheRestMaskedDense) {
  Toy toy;
  Group group;
  SparsityOptions low, high;
  low.auto_format = high.auto_format = true;
  low.filter = ParamFilter::globs({"c_fc.weight"});
  high.filter = ParamFilter::globs({"c_proj.weight", "c_fc.bias"});
  group.add(std::make_unique<Static>(0.5, low));
  group.add(std::make_unique<Static>(kAutoCompressLevel, high));
  group.apply(toy);
  EXPECT_EQ(toy.c_fc->weight->storage(), Storage::MaskedDense);
  EXPECT_EQ(toy.c_proj->weight->storage(), Storage::Compressed);
  EXPECT_EQ(toy.c_proj->weight->compressed().format().name(), "csr");
  EXPECT_EQ(toy.c_fc->bias->storage(), Storage::MaskedDense) << "vectors are never compressed";
  // A dynamic algorithm that starts dense decides by the level of its first update.
  Toy later;
  SparsityOptions o;
  o.auto_format = true;
  SET set(LevelSchedule::constant(0.9), UpdateSchedule::every(100, 200), LevelSchedule::constant(0.3), o);
  set.apply(later);
  EXPECT_EQ(later.c_fc->weight->storage(), Storage::Compressed);
  EXPECT_EQ(later.c_fc->weight->kept(), 192);
}

TEST(Algorithms, GmpPrunesToTheScheduledLevelByMagnitude) {
  Toy toy;
  SparsityOptions o;
  o.filter = ParamFilter::globs({"c_fc.weight"});
  GMP gmp(LevelSchedule::polynomial(0.0, 0.8, 0, 40), UpdateSchedule::every(10), o);
  gmp.apply(toy);
  Parameter& p = *toy.c_fc->weight;
  EXPECT_EQ(p.kept(), 192);  // level 0 at step 0
  for (int64_t step = 1; step <= 50; ++step) {
    gmp.update(step);
    const double level = LevelSchedule::polynomial(0.0, 0.8, 0, 40).at(step - step % 10);
    EXPECT_EQ(p.kept(), kept_units(level, 192)) << step;
  }
  EXPECT_EQ(gmp.updates_done(), 5);
  EXPECT_EQ(error_of([] { GMP(LevelSchedule::constant(0.5), UpdateSchedule::every(10)); }),
            "gmp: sparsity constant(0.5) never changes with the step, so nothing would ever be pruned; give a "
            "schedule that does (e.g. polynomial)");
  // A schedule whose arguments make it a constant is one too.
  EXPECT_EQ(error_of([] { GMP(LevelSchedule::polynomial(0.5, 0.5, 0, 40), UpdateSchedule::every(10)); }),
            "gmp: sparsity polynomial(init=0.5, final=0.5, begin=0, end=40, power=3) never changes with the step, so "
            "nothing would ever be pruned; give a schedule that does (e.g. polynomial)");
}

// One 2 x 4 weight at 50%: kept values 5, 1 | 4, 2 at (0,0) (0,1) (1,0) (1,1).
struct Tiny : Module {
  Tiny() : Module("Tiny") {
    w = &register_parameter("weight", {2, 4});
    const float values[] = {5, 1, 0.5f, 0.25f, 4, 2, 0.75f, 0.125f};
    std::copy(std::begin(values), std::end(values), w->values().begin());
  }
  Parameter* w;
};

SparsityOptions topk_csr() {
  SparsityOptions o;
  o.init_method = InitMethod::TopK;
  o.format = FormatSpec::csr();
  return o;
}

TEST(Algorithms, RiglDropsTheSmallestAndGrowsWhereTheDenseGradientIsLargest) {
  Tiny tiny;
  RigL rigl(LevelSchedule::constant(0.5), UpdateSchedule::every(100), LevelSchedule::constant(0.5), topk_csr());
  rigl.apply(tiny);
  Parameter& p = *tiny.w;
  ASSERT_EQ(p.to_dense().at(0, 0), 5.0f);
  // Optimizer state mirrors |value| + 10 so survivors can be told apart from regrown entries.
  AlignedBuffer<float>& m = p.state("momentum");
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = std::fabs(p.values()[i]) + 10.0f;

  rigl.prepare_step(99);
  EXPECT_FALSE(p.wants_dense_grad) << "dense gradients only on update steps";
  rigl.prepare_step(100);
  ASSERT_TRUE(p.wants_dense_grad);
  // Drop keeps int(0.5 * 4) = 2 largest (5 and 4); grow 2 by |grad|: (1,3) and (0,1), the
  // latter just dropped, so it keeps its value 1.
  p.dense_grad = Matrix(2, 4, 0.01f);
  p.dense_grad.at(1, 3) = -9.0f;
  p.dense_grad.at(0, 1) = 3.0f;
  p.dense_grad.at(1, 1) = 0.5f;
  rigl.update(100);
  const Matrix w = p.to_dense();
  const Mask mask = p.mask();
  EXPECT_TRUE(mask.at(0, 0) && mask.at(0, 1) && mask.at(1, 0) && mask.at(1, 3));
  EXPECT_EQ(mask.nnz(), 4);
  EXPECT_EQ(w.at(0, 1), 1.0f) << "dropped and regrown in one update keeps its value";
  EXPECT_EQ(w.at(1, 3), 0.0f) << "a new connection starts at zero";
  EXPECT_EQ(w.at(1, 1), 0.0f);
  // State: survivors keep theirs, the new connection starts at zero.
  std::vector<float> state_of_kept;
  for (std::size_t i = 0; i < p.values().size(); ++i) state_of_kept.push_back(p.state("momentum")[i]);
  EXPECT_EQ(state_of_kept, (std::vector<float>{15.0f, 11.0f, 14.0f, 0.0f}));
  // The gradient was used once; an update without a fresh one is an error.
  EXPECT_NE(error_of([&] { rigl.update(200); }).find("dense gradient was not computed"), std::string::npos);
}

TEST(Algorithms, BalancedRiglKeepsTheSameCountInEveryGroup) {
  // 16 x 12 weight at 75%: 48 kept. Unbalanced, the dense gradient (largest in rows 0-3) would
  // pull most growth into the first rows; with 4 output groups every 4-row stripe keeps 12,
  // and with 3 input groups every 4-column stripe keeps 16.
  for (bool by_rows : {true, false}) {
    SCOPED_TRACE(by_rows ? "output groups" : "input groups");
    Toy toy;
    SparsityOptions o;
    o.filter = ParamFilter::globs({"c_fc.weight"});
    o.format = FormatSpec::csr();
    (by_rows ? o.balance_out_groups : o.balance_in_groups) = by_rows ? 4 : 3;
    RigL rigl(LevelSchedule::constant(0.75), UpdateSchedule::every(10), LevelSchedule::constant(0.5), o);
    rigl.apply(toy);
    Parameter& p = *toy.c_fc->weight;
    rigl.prepare_step(10);
    p.dense_grad = Matrix(16, 12);
    for (int64_t r = 0; r < 16; ++r)
      for (int64_t c = 0; c < 12; ++c) p.dense_grad.at(r, c) = static_cast<float>((16 - r) * 100 + (12 - c));
    rigl.update(10);
    const Mask m = p.mask();
    EXPECT_EQ(m.nnz(), 48);
    for (int g = 0; g < (by_rows ? 4 : 3); ++g) {
      int64_t kept = 0;
      for (int64_t r = 0; r < 16; ++r)
        for (int64_t c = 0; c < 12; ++c) kept += m.at(r, c) && (by_rows ? r / 4 : c / 4) == g;
      EXPECT_EQ(kept, by_rows ? 12 : 16) << "group " << g;
    }
  }
  Toy toy;
  SparsityOptions o;
  o.filter = ParamFilter::globs({"c_fc.weight"});
  o.balance_out_groups = 5;
  RigL rigl(LevelSchedule::constant(0.75), UpdateSchedule::every(10), LevelSchedule::constant(0.5), o);
  EXPECT_EQ(error_of([&] { rigl.apply(toy); }), "balanced selection: 16 output rows do not split into 5 equal groups");
}

TEST(Algorithms, MaskUpdatesAreSkippedOnNonFiniteGradients) {
  Tiny tiny;
  SET set(LevelSchedule::constant(0.5), UpdateSchedule::every(1), LevelSchedule::constant(0.5), topk_csr());
  set.apply(tiny);
  const Mask before = tiny.w->mask();
  tiny.w->grad()[0] = NAN;
  set.update(1);
  EXPECT_TRUE(tiny.w->mask() == before);
  EXPECT_EQ(set.updates_done(), 0);
  tiny.w->grad()[0] = 0.0f;
  set.update(2);
  EXPECT_EQ(set.updates_done(), 1);
}

TEST(Algorithms, SetKeepsTheLargestAndRegrowsRandomlyToTheExactCount) {
  Toy toy;
  SparsityOptions o;
  o.seed = 5;
  SET set(LevelSchedule::constant(0.9), UpdateSchedule::every(10), LevelSchedule::constant(0.3), o);
  set.apply(toy);
  Parameter& p = *toy.c_fc->weight;
  const int64_t target = kept_units(0.9, 192);
  ASSERT_EQ(p.kept(), target);
  const Matrix before = p.to_dense();
  const Mask mask_before = p.mask();
  set.update(10);
  const Mask after = p.mask();
  EXPECT_EQ(after.nnz(), target);
  // The kept(1 - 0.3) largest survive; with 19 kept, int(0.7 * 19) = 13.
  std::vector<float> kept_magnitudes;
  for (int64_t i = 0; i < 192; ++i)
    if (mask_before.data()[i]) kept_magnitudes.push_back(std::fabs(before.data()[i]));
  std::sort(kept_magnitudes.rbegin(), kept_magnitudes.rend());
  int64_t survivors_of_top = 0;
  for (int64_t i = 0; i < 192; ++i)
    if (mask_before.data()[i] && std::fabs(before.data()[i]) >= kept_magnitudes[12])
      survivors_of_top += after.data()[i];
  EXPECT_EQ(survivors_of_top, 13);
  EXPECT_FALSE(after == mask_before);
}

// One 200 x 300 layer: enough kept weights for the counts below to be far from chance.
struct Wide : Module {
  Wide() : Module("Wide") {
    fc = &register_module("fc", std::make_unique<Linear>(200, 300));
    testing::fill_distinct(*this);
  }
  Linear* fc;
};

// SET at `level`, dropping 30% every 10 steps, its draws keyed by `seed`.
SET set_every_10(double level, uint64_t seed) {
  SparsityOptions o;
  o.seed = seed;
  return SET(LevelSchedule::constant(level), UpdateSchedule::every(10), LevelSchedule::constant(0.3), o);
}

// grow_init_std: regrown weights are N(0, std^2) draws (the SET reference code's randn / 10);
// survivors keep their values; the default regrows zeros; a negative value is refused.
TEST(Algorithms, SetRegrowsWithNormalDrawsWhenAskedElseZeros) {
  for (const double std : {0.0, 0.5}) {
    SCOPED_TRACE(std);
    Wide model;
    SET set = set_every_10(0.8, 2);
    set.set_grow_init_std(std);
    set.apply(model);
    Parameter& p = *model.fc->weight;
    const Matrix before = p.to_dense();
    const Mask mask_before = p.mask();
    set.update(10);
    const Matrix after = p.to_dense();
    const Mask mask_after = p.mask();
    double sum = 0.0, squares = 0.0;
    int64_t grown = 0;
    for (int64_t i = 0; i < after.size(); ++i) {
      if (!mask_after.data()[i]) continue;
      if (mask_before.data()[i]) {
        ASSERT_EQ(after.data()[i], before.data()[i]) << "a survivor keeps its value";
        continue;
      }
      ++grown;
      sum += after.data()[i];
      squares += static_cast<double>(after.data()[i]) * after.data()[i];
    }
    ASSERT_GT(grown, 3000);
    const double n = static_cast<double>(grown);
    EXPECT_NEAR(sum / n, 0.0, 0.05);
    EXPECT_NEAR(std::sqrt(squares / n), std, 0.03);
  }
  SET set(LevelSchedule::constant(0.8), UpdateSchedule::every(10));
  EXPECT_NE(error_of([&] { set.set_grow_init_std(-1.0); }).find("'grow_init_std' must be a finite number >= 0"),
            std::string::npos);
}

// drop_by_sign: the positive and the negative weights each lose drop_fraction of their own count,
// those closest to zero, where the default drops by |w| across both. The weights here are built
// so the two rules differ: every positive weight (|w| in [1, 2]) is larger than every negative
// one (|w| < 0.1), so dropping 30% by |w| takes only negatives.
TEST(Algorithms, SetDropsEachSignSeparatelyWhenAsked) {
  for (const bool by_sign : {false, true}) {
    SCOPED_TRACE(by_sign);
    Wide model;
    SET set = set_every_10(0.9, 3);
    set.set_drop_by_sign(by_sign);
    set.apply(model);
    Parameter& p = *model.fc->weight;
    Matrix values(p.rows(), p.cols());
    const Philox rng(7, "signs");
    for (int64_t i = 0; i < values.size(); ++i) {
      const float u = rng.uniform(static_cast<uint64_t>(i));
      values.data()[i] = u < 0.5f ? 1.0f + 2.0f * u : -0.2f * (u - 0.5f) - 1e-4f;
    }
    p.assign_dense(values);
    const Matrix before = p.to_dense();
    const Mask mask_before = p.mask();
    set.update(10);
    const Mask mask_after = p.mask();
    ASSERT_EQ(mask_after.nnz(), mask_before.nnz());

    // Per sign: the kept weights' |w| in descending order, and how many of them survive.
    for (const float sign : {1.0f, -1.0f}) {
      std::vector<float> kept;
      for (int64_t i = 0; i < before.size(); ++i)
        if (mask_before.data()[i] && before.data()[i] * sign > 0.0f) kept.push_back(std::fabs(before.data()[i]));
      std::sort(kept.rbegin(), kept.rend());
      const auto n = static_cast<int64_t>(kept.size());
      ASSERT_GT(n, 2000);
      int64_t survivors = 0, top_survivors = 0;
      const int64_t top = kept_units(0.3, n);
      for (int64_t i = 0; i < before.size(); ++i) {
        if (!mask_before.data()[i] || before.data()[i] * sign <= 0.0f || !mask_after.data()[i]) continue;
        ++survivors;
        top_survivors += std::fabs(before.data()[i]) >= kept[static_cast<std::size_t>(top - 1)];
      }
      if (by_sign) {
        EXPECT_EQ(top_survivors, top) << "the largest 70% of each sign stay";
        // The other 30% were dropped; random regrowth brings back a few percent of them.
        EXPECT_LT(survivors, top + (n - top) / 5);
      } else if (sign > 0.0f) {
        EXPECT_EQ(survivors, n) << "by |w|, no positive weight is among the smallest 30%";
      } else {
        EXPECT_LT(survivors, n / 2) << "by |w|, the whole drop falls on the negative weights";
      }
    }
  }
  SparsityOptions blocks;
  blocks.format = FormatSpec::parse("bcsr4", "test");
  SET set(LevelSchedule::constant(0.9), UpdateSchedule::every(10), LevelSchedule::constant(0.3), blocks);
  EXPECT_EQ(error_of([&] { set.set_drop_by_sign(true); }),
            "set: 'drop_by_sign' needs unstructured sparsity; format bcsr4 keeps blocks or groups, which have no sign");
}

TEST(Algorithms, StartingLaterKeepsParametersDenseThenPrunesToTheLevel) {
  Toy toy;
  SET set(LevelSchedule::constant(0.8), UpdateSchedule::every(100, 300), LevelSchedule::constant(0.3));
  set.apply(toy);
  EXPECT_EQ(toy.c_fc->weight->kept(), 192);
  set.update(200);
  EXPECT_EQ(toy.c_fc->weight->kept(), 192);
  set.update(300);
  EXPECT_EQ(toy.c_fc->weight->kept(), kept_units(0.8, 192));
}

TEST(Algorithms, GroupGivesEachParameterToTheFirstMatchingMember) {
  Toy toy;
  Group group;
  SparsityOptions first;
  first.filter = ParamFilter::globs({"c_*.weight"});
  SparsityOptions second;
  second.filter = ParamFilter::globs({"*.weight"});
  group.add(std::make_unique<Static>(0.5, first));
  group.add(std::make_unique<SET>(LevelSchedule::constant(0.25), UpdateSchedule::every(10),
                                  LevelSchedule::constant(0.3), second));
  EXPECT_EQ(group.apply(toy), 5);
  EXPECT_EQ(group.members()[0]->parameters().size(), 2u);  // c_fc, c_proj
  EXPECT_EQ(group.members()[1]->parameters().size(), 3u);  // wte, ln_1, lm_head
  EXPECT_EQ(toy.c_fc->weight->kept(), 96);
  EXPECT_EQ(toy.wte->weight->kept(), kept_units(0.25, 60));
  EXPECT_EQ(error_of([&] { group.add(std::make_unique<Group>()); }), "group: a group cannot contain another group");
}

TEST(Algorithms, ErDistributionGivesSmallerLayersHigherDensity) {
  Toy toy;
  SparsityOptions o;
  o.distribution = Distribution::ER;
  o.filter = ParamFilter::globs({"c_fc.weight", "lm_head.weight"});
  Static s(0.9, o);
  s.apply(toy);
  EXPECT_GT(toy.lm_head->weight->kept() * 192, toy.c_fc->weight->kept() * 120);
}

TEST(Algorithms, AppliedToAnOptimizerTheyUpdateAfterTheScheduledSteps) {
  Toy toy;
  SparsityOptions o;
  o.format = FormatSpec::csr();
  SET set(LevelSchedule::constant(0.8), UpdateSchedule::every(2, 0, 5), LevelSchedule::constant(0.5), o);
  set.apply(toy);
  Sgd sgd(toy.parameters(), 0.1, SgdOptions{.momentum = 0.9});
  set.apply(sgd);
  std::vector<Mask> masks;
  for (int step = 1; step <= 6; ++step) {
    for (Parameter* p : toy.parameters())
      for (float& g : p->grad()) g = 0.5f;
    sgd.step();
    masks.push_back(toy.c_fc->weight->mask());
    EXPECT_EQ(toy.c_fc->weight->kept(), kept_units(0.8, 192));
  }
  // Updates after steps 2 and 4 (stop 5 is exclusive), none after 1, 3, 5, 6.
  EXPECT_EQ(set.updates_done(), 2);
  EXPECT_FALSE(masks[1] == masks[0]);
  EXPECT_TRUE(masks[2] == masks[1]);
  EXPECT_FALSE(masks[3] == masks[2]);
  EXPECT_TRUE(masks[5] == masks[3]);
}

// A run stopped after step 40 and resumed from its masks, values and algorithm state continues
// exactly like the run that never stopped.
TEST(Algorithms, ResumingFromStateAndMasksIsBitIdentical) {
  auto make_group = [] {
    auto group = std::make_unique<Group>();
    SparsityOptions fc;
    fc.filter = ParamFilter::globs({"c_fc.weight"});
    fc.format = FormatSpec::csr();
    fc.seed = 3;
    SparsityOptions proj;
    proj.filter = ParamFilter::globs({"c_proj.weight"});
    group->add(std::make_unique<SET>(LevelSchedule::cycling({0.5, 0.75}), UpdateSchedule::every(10),
                                     LevelSchedule::constant(0.3), fc));
    group->add(std::make_unique<SET>(LevelSchedule::constant(0.6), UpdateSchedule::every(20),
                                     LevelSchedule::cosine(0.5, 100), proj));
    return group;
  };
  auto train = [](Toy& toy, SparsityAlgorithm& alg, int64_t from, int64_t to) {
    for (int64_t step = from; step <= to; ++step) {
      for (Parameter* p : toy.parameters()) {
        for (float& v : p->values()) v = v * 0.9f + 0.01f * static_cast<float>(step);
        p->enforce_mask();
      }
      alg.update(step);
    }
  };
  Toy straight;
  auto a = make_group();
  a->apply(straight);
  train(straight, *a, 1, 100);

  Toy first;
  auto b = make_group();
  b->apply(first);
  train(first, *b, 1, 40);
  const StateDict saved = first.state_dict();
  const nlohmann::json saved_state = nlohmann::json::parse(b->state().dump());

  Toy resumed;
  auto c = make_group();
  c->apply(resumed);
  resumed.load_state_dict(saved);
  c->load_state(saved_state);
  train(resumed, *c, 41, 100);

  const StateDict x = straight.state_dict(), y = resumed.state_dict();
  ASSERT_EQ(x.tensors.size(), y.tensors.size());
  for (std::size_t i = 0; i < x.tensors.size(); ++i) {
    EXPECT_EQ(x.tensors[i].keep, y.tensors[i].keep) << x.tensors[i].name;
    EXPECT_EQ(x.tensors[i].values, y.tensors[i].values) << x.tensors[i].name;
  }
  EXPECT_EQ(a->state(), c->state());
  EXPECT_EQ(error_of([&] {
              c->load_state(nlohmann::json{{"algorithm", "group"}, {"members", {1}}});
            }),
            "sparsity state: saved for a group of 1 algorithms, this run has 2");
  EXPECT_EQ(error_of([&] {
              c->members()[0]->load_state(nlohmann::json{{"algorithm", "rigl"}, {"updates_done", 2}});
            }),
            "sparsity state: saved for algorithm \"rigl\", but this run's algorithm is 'set'");
}

TEST(Algorithms, WithAutoupdateOffTheCallerUpdatesByHand) {
  Toy toy;
  SET set(LevelSchedule::constant(0.8), UpdateSchedule::every(1), LevelSchedule::constant(0.5));
  set.apply(toy);
  Sgd sgd(toy.parameters(), 0.1);
  set.apply(sgd);
  set.autoupdate = false;
  sgd.step();
  EXPECT_EQ(set.updates_done(), 0);
  set.update(sgd.steps());
  EXPECT_EQ(set.updates_done(), 1);
}

}  // namespace
}  // namespace sparsetrain
