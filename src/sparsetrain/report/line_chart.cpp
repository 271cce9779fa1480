#include "sparsetrain/report/line_chart.h"

#include <algorithm>

namespace sparsetrain {

namespace {

constexpr double kFont = 12;
constexpr Rect kPlot{80, 44, 600, 360};
constexpr double kBottom = 64, kGap = 20;
constexpr double kLegendRow = 16, kLegendSample = 28;

}  // namespace

std::string render_line_chart(const Chart& chart) {
  const PlotAxes axes = fit_axes(chart.series, chart.x_scale, chart.y_scale, 7, 6);
  double legend_text = 0;
  for (const Series& s : chart.series) legend_text = std::max(legend_text, text_width(s.name, kFont));
  const double legend_x = kPlot.x + kPlot.width + kGap;
  const double width =
      std::max(legend_x + kLegendSample + 6 + legend_text + kGap, kPlot.x + text_width(chart.note, kFont - 2) + kGap);
  const double plot_bottom = kPlot.y + kPlot.height;
  const double height =
      std::max(plot_bottom + kBottom, kPlot.y + static_cast<double>(chart.series.size()) * kLegendRow + kGap);

  SvgDocument svg(width, height);
  svg.text({kPlot.x + kPlot.width / 2, 26}, chart.title, {kFont + 3, Anchor::Middle, true});
  draw_plot_frame(svg, axes, kPlot, kFont - 1);
  svg.text({kPlot.x + kPlot.width / 2, plot_bottom + 40}, chart.x_label, {kFont, Anchor::Middle});
  svg.text({20, kPlot.y + kPlot.height / 2}, chart.y_label, {kFont, Anchor::Middle, false, -90});
  if (!chart.note.empty())
    svg.text({kPlot.x, plot_bottom + 58}, chart.note, {kFont - 2, Anchor::Start, false, 0, "#555555"});
  bool any = false;
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const Series& s = chart.series[i];
    draw_series(svg, s, axes, kPlot);
    any = any || !s.points.empty();
    const double row_y = kPlot.y + 6 + static_cast<double>(i) * kLegendRow;
    svg.line({legend_x, row_y}, {legend_x + kLegendSample, row_y}, s.stroke);
    if (s.markers) svg.circle({legend_x + kLegendSample / 2, row_y}, 2.5, s.stroke.color);
    svg.text({legend_x + kLegendSample + 6, row_y + 4}, s.name, {kFont});
  }
  if (!any) svg.text({kPlot.x + kPlot.width / 2, kPlot.y + kPlot.height / 2}, "no data", {kFont, Anchor::Middle});
  return svg.finish();
}

}  // namespace sparsetrain
