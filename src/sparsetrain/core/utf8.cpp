#include "sparsetrain/core/utf8.h"

#include <fmt/format.h>

namespace sparsetrain {

namespace {

// The sequence length a lead byte announces and its payload bits; 0 for bytes that cannot
// start a character.
std::size_t lead_length(unsigned char c, char32_t& bits) {
  if (c < 0x80) return bits = c, 1;
  if ((c & 0xE0) == 0xC0) return bits = c & 0x1F, 2;
  if ((c & 0xF0) == 0xE0) return bits = c & 0x0F, 3;
  if ((c & 0xF8) == 0xF0) return bits = c & 0x07, 4;
  return 0;
}

constexpr char32_t kMinOfLength[] = {0, 0, 0x80, 0x800, 0x10000};

}  // namespace

std::size_t utf8_char_length(std::string_view s, std::size_t i, char32_t* code_point) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  char32_t cp = 0;
  const std::size_t n = lead_length(byte(i), cp);
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < kMinOfLength[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  if (code_point) *code_point = cp;
  return n;
}

std::size_t invalid_utf8_at(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_char_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

Utf8Problem utf8_problem_at(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  // 0xC0 and 0xC1 could only start overlong two-byte forms; 0xF5 and up lie above U+10FFFF.
  if (c >= 0x80 && c <= 0xBF) return {i, fmt::format("unexpected continuation byte 0x{:02x}", c)};
  if (c == 0xC0 || c == 0xC1 || c >= 0xF5) return {i, fmt::format("byte 0x{:02x} never occurs in UTF-8", c)};
  char32_t cp = 0;
  const std::size_t n = lead_length(c, cp);
  for (std::size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) return {i, fmt::format("sequence of {} bytes cut off by the end of the text", n)};
    const auto next = static_cast<unsigned char>(s[i + k]);
    if ((next & 0xC0) != 0x80) return {i + k, fmt::format("expected a continuation byte, found 0x{:02x}", next)};
    cp = (cp << 6) | (next & 0x3F);
  }
  const auto code = static_cast<uint32_t>(cp);
  if (cp < kMinOfLength[n]) return {i, fmt::format("overlong encoding of U+{:04X}", code)};
  if (cp >= 0xD800 && cp <= 0xDFFF) return {i, fmt::format("surrogate U+{:04X}", code)};
  return {i, fmt::format("U+{:X} is above U+10FFFF", code)};
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

}  // namespace sparsetrain
