#pragma once
// `sparsetrain inspect FILE|DIR`: the tensors of a safetensors checkpoint (for a model directory,
// its newest complete one) with their shapes, which ones are sparse (have a `<name>_mask`), each
// one's sparsity and the totals; optionally converts the file to or from the Cerebras NaN form
// (io/nan_form.h).
#include <string>

namespace sparsetrain {

struct InspectOptions {
  std::string path;        // a safetensors file or a model directory
  std::string export_nan;  // write the NaN form here
  std::string import_nan;  // read `path` as the NaN form, write weights + masks here
};

int run_inspect_command(const InspectOptions& options);

}  // namespace sparsetrain
