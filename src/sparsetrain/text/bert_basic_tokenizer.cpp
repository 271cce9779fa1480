#include "sparsetrain/text/bert_basic_tokenizer.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <span>
#include <string>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/utf8.h"

namespace sparsetrain {

namespace {

struct CodeRange {
  char32_t first, last;
};

// A code point's lower-case form, decomposed, without its Mn marks; unused places are 0.
struct Fold {
  char32_t from;
  std::array<char32_t, 3> to;
};

#include "sparsetrain/text/bert_unicode_tables.inc"

bool in_ranges(std::span<const CodeRange> table, char32_t c) {
  const auto it =
      std::upper_bound(table.begin(), table.end(), c, [](char32_t x, const CodeRange& r) { return x < r.first; });
  return it != table.begin() && c <= std::prev(it)->last;
}

// Step 3 of the header: BERT's _is_chinese_char.
bool is_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

enum class CharClass : unsigned char { Dropped, Whitespace, Cjk, Text };

CharClass classify(char32_t c) {
  if (c == 0xFFFD || in_ranges(kControl, c)) return CharClass::Dropped;  // U+0000 is a control
  if (in_ranges(kWhitespace, c)) return CharClass::Whitespace;
  if (is_cjk(c)) return CharClass::Cjk;
  return CharClass::Text;
}

// Most text is ASCII: its classes and punctuation come from one lookup instead of searches.
struct AsciiTable {
  std::array<CharClass, 128> cls;
  std::array<bool, 128> punctuation;
};
const AsciiTable& ascii_table() {
  static const AsciiTable table = [] {
    AsciiTable t;
    for (char32_t c = 0; c < 128; ++c) {
      t.cls[c] = classify(c);
      t.punctuation[c] = in_ranges(kPunctuation, c);
    }
    return t;
  }();
  return table;
}

bool is_punctuation(char32_t c) { return c < 128 ? ascii_table().punctuation[c] : in_ranges(kPunctuation, c); }

// Step 4's folding into out[0..n), n returned (0 for an Mn mark). Python applies NFD to the
// whole word, which also reorders combining marks by class; only Mn marks have a nonzero class
// among the characters that survive, except 25 rare Mc marks (musical symbols, Hangul tone
// marks, some viramas), so folding one code point at a time differs from Python only for two of
// those with different classes in one combining sequence.
int fold(char32_t c, std::array<char32_t, 3>& out) {
  if (c < 128) {
    out[0] = c >= 'A' && c <= 'Z' ? c + 32 : c;
    return 1;
  }
  if (c >= 0xAC00 && c <= 0xD7A3) {  // Hangul syllable: leading consonant, vowel, optional final consonant
    const char32_t s = c - 0xAC00;
    out = {0x1100 + s / 588, 0x1161 + s % 588 / 28, 0x11A7 + s % 28};
    return s % 28 ? 3 : 2;
  }
  if (in_ranges(kNonspacing, c)) return 0;
  const auto it =
      std::lower_bound(std::begin(kFold), std::end(kFold), c, [](const Fold& f, char32_t x) { return f.from < x; });
  if (it == std::end(kFold) || it->from != c) {
    out[0] = c;
    return 1;
  }
  out = it->to;
  return out[2] ? 3 : out[1] ? 2 : 1;
}

}  // namespace

void bert_basic_tokenize(std::string_view utf8, const std::function<void(std::string_view)>& word) {
  std::string current;
  const auto end_word = [&] {
    if (current.empty()) return;
    word(current);
    current.clear();
  };
  std::array<char32_t, 3> folded{};
  for (std::size_t i = 0; i < utf8.size();) {
    char32_t c = 0;
    const std::size_t length = utf8_char_length(utf8, i, &c);
    if (length == 0) {
      const Utf8Problem problem = utf8_problem_at(utf8, i);
      fail("wordpiece tokenizer: input is not valid UTF-8 at byte {}: {}", problem.offset, problem.reason);
    }
    i += length;
    switch (c < 128 ? ascii_table().cls[c] : classify(c)) {
      case CharClass::Dropped: break;
      case CharClass::Whitespace: end_word(); break;
      case CharClass::Cjk:
        end_word();
        fold(c, folded);  // to one ideograph (compatibility ideographs to their unified twin)
        append_utf8(current, folded[0]);
        end_word();
        break;
      case CharClass::Text:
        for (int k = 0, n = fold(c, folded); k < n; ++k) {
          if (is_punctuation(folded[k])) {
            end_word();
            append_utf8(current, folded[k]);
            end_word();
          } else {
            append_utf8(current, folded[k]);
          }
        }
        break;
    }
  }
  end_word();
}

}  // namespace sparsetrain
