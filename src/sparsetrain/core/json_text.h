#pragma once
// JSON in error messages: values quoted from a file, and what is wrong with a text that does not
// parse. nlohmann's dump() recurses once per level of nesting, so quoting a value read from a
// file as it is lets a few bytes per level ("[[[[...") overflow the stack; json_text bounds the
// depth and the length instead.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace sparsetrain {

inline constexpr int kJsonTextMaxDepth = 16;
inline constexpr std::size_t kJsonTextMaxChars = 200;

// `value` as dump() writes it (compact; invalid UTF-8 replaced), cut at a character boundary
// with "..." after kJsonTextMaxChars characters; a value nested deeper than kJsonTextMaxDepth is
// named instead ("a JSON array nested more than 16 deep").
std::string json_text(const nlohmann::json& value);

// What nlohmann::json::parse found wrong, without its "[json.exception.parse_error.101] parse
// error at line 1, column 5: " prefix. A reader catches nlohmann::json::exception, not only
// parse_error: a number beyond a double's range (1e400) is an out_of_range ("number overflow
// parsing '1e400'").
std::string json_parse_problem(const nlohmann::json::exception& e);

}  // namespace sparsetrain
