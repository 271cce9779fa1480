#include "sparsetrain/report/mask_figure.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sparsetrain/report/svg_document.h"

namespace sparsetrain {

namespace {

constexpr double kLongSide = 320;  // pixels of a panel's longer side
constexpr double kMaxAspect = 4;   // a thinner mask is stretched to this ratio, or it would vanish
constexpr double kGap = 70, kLeft = 50, kTop = 84, kBottom = 110;
constexpr double kFont = 12;

int shade_level(double fraction) { return static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * 255)); }

std::string grey(int level) {
  const int v = 255 - level;
  return fmt::format("#{:02x}{:02x}{:02x}", v, v, v);
}

struct Size {
  double width, height;
};

Size panel_size(const MaskGrid& g) {
  const double rows = static_cast<double>(std::max<int64_t>(g.rows, 1));
  const double cols = static_cast<double>(std::max<int64_t>(g.cols, 1));
  if (cols >= rows) return {kLongSide, kLongSide * std::max(rows / cols, 1 / kMaxAspect)};
  return {kLongSide * std::max(cols / rows, 1 / kMaxAspect), kLongSide};
}

// The cells as one path per shade (runs of equal cells in a row merged), in cell units.
std::map<int, std::string> cell_paths(const MaskGrid& g) {
  std::map<int, std::string> paths;
  for (int64_t r = 0; r < g.grid_rows; ++r)
    for (int64_t c = 0; c < g.grid_cols;) {
      const int level = shade_level(g.at(r, c));
      int64_t end = c + 1;
      while (end < g.grid_cols && shade_level(g.at(r, end)) == level) ++end;
      if (level > 0) paths[level] += fmt::format("M{} {}h{}v1h-{}z", c, r, end - c, end - c);
      c = end;
    }
  return paths;
}

void draw_panel(SvgDocument& svg, const MaskPanel& panel, Point at, Size size) {
  const MaskGrid& g = panel.grid;
  const Point center{at.x + size.width / 2, at.y};
  svg.text({center.x, at.y - 26}, panel.title, {kFont + 1, Anchor::Middle, true});
  svg.text({center.x, at.y - 10}, panel.subtitle, {kFont, Anchor::Middle});
  if (g.grid_rows > 0 && g.grid_cols > 0) {
    const double sx = size.width / static_cast<double>(g.grid_cols);
    const double sy = size.height / static_cast<double>(g.grid_rows);
    svg.begin_group(panel.title, fmt::format("translate({} {}) scale({} {})", svg_number(at.x), svg_number(at.y),
                                             svg_number(sx, 6), svg_number(sy, 6)));
    for (const auto& [level, d] : cell_paths(g)) svg.path(d, grey(level), true);
    svg.end_group();
  }
  const Stroke frame{"#404040", 1, ""};
  svg.rect(at.x, at.y, size.width, size.height, "none", &frame);
  svg.text({center.x, at.y + size.height + 18}, fmt::format("{} columns", g.cols), {kFont - 1, Anchor::Middle});
  svg.text({at.x - 10, at.y + size.height / 2}, fmt::format("{} rows", g.rows),
           {kFont - 1, Anchor::Middle, false, -90});
}

// What a cell stands for.
std::string cell_note(const MaskGrid& g) {
  if (g.block_rows == 1 && g.block_cols == 1) return "each cell is one weight: black = kept, white = pruned";
  return fmt::format("each cell is a block of {}×{} weights (rows × columns), shaded by the fraction of it kept",
                     g.block_rows, g.block_cols);
}

// The cell note and a key from white (none kept) to black (all kept).
void draw_key(SvgDocument& svg, const MaskGrid& g, double y) {
  svg.text({kLeft, y}, cell_note(g), {kFont - 1});
  const Stroke frame{"#808080", 0.5, ""};
  for (int i = 0; i <= 4; ++i) {
    const double fraction = i / 4.0, x = kLeft + i * 48.0;
    svg.rect(x, y + 10, 16, 16, kept_shade(fraction), &frame);
    svg.text({x + 20, y + 22}, svg_number(fraction), {kFont - 2});
  }
  svg.text({kLeft + 5 * 48.0, y + 22}, "kept fraction", {kFont - 2});
}

}  // namespace

std::string kept_shade(double fraction) { return grey(shade_level(fraction)); }

std::string render_mask_figure(const std::string& title, const std::vector<MaskPanel>& panels) {
  // Each panel sits centred in a slot wide enough for its titles.
  std::vector<Size> sizes;
  std::vector<double> slots;
  double height = 0;
  for (const MaskPanel& p : panels) {
    sizes.push_back(panel_size(p.grid));
    slots.push_back(std::max({sizes.back().width, text_width(p.title, kFont + 1), text_width(p.subtitle, kFont)}));
    height = std::max(height, sizes.back().height);
  }
  double width = kLeft;
  for (double slot : slots) width += slot + kGap;
  const double key = panels.empty() ? 0 : text_width(cell_note(panels.front().grid), kFont - 1);
  width = std::max({width, text_width(title, kFont + 3) + 2 * kLeft, 2 * kLeft + key});
  SvgDocument svg(width, kTop + height + kBottom);
  svg.text({width / 2, 26}, title, {kFont + 3, Anchor::Middle, true});
  double x = kLeft;
  for (std::size_t i = 0; i < panels.size(); ++i) {
    draw_panel(svg, panels[i], {x + (slots[i] - sizes[i].width) / 2, kTop}, sizes[i]);
    x += slots[i] + kGap;
  }
  if (!panels.empty()) draw_key(svg, panels.front().grid, kTop + height + 50);
  return svg.finish();
}

}  // namespace sparsetrain
