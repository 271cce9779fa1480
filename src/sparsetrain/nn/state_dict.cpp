#include "sparsetrain/nn/state_dict.h"

#include <utility>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

const StateTensor* StateDict::find(std::string_view name) const {
  for (const StateTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

StateTensor* StateDict::find(std::string_view name) {
  return const_cast<StateTensor*>(std::as_const(*this).find(name));
}

StateTensor& StateDict::add(StateTensor tensor) {
  if (find(tensor.name)) fail("state dict: tensor '{}' added twice", tensor.name);
  return tensors.emplace_back(std::move(tensor));
}

}  // namespace sparsetrain
