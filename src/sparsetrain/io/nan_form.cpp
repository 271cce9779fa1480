#include "sparsetrain/io/nan_form.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sparsetrain/core/error.h"
#include "sparsetrain/nn/sparse_tensors.h"

namespace sparsetrain {

namespace {

constexpr const char* kMaskSuffix = "_mask";

bool is_mask_name(const std::string& name) {
  return name.size() > 5 && name.compare(name.size() - 5, 5, kMaskSuffix) == 0;
}

bool holds_nan(const StateTensor& t) {
  return std::any_of(t.values.begin(), t.values.end(), [](float v) { return std::isnan(v); });
}

// A state with masks (some_mask) is in the mask form, where NaN in t is a value gone wrong:
// converting it either way would make those values pruned weights.
[[noreturn]] void refuse_nan_beside_masks(const StateDict& state, const StateTensor& some_mask, const StateTensor& t) {
  const StateTensor* own = mask_of(state, t);
  fail("NaN form: tensor '{}' has NaN values and the state has masks ('{}'); expected one form or the other", t.name,
       own != nullptr ? own->name : some_mask.name);
}

}  // namespace

StateDict to_nan_form(const StateDict& state) {
  const StateTensor* some_mask = first_mask(state);
  StateDict out;
  for (const StateTensor& t : state.tensors) {
    if (some_mask != nullptr && holds_nan(t)) refuse_nan_beside_masks(state, *some_mask, t);
    if (t.is_mask) {
      if (!is_mask_name(t.name)) fail("NaN form: mask '{}' is not named <tensor>{}", t.name, kMaskSuffix);
      const std::string owner = t.name.substr(0, t.name.size() - 5);
      const StateTensor* values = state.find(owner);
      if (!values || values->is_mask) fail("NaN form: mask '{}' has no float tensor '{}' to apply to", t.name, owner);
      if (values->shape != t.shape) fail("NaN form: mask '{}' and tensor '{}' differ in shape", t.name, owner);
      continue;
    }
    StateTensor copy = t;
    if (const StateTensor* mask = state.find(t.name + kMaskSuffix); mask && mask->is_mask)
      for (std::size_t i = 0; i < copy.values.size(); ++i)
        if (!mask->keep[i]) copy.values[i] = std::numeric_limits<float>::quiet_NaN();
    out.add(std::move(copy));
  }
  return out;
}

StateDict from_nan_form(const StateDict& state) {
  const StateTensor* some_mask = first_mask(state);
  StateDict out;
  for (const StateTensor& t : state.tensors) {
    if (t.is_mask || !holds_nan(t)) {
      out.add(t);
      continue;
    }
    if (some_mask != nullptr) refuse_nan_beside_masks(state, *some_mask, t);
    StateTensor values = t;
    StateTensor mask{t.name + kMaskSuffix, t.shape, true, {}, std::vector<uint8_t>(t.values.size())};
    for (std::size_t i = 0; i < values.values.size(); ++i) {
      const bool kept = !std::isnan(values.values[i]);
      mask.keep[i] = kept ? 1 : 0;
      if (!kept) values.values[i] = 0.0f;
    }
    out.add(std::move(values));
    out.add(std::move(mask));
  }
  return out;
}

}  // namespace sparsetrain
