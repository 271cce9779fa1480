#include "sparsetrain/nn/sparse_tensors.h"

namespace sparsetrain {

const StateTensor* mask_of(const StateDict& dict, const StateTensor& values) {
  if (values.is_mask) return nullptr;
  const StateTensor* mask = dict.find(values.name + "_mask");
  return mask != nullptr && mask->is_mask ? mask : nullptr;
}

const StateTensor* first_mask(const StateDict& dict) {
  for (const StateTensor& t : dict.tensors)
    if (t.is_mask) return &t;
  return nullptr;
}

int64_t kept_count(const StateTensor& mask) {
  int64_t kept = 0;
  for (uint8_t k : mask.keep) kept += k;
  return kept;
}

double sparsity_of(int64_t kept, int64_t total) {
  return total > 0 ? 1.0 - static_cast<double>(kept) / static_cast<double>(total) : 0.0;
}

std::vector<SparseTensor> sparse_tensors(const StateDict& dict) {
  std::vector<SparseTensor> sparse;
  for (const StateTensor& t : dict.tensors)
    if (const StateTensor* mask = mask_of(dict, t)) sparse.push_back({&t, mask, kept_count(*mask)});
  return sparse;
}

}  // namespace sparsetrain
