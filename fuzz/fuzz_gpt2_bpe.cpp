// GPT-2 BPE files: the input is encoder.json, a NUL byte, then vocab.bpe (JSON text cannot hold a
// raw NUL; without one the whole input is encoder.json and vocab.bpe is empty), loaded by
// Gpt2Tokenizer::from_text, the parser behind Gpt2Tokenizer::load. A tokenizer that loads must
// decode what it encodes back to the same bytes.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_common.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/utf8.h"
#include "sparsetrain/text/gpt2_tokenizer.h"

namespace {

// BPE is quadratic in a word's length: round trips stay on short texts.
constexpr std::size_t kMaxRoundTripBytes = 1024;

void check_round_trip(const sparsetrain::Gpt2Tokenizer& tokenizer, std::string_view text) {
  const std::vector<int32_t> ids = tokenizer.encode(text);
  for (int32_t id : ids) FUZZ_CHECK(id >= 0 && id < tokenizer.vocab_size());
  FUZZ_CHECK(tokenizer.decode(ids) == text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size > sparsetrain::fuzz::kMaxInputBytes) return -1;
  const std::string_view input = sparsetrain::fuzz::as_text(data, size);
  const std::size_t nul = input.find('\0');
  const std::string_view encoder_json = input.substr(0, nul);
  const std::string_view vocab_bpe = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  try {
    const sparsetrain::Gpt2Tokenizer tokenizer = sparsetrain::Gpt2Tokenizer::from_text(encoder_json, vocab_bpe);
    FUZZ_CHECK(tokenizer.end_of_text().has_value());
    check_round_trip(tokenizer, "Hello world, it's 2026!\n\n  \t tokens \xc3\xbc\xc3\xb1\xc3\xaf \xe6\x97\xa5\xe6\x9c\xac");
    // The merges' own text holds the symbols the merges join, so BPE has work to do on it.
    const std::string_view sample = vocab_bpe.substr(0, kMaxRoundTripBytes);
    if (sparsetrain::invalid_utf8_at(sample) == std::string_view::npos) check_round_trip(tokenizer, sample);
  } catch (const sparsetrain::Error&) {
  }
  return 0;
}
