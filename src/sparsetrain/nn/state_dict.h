#pragma once
// StateDict: named tensors in a fixed order, the exchange form between modules and checkpoint
// files. Values are float32; masks are bytes (0 = pruned, 1 = kept), like safetensors' BOOL.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sparsetrain {

struct StateTensor {
  std::string name;
  std::vector<int64_t> shape;
  bool is_mask = false;
  std::vector<float> values;  // when !is_mask
  std::vector<uint8_t> keep;  // when is_mask
};

struct StateDict {
  std::vector<StateTensor> tensors;

  const StateTensor* find(std::string_view name) const;
  StateTensor* find(std::string_view name);
  StateTensor& add(StateTensor tensor);  // the name must be new
};

}  // namespace sparsetrain
