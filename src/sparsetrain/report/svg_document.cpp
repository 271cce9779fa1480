#include "sparsetrain/report/svg_document.h"

#include <fmt/format.h>

namespace sparsetrain {

namespace {

const char* anchor_name(Anchor a) {
  switch (a) {
    case Anchor::Start: return "start";
    case Anchor::Middle: return "middle";
    case Anchor::End: return "end";
  }
  return "start";
}

std::string stroke_attributes(const Stroke& s) {
  std::string a = fmt::format(R"(stroke="{}" stroke-width="{}")", s.color, svg_number(s.width));
  if (!s.dash.empty()) a += fmt::format(R"( stroke-dasharray="{}")", s.dash);
  return a;
}

}  // namespace

double text_width(std::string_view text, double font_size) {
  std::size_t characters = 0;
  for (char c : text) characters += (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // UTF-8 lead bytes
  return static_cast<double>(characters) * 0.6 * font_size;
}

std::string svg_number(double value, int decimals) {
  std::string text = fmt::format("{:.{}f}", value, decimals);
  // Rounding a tiny negative number leaves "-0.00"; one figure must not differ by such noise.
  if (text.find_first_not_of("-0.") == std::string::npos && text[0] == '-') text.erase(0, 1);
  return text;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

SvgDocument::SvgDocument(double width, double height) : width_(width), height_(height) {}

void SvgDocument::rect(double x, double y, double w, double h, std::string_view fill, const Stroke* stroke) {
  body_ +=
      fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="{}"{}/>)", svg_number(x), svg_number(y),
                  svg_number(w), svg_number(h), fill, stroke ? fmt::format(" {}", stroke_attributes(*stroke)) : "");
  body_ += '\n';
}

void SvgDocument::line(Point a, Point b, const Stroke& stroke) {
  body_ += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" {}/>)", svg_number(a.x), svg_number(a.y),
                       svg_number(b.x), svg_number(b.y), stroke_attributes(stroke));
  body_ += '\n';
}

void SvgDocument::polyline(std::span<const Point> points, const Stroke& stroke) {
  std::string list;
  for (const Point& p : points) {
    if (!list.empty()) list += ' ';
    list += svg_number(p.x) + "," + svg_number(p.y);
  }
  body_ +=
      fmt::format(R"(<polyline points="{}" fill="none" {} stroke-linejoin="round"/>)", list, stroke_attributes(stroke));
  body_ += '\n';
}

void SvgDocument::circle(Point center, double radius, std::string_view fill) {
  body_ += fmt::format(R"(<circle cx="{}" cy="{}" r="{}" fill="{}"/>)", svg_number(center.x), svg_number(center.y),
                       svg_number(radius), fill);
  body_ += '\n';
}

void SvgDocument::text(Point at, std::string_view text, const TextStyle& style) {
  std::string transform;
  if (style.rotate != 0)
    transform =
        fmt::format(R"x( transform="rotate({} {} {})")x", svg_number(style.rotate), svg_number(at.x), svg_number(at.y));
  body_ += fmt::format(R"(<text x="{}" y="{}" font-size="{}" text-anchor="{}" fill="{}"{}{}>{}</text>)",
                       svg_number(at.x), svg_number(at.y), svg_number(style.size), anchor_name(style.anchor),
                       style.color, style.bold ? R"( font-weight="bold")" : "", transform, xml_escape(text));
  body_ += '\n';
}

void SvgDocument::path(std::string_view d, std::string_view fill, bool crisp_edges) {
  body_ += fmt::format(R"(<path d="{}" fill="{}"{}/>)", d, fill, crisp_edges ? R"( shape-rendering="crispEdges")" : "");
  body_ += '\n';
}

void SvgDocument::begin_group(std::string_view title, std::string_view transform) {
  body_ += transform.empty() ? std::string("<g>") : fmt::format(R"(<g transform="{}">)", transform);
  if (!title.empty()) body_ += fmt::format("<title>{}</title>", xml_escape(title));
  body_ += '\n';
}

void SvgDocument::end_group() { body_ += "</g>\n"; }

std::string SvgDocument::finish() const {
  const std::string w = svg_number(width_), h = svg_number(height_);
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
      "{2}</svg>\n",
      w, h, body_);
}

}  // namespace sparsetrain
