#pragma once
// Small multiples as a standalone SVG: one small panel per series, titled with its name, all on
// the same axes, in a grid. Two dozen layers (a GPT's) drawn as lines in one plot would cover each
// other wherever their values agree, which is the common case (a uniform sparsity); panels keep
// every one visible.
#include <string>

#include "sparsetrain/report/plot_area.h"

namespace sparsetrain {

std::string render_small_multiples(const Chart& chart);

}  // namespace sparsetrain
