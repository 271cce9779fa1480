#pragma once
// A small SVG 1.1 writer for sparsetrain's figures. Every coordinate goes through svg_number, a
// fixed-precision formatter, so that the same figure is the same bytes on every run and machine.
#include <span>
#include <string>
#include <string_view>

namespace sparsetrain {

struct Point {
  double x = 0, y = 0;
};

struct Stroke {
  std::string color = "#000000";
  double width = 1;
  std::string dash;  // an SVG stroke-dasharray such as "6,3"; empty for a solid line
};

enum class Anchor { Start, Middle, End };

struct TextStyle {
  double size = 12;
  Anchor anchor = Anchor::Start;
  bool bold = false;
  double rotate = 0;  // degrees about (x, y)
  std::string color = "#000000";
};

// About how wide `text` is drawn at `font_size` in a sans-serif font: 0.6 em a character, what such
// fonts take at most for the names drawn here. A writer has no font metrics; layouts that leave
// this much room do not overlap.
double text_width(std::string_view text, double font_size);

// `value` with `decimals` digits after the point; -0 prints as 0.
std::string svg_number(double value, int decimals = 2);
// `text` with &, <, >, " and ' escaped for XML text and attribute values.
std::string xml_escape(std::string_view text);

class SvgDocument {
 public:
  SvgDocument(double width, double height);

  void rect(double x, double y, double w, double h, std::string_view fill, const Stroke* stroke = nullptr);
  void line(Point a, Point b, const Stroke& stroke);
  void polyline(std::span<const Point> points, const Stroke& stroke);
  void circle(Point center, double radius, std::string_view fill);
  void text(Point at, std::string_view text, const TextStyle& style = {});
  // `d` is path data the caller built with svg_number. crisp_edges turns off anti-aliasing, which
  // would draw hairline seams between abutting cells of an image.
  void path(std::string_view d, std::string_view fill, bool crisp_edges = false);
  // A group: `title` becomes its <title> (a tooltip, and a name tests and tools can find);
  // `transform` an SVG transform list; either may be empty.
  void begin_group(std::string_view title, std::string_view transform = {});
  void end_group();

  // The whole file: XML declaration, <svg> with xmlns and viewBox, the elements, </svg>.
  std::string finish() const;

 private:
  double width_, height_;
  std::string body_;
};

}  // namespace sparsetrain
