#pragma once
// Text to token ids and back. Implementations are immutable after construction, so one
// tokenizer may be shared by threads (see each class for its caches).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sparsetrain {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids of UTF-8 (or, where the tokenizer says so, arbitrary byte) text.
  virtual std::vector<int32_t> encode(std::string_view utf8) const = 0;
  // The bytes the ids stand for; throws Error for an id outside [0, vocab_size()).
  virtual std::string decode(std::span<const int32_t> ids) const = 0;
  // Ids are 0 .. vocab_size() - 1.
  virtual int32_t vocab_size() const = 0;
  // Short lower-case name: "byte", "gpt2", "wordpiece".
  virtual std::string name() const = 0;
  // The id that separates documents, if the tokenizer has one. encode() never produces it:
  // callers append it between documents themselves.
  virtual std::optional<int32_t> end_of_text() const = 0;
  // The id of a whole vocabulary entry ("[MASK]", "##ing"), if the tokenizer has a vocabulary
  // of named entries that holds it.
  virtual std::optional<int32_t> token_id(std::string_view /*token*/) const { return std::nullopt; }
};

}  // namespace sparsetrain
