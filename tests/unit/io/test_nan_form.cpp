// Converting between sparsetrain's zeros-plus-masks state dicts and Cerebras' NaN form.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "error_of.h"
#include "sparsetrain/io/nan_form.h"

namespace sparsetrain {
namespace {

using testing::error_of;

const float kNaN = std::numeric_limits<float>::quiet_NaN();

StateDict sparse_state() {
  StateDict s;
  s.add({"fc.weight", {2, 3}, false, {1.5f, 0.0f, -2.0f, 0.0f, 0.0f, 3.25f}, {}});
  s.add({"fc.weight_mask", {2, 3}, true, {}, {1, 0, 1, 0, 1, 1}});  // a kept weight may be 0
  s.add({"fc.bias", {2}, false, {0.5f, -0.5f}, {}});
  return s;
}

TEST(NanForm, PrunedPositionsBecomeNanAndMasksAreDropped) {
  const StateDict nan = to_nan_form(sparse_state());
  ASSERT_EQ(nan.tensors.size(), 2u);
  const StateTensor& w = nan.tensors[0];
  EXPECT_EQ(w.name, "fc.weight");
  EXPECT_EQ(w.values[0], 1.5f);
  EXPECT_TRUE(std::isnan(w.values[1]));
  EXPECT_TRUE(std::isnan(w.values[3]));
  EXPECT_EQ(w.values[4], 0.0f) << "a kept zero stays a number";
  EXPECT_EQ(nan.tensors[1].values, (std::vector<float>{0.5f, -0.5f}));
}

TEST(NanForm, RoundTripRestoresValuesAndMasksExactly) {
  const StateDict original = sparse_state();
  const StateDict back = from_nan_form(to_nan_form(original));
  ASSERT_EQ(back.tensors.size(), original.tensors.size());
  for (std::size_t i = 0; i < back.tensors.size(); ++i) {
    EXPECT_EQ(back.tensors[i].name, original.tensors[i].name);
    EXPECT_EQ(back.tensors[i].values, original.tensors[i].values) << original.tensors[i].name;
    EXPECT_EQ(back.tensors[i].keep, original.tensors[i].keep) << original.tensors[i].name;
  }
}

TEST(NanForm, ImportTurnsEveryTensorWithNanIntoAMaskedOneAndLeavesTheRestDense) {
  StateDict cerebras;
  cerebras.add({"h.0.attn.weight", {2, 2}, false, {kNaN, 1.0f, 2.0f, kNaN}, {}});
  cerebras.add({"h.0.attn.weight.exp_avg", {2, 2}, false, {kNaN, 0.1f, 0.2f, kNaN}, {}});  // optimizer state too
  cerebras.add({"ln.weight", {2}, false, {1.0f, 1.0f}, {}});
  const StateDict s = from_nan_form(cerebras);
  ASSERT_EQ(s.tensors.size(), 5u);
  EXPECT_EQ(s.tensors[0].values, (std::vector<float>{0.0f, 1.0f, 2.0f, 0.0f}));
  EXPECT_EQ(s.tensors[1].name, "h.0.attn.weight_mask");
  EXPECT_EQ(s.tensors[1].keep, (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(s.tensors[3].name, "h.0.attn.weight.exp_avg_mask");
  EXPECT_EQ(s.tensors[4].name, "ln.weight");
  EXPECT_EQ(s.find("ln.weight_mask"), nullptr);
}

TEST(NanForm, MixedOrDanglingFormsAreErrorsNamingTheTensor) {
  StateDict mixed = sparse_state();
  mixed.tensors[0].values[1] = kNaN;
  EXPECT_EQ(error_of([&] { from_nan_form(mixed); }),
            "NaN form: tensor 'fc.weight' has NaN values and the state has masks ('fc.weight_mask'); expected one "
            "form or the other");
  // NaN in a dense tensor of the mask form is a value gone wrong, not pruning.
  StateDict diverged = sparse_state();
  diverged.tensors[2].values[0] = kNaN;
  EXPECT_EQ(error_of([&] { from_nan_form(diverged); }),
            "NaN form: tensor 'fc.bias' has NaN values and the state has masks ('fc.weight_mask'); expected one form "
            "or the other");
  // Exporting such a state would make the NaN a pruned weight.
  EXPECT_EQ(error_of([&] { to_nan_form(mixed); }),
            "NaN form: tensor 'fc.weight' has NaN values and the state has masks ('fc.weight_mask'); expected one "
            "form or the other");
  EXPECT_EQ(error_of([&] { to_nan_form(diverged); }),
            "NaN form: tensor 'fc.bias' has NaN values and the state has masks ('fc.weight_mask'); expected one form "
            "or the other");
  StateDict dangling;
  dangling.add({"gone.weight_mask", {1}, true, {}, {1}});
  EXPECT_EQ(error_of([&] { to_nan_form(dangling); }),
            "NaN form: mask 'gone.weight_mask' has no float tensor 'gone.weight' to apply to");
  StateDict reshaped = sparse_state();
  reshaped.tensors[1].shape = {3, 2};
  EXPECT_EQ(error_of([&] { to_nan_form(reshaped); }),
            "NaN form: mask 'fc.weight_mask' and tensor 'fc.weight' differ in shape");
  StateDict odd;
  odd.add({"mask", {1}, true, {}, {1}});
  EXPECT_EQ(error_of([&] { to_nan_form(odd); }), "NaN form: mask 'mask' is not named <tensor>_mask");
}

}  // namespace
}  // namespace sparsetrain
