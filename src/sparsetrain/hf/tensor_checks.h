#pragma once
// Checks every Hugging Face weights reader makes of a tensor, with messages naming the file.
#include <cstdint>
#include <string>
#include <vector>

#include "sparsetrain/nn/state_dict.h"

namespace sparsetrain {

// "[768, 3072]".
std::string hf_shape_text(const std::vector<int64_t>& shape);

// Records the file's tensor `t` as the model's `name` in `slot`. An Error names `file` when the
// slot is taken (the same tensor under two names), when t's shape is not `shape` (`dims` in
// config.json's fields; `config_file` and `config_values` say where they come from), or when t
// holds a non-finite value.
void hf_take_tensor(const StateTensor& t, const StateTensor*& slot, const std::string& name,
                    const std::vector<int64_t>& shape, const std::string& dims, const std::string& file,
                    const std::string& config_file, const std::string& config_values);

}  // namespace sparsetrain
