#include "sparsetrain/report/checkpoint_masks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "sparsetrain/core/error.h"
#include "sparsetrain/io/safetensors.h"
#include "sparsetrain/nn/sparse_tensors.h"
#include "sparsetrain/train/checkpoint.h"

namespace sparsetrain {

namespace {

LayerMask layer_mask(int64_t step, const SparseTensor& t) {
  LayerMask m;
  m.step = step;
  const std::vector<int64_t>& shape = t.mask->shape;
  m.cols = static_cast<int64_t>(t.mask->keep.size());
  m.rows = shape.size() >= 2 ? shape[0] : 1;
  if (m.rows > 0) m.cols /= m.rows;
  m.keep = t.mask->keep;
  m.kept = t.kept;
  return m;
}

std::string chosen_layer(const std::string& path, const std::vector<SparseTensor>& sparse, const std::string& layer) {
  std::vector<std::string> names;
  for (const SparseTensor& t : sparse) names.push_back(t.values->name);
  if (layer.empty()) return names.empty() ? std::string() : *std::min_element(names.begin(), names.end());
  if (std::find(names.begin(), names.end(), layer) != names.end()) return layer;
  if (names.empty()) fail("--layer {}: {} has no sparse parameters (no <name>_mask tensors)", layer, path);
  fail("--layer {}: {} has no sparse parameter of that name; its sparse parameters are: {}", layer, path,
       fmt::join(names, ", "));
}

}  // namespace

RunMasks read_run_masks(const std::string& dir, const std::string& layer) {
  RunMasks run;
  run.steps = complete_checkpoints(dir);
  if (run.steps.empty()) return run;
  // The newest comes first: it names the layers and settles the chosen one before the others are read.
  for (std::size_t k = 0; k < run.steps.size(); ++k) {
    const bool newest = k == 0;
    const int64_t step = newest ? run.steps.back() : run.steps[k - 1];
    const std::string path = checkpoint_model_path(dir, step);
    const SafetensorsFile file = read_safetensors(path);
    const std::vector<SparseTensor> sparse = sparse_tensors(file.tensors);
    if (newest) {
      run.layer = chosen_layer(path, sparse, layer);
      for (const SparseTensor& t : sparse) run.layers.push_back({t.values->name, {}});
    }
    for (const SparseTensor& t : sparse) {
      for (LayerHistory& h : run.layers)
        if (h.name == t.values->name) h.sparsity.emplace_back(step, t.sparsity());
      if (t.values->name == run.layer && (newest || step == run.steps.front()))
        run.layer_masks.push_back(layer_mask(step, t));
    }
  }
  for (LayerHistory& h : run.layers) std::sort(h.sparsity.begin(), h.sparsity.end());
  std::sort(run.layer_masks.begin(), run.layer_masks.end(),
            [](const LayerMask& a, const LayerMask& b) { return a.step < b.step; });
  return run;
}

}  // namespace sparsetrain
