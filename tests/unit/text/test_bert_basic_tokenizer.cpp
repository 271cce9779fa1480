// BERT's BasicTokenizer, uncased: the expected words are worked out by hand from Hugging Face's
// BertTokenizer rules (docs/tokenizers.md#wordpiecetokenizer); the Unicode facts they rest on (categories,
// case mappings, canonical decompositions) are those of UnicodeData.txt.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "error_of.h"
#include "sparsetrain/text/bert_basic_tokenizer.h"

namespace sparsetrain {
namespace {

using Words = std::vector<std::string>;

Words words(std::string_view text) {
  Words out;
  bert_basic_tokenize(text, [&](std::string_view w) { out.emplace_back(w); });
  return out;
}

TEST(BertBasicTokenizer, LowerCasesAndSplitsPunctuation) {
  EXPECT_EQ(words("Hello, World!"), (Words{"hello", ",", "world", "!"}));
  EXPECT_EQ(words("  don't stop--now...  "), (Words{"don", "'", "t", "stop", "-", "-", "now", ".", ".", "."}));
  // ASCII symbols outside Unicode's P* count as punctuation too.
  EXPECT_EQ(words("a$b^c`d+e<f|g~h"),
            (Words{"a", "$", "b", "^", "c", "`", "d", "+", "e", "<", "f", "|", "g", "~", "h"}));
  // Unicode punctuation (P*): em dash, guillemets, inverted question mark, ideographic comma.
  EXPECT_EQ(words("a\u2014b \u00abc\u00bb \u00bfd? e\u3001f"),
            (Words{"a", "\u2014", "b", "\u00ab", "c", "\u00bb", "\u00bf", "d", "?", "e", "\u3001", "f"}));
  // Symbols that are not punctuation stay inside the word: copyright sign (So), euro (Sc).
  EXPECT_EQ(words("a\u00a9b 5\u20ac"), (Words{"a\u00a9b", "5\u20ac"}));
  EXPECT_EQ(words(""), Words{});
  EXPECT_EQ(words(" \t\n "), Words{});
}

TEST(BertBasicTokenizer, StripsAccentsAfterLowerCasing) {
  EXPECT_EQ(words("H\u00e9llo CAF\u00c9 na\u00efve"), (Words{"hello", "cafe", "naive"}));
  EXPECT_EQ(words("He\u0301llo"), Words{"hello"});  // already decomposed: the Mn mark goes
  // U+0130 lower-cases to i + U+0307, whose mark is then dropped.
  EXPECT_EQ(words("\u0130stanbul"), Words{"istanbul"});
  // Greek and Cyrillic: U+0386 -> alpha (tonos dropped), U+0419 -> U+0438 (breve dropped).
  EXPECT_EQ(words("\u0386\u0398\u0397\u039d\u0391 \u0419\u041e\u0413"),
            (Words{"\u03b1\u03b8\u03b7\u03bd\u03b1", "\u0438\u043e\u0433"}));
  // BertTokenizer lower-cases one character at a time, so a final capital sigma becomes sigma,
  // not final sigma (Python's "\u039f\u03a3".lower() would give U+03C2).
  EXPECT_EQ(words("\u039f\u03a3"), Words{"\u03bf\u03c3"});
  // Canonical decomposition only: the fi ligature and the Roman numeral twelve stay as they are.
  EXPECT_EQ(words("\ufb01ne \u216b"), (Words{"\ufb01ne", "\u217b"}));
  // Hangul syllables decompose into conjoining jamo: U+D55C -> U+1112 U+1161 U+11AB.
  EXPECT_EQ(words("\ud55c\uac00"), Words{"\u1112\u1161\u11ab\u1100\u1161"});
}

TEST(BertBasicTokenizer, SplitsCjkIdeographs) {
  EXPECT_EQ(words("\u4e2d\u56fdabc"), (Words{"\u4e2d", "\u56fd", "abc"}));
  EXPECT_EQ(words("ab\u4e2dcd"), (Words{"ab", "\u4e2d", "cd"}));
  EXPECT_EQ(words("\U00020000x"), (Words{"\U00020000", "x"}));  // CJK extension B
  // A compatibility ideograph is split and decomposes to its unified twin: U+F900 -> U+8C48.
  EXPECT_EQ(words("a\uf900b"), (Words{"a", "\u8c48", "b"}));
  // Hiragana and katakana are not in BERT's CJK ranges: they stay words.
  EXPECT_EQ(words("\u3042\u3044 \u30ab\u30ca"), (Words{"\u3042\u3044", "\u30ab\u30ca"}));
}

TEST(BertBasicTokenizer, DropsControlsAndSeparatesAtWhitespace) {
  // Dropped, so the word continues: NUL, U+0001, NEL (a control, though Python's split() would
  // split there), zero-width space (Cf), U+FFFD, private use, an unassigned code point.
  EXPECT_EQ(words(std::string("he\0l", 4) + "\x01l\u0085o\u200b\ufffd\ue000\U000e0080!"), (Words{"hello", "!"}));
  // Separators: tab, CR, LF, no-break space, ogham space, em space, ideographic space, and the
  // line and paragraph separators U+2028 and U+2029.
  EXPECT_EQ(words("a\tb\rc\nd\u00a0e\u1680f\u2003g\u3000h\u2028i\u2029j"),
            (Words{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}));
  // Vertical tab and form feed are controls (Cc), not whitespace, for BERT.
  EXPECT_EQ(words("a\vb\fc"), Words{"abc"});
}

TEST(BertBasicTokenizer, RejectsInvalidUtf8) {
  EXPECT_EQ(testing::error_of([] { words("abc\x80"); }),
            "wordpiece tokenizer: input is not valid UTF-8 at byte 3: unexpected continuation byte 0x80");
  EXPECT_EQ(testing::error_of([] { words("a\xed\xa0\x80"); }),
            "wordpiece tokenizer: input is not valid UTF-8 at byte 1: surrogate U+D800");
}

}  // namespace
}  // namespace sparsetrain
