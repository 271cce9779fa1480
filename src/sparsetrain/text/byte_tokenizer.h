#pragma once
// Bytes as tokens: id b is the byte b (0..255). Any byte string, valid UTF-8 or not, round-trips:
// decode(encode(x)) == x. By default the vocabulary is exactly the 256 bytes and there is no
// end-of-text id; ByteTokenizer(/*with_end_of_text=*/true) adds id 256 as end-of-text (vocabulary
// 257), which encode() never produces and decode() drops (it stands for no bytes).
#include "sparsetrain/text/tokenizer.h"

namespace sparsetrain {

class ByteTokenizer final : public Tokenizer {
 public:
  explicit ByteTokenizer(bool with_end_of_text = false) : with_end_of_text_(with_end_of_text) {}

  std::vector<int32_t> encode(std::string_view bytes) const override;
  std::string decode(std::span<const int32_t> ids) const override;
  int32_t vocab_size() const override { return with_end_of_text_ ? 257 : 256; }
  std::string name() const override { return "byte"; }
  std::optional<int32_t> end_of_text() const override {
    return with_end_of_text_ ? std::optional<int32_t>(256) : std::nullopt;
  }

 private:
  bool with_end_of_text_;
};

}  // namespace sparsetrain
