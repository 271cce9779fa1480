#pragma once
// Which tensors of a StateDict are sparse and how much of each is kept. A checkpoint marks a
// sparse parameter by a `<name>_mask` tensor beside it; `inspect` and `plot` both count from that.
#include <cstdint>
#include <vector>

#include "sparsetrain/nn/state_dict.h"

namespace sparsetrain {

// The mask of `values` in `dict` (its `<name>_mask` tensor), or nullptr for a dense tensor.
const StateTensor* mask_of(const StateDict& dict, const StateTensor& values);

// The first mask tensor of `dict`, or nullptr when none is: a dict with one marks pruning by
// masks, and NaN in it is a number gone wrong, not a pruned weight (Cerebras' NaN form).
const StateTensor* first_mask(const StateDict& dict);

int64_t kept_count(const StateTensor& mask);

// 1 - kept / total; 0 for an empty tensor, which has nothing to prune.
double sparsity_of(int64_t kept, int64_t total);

struct SparseTensor {
  const StateTensor* values;
  const StateTensor* mask;
  int64_t kept;
  double sparsity() const { return sparsity_of(kept, static_cast<int64_t>(mask->keep.size())); }
};

// The sparse tensors of `dict` in its order; the pointers point into `dict`.
std::vector<SparseTensor> sparse_tensors(const StateDict& dict);

}  // namespace sparsetrain
