#pragma once
// UTF-8 as RFC 3629 defines it: overlong forms, surrogates and code points above U+10FFFF are
// ill-formed. One decoder for every reader that checks text (checkpoint headers, corpora,
// tokenizers).
#include <cstddef>
#include <string>
#include <string_view>

namespace sparsetrain {

// Length of the well-formed character starting at s[i] (its code point in *code_point), or 0
// when the bytes there are not one.
std::size_t utf8_char_length(std::string_view s, std::size_t i, char32_t* code_point = nullptr);

// The offset of the first byte of the first ill-formed sequence, or npos when all of `s` is
// well-formed.
std::size_t invalid_utf8_at(std::string_view s);

// Why the sequence at s[i] is ill-formed, with the offset of the offending byte (i, or the
// first byte that is not a continuation), e.g. "surrogate U+D800". Only for an ill-formed s[i].
struct Utf8Problem {
  std::size_t offset;
  std::string reason;
};
Utf8Problem utf8_problem_at(std::string_view s, std::size_t i);

void append_utf8(std::string& out, char32_t code_point);

}  // namespace sparsetrain
