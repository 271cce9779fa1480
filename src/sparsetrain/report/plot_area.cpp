#include "sparsetrain/report/plot_area.h"

#include <algorithm>
#include <array>
#include <limits>

namespace sparsetrain {

namespace {

Point to_pixels(Point p, const PlotAxes& axes, Rect area) {
  return {area.x + axes.x.fraction(p.x) * area.width, area.y + area.height - axes.y.fraction(p.y) * area.height};
}

}  // namespace

PlotAxes fit_axes(const std::vector<Series>& series, AxisScale x_scale, AxisScale y_scale, int x_ticks, int y_ticks) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double x_min = kInf, x_max = -kInf, y_min = kInf, y_max = -kInf;
  for (const Series& s : series)
    for (const Point& p : s.points) {
      x_min = std::min(x_min, p.x);
      x_max = std::max(x_max, p.x);
      y_min = std::min(y_min, p.y);
      y_max = std::max(y_max, p.y);
    }
  return {make_axis(x_min, x_max, x_scale, x_ticks), make_axis(y_min, y_max, y_scale, y_ticks)};
}

void draw_plot_frame(SvgDocument& svg, const PlotAxes& axes, Rect area, double font) {
  const Stroke minor{"#f0f0f0", 1, ""}, grid{"#dddddd", 1, ""}, frame{"#404040", 1, ""};
  const double bottom = area.y + area.height, right = area.x + area.width;
  for (double v : axes.x.minor) {
    const double px = area.x + axes.x.fraction(v) * area.width;
    svg.line({px, area.y}, {px, bottom}, minor);
  }
  for (double v : axes.y.minor) {
    const double py = bottom - axes.y.fraction(v) * area.height;
    svg.line({area.x, py}, {right, py}, minor);
  }
  for (std::size_t i = 0; i < axes.x.ticks.size(); ++i) {
    const double px = area.x + axes.x.fraction(axes.x.ticks[i]) * area.width;
    svg.line({px, area.y}, {px, bottom}, grid);
    svg.line({px, bottom}, {px, bottom + 4}, frame);
    svg.text({px, bottom + 6 + font}, axes.x.labels[i], {font, Anchor::Middle});
  }
  for (std::size_t i = 0; i < axes.y.ticks.size(); ++i) {
    const double py = bottom - axes.y.fraction(axes.y.ticks[i]) * area.height;
    svg.line({area.x, py}, {right, py}, grid);
    svg.line({area.x - 4, py}, {area.x, py}, frame);
    svg.text({area.x - 7, py + font / 3}, axes.y.labels[i], {font, Anchor::End});
  }
  svg.rect(area.x, area.y, area.width, area.height, "none", &frame);
}

void draw_series(SvgDocument& svg, const Series& series, const PlotAxes& axes, Rect area) {
  std::vector<Point> pixels;
  pixels.reserve(series.points.size());
  for (const Point& p : series.points) pixels.push_back(to_pixels(p, axes, area));
  svg.begin_group(series.name);
  if (!pixels.empty()) svg.polyline(pixels, series.stroke);
  if (series.markers || pixels.size() == 1)
    for (const Point& p : pixels) svg.circle(p, 2.5, series.stroke.color);
  svg.end_group();
}

const std::string& series_color(std::size_t i) {
  // Tableau 10.
  static const std::array<std::string, 10> colors = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                                     "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return colors[i % colors.size()];
}

const std::string& series_dash(std::size_t i) {
  static const std::array<std::string, 4> dashes = {"", "7,3", "2,2", "9,3,2,3"};
  return dashes[i % dashes.size()];
}

}  // namespace sparsetrain
