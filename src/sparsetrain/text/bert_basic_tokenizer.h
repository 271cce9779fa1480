#pragma once
// BERT's BasicTokenizer, uncased: UTF-8 text to the words WordPiece then splits, exactly as
// Hugging Face's BertTokenizer(do_lower_case=True) forms them (docs/tokenizers.md#wordpiecetokenizer).
// Per code point, in order:
//   1. U+0000, U+FFFD and category C* (controls, format, private use, unassigned) but tab,
//      newline and carriage return are dropped;
//   2. tab, newline, carriage return, category Zs, U+2028 and U+2029 end the current word;
//   3. a CJK ideograph (BERT's _is_chinese_char ranges) is a word of its own;
//   4. anything else is lower-cased, canonically decomposed (NFD) and its Mn marks dropped,
//      and of what remains each punctuation mark (category P* and the ASCII symbols 33-47,
//      58-64, 91-96, 123-126) is a word of its own, the rest extends the current word.
// Character classes and the folding of step 4 come from Python's unicodedata (Unicode 14.0.0,
// bert_unicode_tables.inc, written by scripts/make_bert_unicode_tables.py); Hangul syllables
// decompose by Unicode's algorithm.
#include <functional>
#include <string_view>

namespace sparsetrain {

// Calls `word` with each word of `utf8`, in order, as UTF-8 (never empty, never holding a
// separator). Throws Error for invalid UTF-8, naming the byte offset and the reason.
void bert_basic_tokenize(std::string_view utf8, const std::function<void(std::string_view)>& word);

}  // namespace sparsetrain
