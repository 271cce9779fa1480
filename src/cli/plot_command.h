#pragma once
// `sparsetrain plot --model_dir DIR... --out OUT`: SVG figures of one or more model directories,
// written into OUT: loss against step, training FLOPs and training seconds (one series per directory),
// each sparse layer's sparsity over the checkpoints, and one layer's masks at the earliest and the
// newest checkpoint (docs/cli.md#sparsetrain-plot).
#include <string>
#include <vector>

namespace sparsetrain {

struct PlotOptions {
  std::vector<std::string> model_dirs;
  std::vector<std::string> labels;  // one per model directory, or none: the directories' names
  std::string out;
  std::string layer;  // the parameter of the mask images; empty: the first sparse one by name
};

// Returns the exit code; an Error (exit 1) names the directory, file, line or option at fault.
// Everything is read and checked before the first file is written.
int run_plot_command(const PlotOptions& options);

}  // namespace sparsetrain
