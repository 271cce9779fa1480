#include "sparsetrain/formats/format_spec.h"

#include <charconv>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

namespace {
bool parse_int(std::string_view text, int& out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}
}  // namespace

FormatSpec FormatSpec::parse(std::string_view text, std::string_view source, std::string_view accepted) {
  if (text == "csr") return csr();
  for (int b : {4, 8, 16})
    if (text == "bcsr" + std::to_string(b)) return bcsr(b);
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    int n = 0, m = 0;
    if (parse_int(text.substr(0, colon), n) && parse_int(text.substr(colon + 1), m)) {
      if (m < 2 || m > 32 || n < 1 || n >= m) fail("{}: N:M format '{}' needs 1 <= N < M <= 32", source, text);
      return nm(n, m);
    }
  }
  fail("{}: unknown sparse format '{}'; expected {}", source, text, accepted);
}

std::string FormatSpec::name() const {
  if (kind == FormatKind::NM) return std::to_string(n) + ":" + std::to_string(m);
  return block == 1 ? "csr" : "bcsr" + std::to_string(block);
}

}  // namespace sparsetrain
