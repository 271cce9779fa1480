#pragma once
// Mask images as a standalone SVG: one panel per mask side by side, kept = dark. Each panel is a
// MaskGrid drawn as one <path> per shade (runs of equal cells in a row merged), so a 256×256 grid
// takes under a megabyte instead of 65536 elements.
#include <string>
#include <vector>

#include "sparsetrain/report/mask_grid.h"

namespace sparsetrain {

struct MaskPanel {
  std::string title;     // e.g. "earliest checkpoint (step 100)"
  std::string subtitle;  // e.g. "sparsity 0.9000 (78400 of 784000 kept)"
  MaskGrid grid;
};

std::string render_mask_figure(const std::string& title, const std::vector<MaskPanel>& panels);

// The grey of a kept fraction in [0, 1]: "#ffffff" for none, "#000000" for all, 255 steps.
std::string kept_shade(double fraction);

}  // namespace sparsetrain
