#pragma once
// A line chart as a standalone SVG: title, axes with ticks and grid, labelled axes, one polyline
// (and optionally markers) per series, and a legend to the right of the plot, outside it, so
// that it never covers the data.
#include <string>

#include "sparsetrain/report/plot_area.h"

namespace sparsetrain {

std::string render_line_chart(const Chart& chart);

}  // namespace sparsetrain
