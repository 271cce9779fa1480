#include "sparsetrain/report/small_multiples.h"

#include <algorithm>

namespace sparsetrain {

namespace {

constexpr double kFont = 10;
constexpr std::size_t kColumns = 4;
// A panel's plot area and the room around it for its title (above) and tick labels (left, below).
constexpr double kPlotWidth = 190, kPlotHeight = 100;
constexpr double kPanelLeft = 46, kPanelTop = 22, kPanelBottom = 26, kPanelRight = 14;
constexpr double kLeft = 30, kTop = 40, kBottom = 56;

}  // namespace

std::string render_small_multiples(const Chart& figure) {
  const PlotAxes axes = fit_axes(figure.series, figure.x_scale, figure.y_scale, 4, 4);
  double panel_width = kPanelLeft + kPlotWidth + kPanelRight;
  for (const Series& s : figure.series) panel_width = std::max(panel_width, kPanelLeft + text_width(s.name, kFont) + 4);
  const double panel_height = kPanelTop + kPlotHeight + kPanelBottom;
  const std::size_t columns = std::clamp<std::size_t>(figure.series.size(), 1, kColumns);
  const std::size_t rows = std::max<std::size_t>(1, (figure.series.size() + columns - 1) / columns);
  const double grid_width = static_cast<double>(columns) * panel_width;
  const double width = std::max(kLeft + grid_width, text_width(figure.title, kFont + 5) + 2 * kLeft);
  const double grid_bottom = kTop + static_cast<double>(rows) * panel_height;

  SvgDocument svg(width, grid_bottom + kBottom);
  svg.text({width / 2, 24}, figure.title, {kFont + 5, Anchor::Middle, true});
  for (std::size_t i = 0; i < figure.series.size(); ++i) {
    const Series& s = figure.series[i];
    const double x = kLeft + static_cast<double>(i % columns) * panel_width;
    const double y = kTop + static_cast<double>(i / columns) * panel_height;
    const Rect area{x + kPanelLeft, y + kPanelTop, kPlotWidth, kPlotHeight};
    svg.text({area.x, y + kPanelTop - 6}, s.name, {kFont, Anchor::Start, true});
    draw_plot_frame(svg, axes, area, kFont - 1);
    draw_series(svg, s, axes, area);
  }
  svg.text({kLeft + grid_width / 2, grid_bottom + 14}, figure.x_label, {kFont + 2, Anchor::Middle});
  svg.text({12, kTop + (grid_bottom - kTop) / 2}, figure.y_label, {kFont + 2, Anchor::Middle, false, -90});
  if (!figure.note.empty())
    svg.text({kLeft, grid_bottom + 34}, figure.note, {kFont, Anchor::Start, false, 0, "#555555"});
  return svg.finish();
}

}  // namespace sparsetrain
