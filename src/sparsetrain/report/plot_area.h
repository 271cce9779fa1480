#pragma once
// The parts every chart shares: fitting axes to the data, drawing a plot area's grid, ticks and
// frame, and drawing a series into it. line_chart and small_multiples lay these out.
#include <string>
#include <vector>

#include "sparsetrain/report/axis.h"
#include "sparsetrain/report/svg_document.h"

namespace sparsetrain {

struct Series {
  std::string name;  // the legend entry or panel title, and the series group's <title>
  Stroke stroke;
  bool markers = false;       // a dot on every point too (for sparse series such as eval rows)
  std::vector<Point> points;  // data coordinates; drawn in this order
};

// What a figure shows: line_chart draws the series into one plot with a legend, small_multiples
// one panel each.
struct Chart {
  std::string title, x_label, y_label;
  AxisScale x_scale = AxisScale::Linear, y_scale = AxisScale::Linear;
  std::vector<Series> series;
  std::string note;  // a line under the plot, e.g. where the x values come from
};

struct Rect {
  double x = 0, y = 0, width = 0, height = 0;
};

struct PlotAxes {
  Axis x, y;
};

// Axes covering every point of `series` (finite, and positive on a log axis: callers leave others
// out); [0, 1] where there are none.
PlotAxes fit_axes(const std::vector<Series>& series, AxisScale x_scale, AxisScale y_scale, int x_ticks, int y_ticks);

// Grid lines, tick marks with their labels at `font` size, and the frame of `area`.
void draw_plot_frame(SvgDocument& svg, const PlotAxes& axes, Rect area, double font);

// `series` as a group titled with its name: its polyline, and dots where it has markers or a
// single point (which draws no line).
void draw_series(SvgDocument& svg, const Series& series, const PlotAxes& axes, Rect area);

// Colour `i` of a ten-colour palette that stays apart on white and for common colour blindness.
const std::string& series_color(std::size_t i);
// Dash pattern `i`: solid first, then patterns that tell apart series sharing a colour.
const std::string& series_dash(std::size_t i);

}  // namespace sparsetrain
