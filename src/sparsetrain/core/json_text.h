#pragma once
// JSON values quoted in error messages. nlohmann's dump() recurses once per level of nesting, so
// quoting a value read from a file as it is lets a few bytes per level ("[[[[...") overflow the
// stack; json_text bounds the depth and the length instead.
#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace sparsetrain {

inline constexpr int kJsonTextMaxDepth = 16;
inline constexpr std::size_t kJsonTextMaxChars = 200;

// `value` as dump() writes it (compact; invalid UTF-8 replaced), cut at a character boundary
// with "..." after kJsonTextMaxChars characters; a value nested deeper than kJsonTextMaxDepth is
// named instead ("a JSON array nested more than 16 deep").
std::string json_text(const nlohmann::json& value);

}  // namespace sparsetrain
