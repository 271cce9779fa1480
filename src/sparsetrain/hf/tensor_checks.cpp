#include "sparsetrain/hf/tensor_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

std::string hf_shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

void hf_take_tensor(const StateTensor& t, const StateTensor*& slot, const std::string& name,
                    const std::vector<int64_t>& shape, const std::string& dims, const std::string& file,
                    const std::string& config_file, const std::string& config_values) {
  if (slot != nullptr) fail("{}: tensor '{}' is there twice, as '{}' and '{}'", file, name, slot->name, t.name);
  if (t.shape != shape)
    fail("{}: tensor '{}' has shape {}, but {} makes it {} = {} ({})", file, t.name, hf_shape_text(t.shape),
         config_file, dims, hf_shape_text(shape), config_values);
  const auto bad = std::ranges::find_if(t.values, [](float v) { return !std::isfinite(v); });
  if (bad != t.values.end())
    fail("{}: tensor '{}' holds the non-finite value {} (element {})", file, t.name, *bad, bad - t.values.begin());
  slot = &t;
}

}  // namespace sparsetrain
