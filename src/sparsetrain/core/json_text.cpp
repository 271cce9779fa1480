#include "sparsetrain/core/json_text.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

namespace sparsetrain {

namespace {

// Whether `value` nests deeper than `limit` (a scalar is depth 0, [1] depth 1), without recursion.
bool nests_deeper_than(const nlohmann::json& value, int limit) {
  std::vector<std::pair<const nlohmann::json*, int>> pending{{&value, 0}};
  while (!pending.empty()) {
    const auto [v, depth] = pending.back();
    pending.pop_back();
    if (!v->is_structured()) continue;
    if (depth + 1 > limit) return true;
    for (const nlohmann::json& child : *v) pending.emplace_back(&child, depth + 1);
  }
  return false;
}

}  // namespace

std::string json_text(const nlohmann::json& value) {
  if (nests_deeper_than(value, kJsonTextMaxDepth))
    return fmt::format("a JSON {} nested more than {} deep", value.type_name(), kJsonTextMaxDepth);
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() <= kJsonTextMaxChars) return text;
  std::size_t cut = kJsonTextMaxChars - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  text.resize(cut);
  return text + "...";
}

std::string json_parse_problem(const nlohmann::json::exception& e) {
  std::string_view what = e.what();
  if (const size_t end = what.find("] "); what.starts_with("[json.exception") && end != std::string_view::npos)
    what.remove_prefix(end + 2);
  if (what.starts_with("parse error"))
    if (const size_t colon = what.find(": "); colon != std::string_view::npos) what.remove_prefix(colon + 2);
  return std::string(what);
}

}  // namespace sparsetrain
