#pragma once
// What the masks in a model directory's checkpoints say over training: each sparse parameter's
// sparsity at every complete checkpoint, and one parameter's masks at the earliest and the newest.
// Only complete checkpoints (with their checkpoint_N.done marker) are read.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sparsetrain {

struct LayerMask {
  int64_t step = 0;
  int64_t rows = 0, cols = 0;  // shape[0] × the rest; 1 × n for a vector
  std::vector<uint8_t> keep;
  int64_t kept = 0;
};

struct LayerHistory {
  std::string name;
  std::vector<std::pair<int64_t, double>> sparsity;  // (checkpoint step, sparsity), ascending
};

struct RunMasks {
  std::vector<int64_t> steps;          // the complete checkpoints, ascending; empty: none
  std::vector<LayerHistory> layers;    // the newest checkpoint's sparse parameters, in its order
  std::string layer;                   // whose masks follow; empty when nothing is sparse
  std::vector<LayerMask> layer_masks;  // at the earliest and the newest checkpoint (one if the same)
};

// Reads the complete checkpoints of `dir`. `layer` picks the parameter whose masks to keep; empty
// picks the first sparse parameter of the newest checkpoint in name order. A `layer` the newest
// checkpoint has no mask for is an Error listing the names it has.
RunMasks read_run_masks(const std::string& dir, const std::string& layer);

}  // namespace sparsetrain
