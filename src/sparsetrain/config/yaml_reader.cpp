#include "sparsetrain/config/yaml_reader.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <string_view>

namespace sparsetrain::config {

namespace {

// Counts documents from the parser's events, keeping where each starts and where its value does.
class DocumentCounter : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;  // of each document
  std::vector<YAML::Mark> values;  // of each document's value (its root node)

  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    node(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node(mark);
  }
  void OnMapEnd() override {}

 private:
  void node(const YAML::Mark& mark) {
    if (values.size() < starts.size()) values.push_back(mark);
  }
};

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool starts_with_null_literal(const std::string& text, std::size_t pos) {
  for (const char* literal : {"~", "null", "Null", "NULL"})
    if (text.compare(pos, std::char_traits<char>::length(literal), literal) == 0) return true;
  return false;
}

// yaml-cpp places an empty sequence item at the token after it; find the `-` that opened it,
// walking back over blank space and comments. Any other token before it: keep the mark. The walk
// reads each line it passes once and never from the start of the text (counting lines from there
// made a list of thousands of empty items take seconds); lines and columns are counted back from
// the token's own mark.
YAML::Mark dash_of_empty_item(const std::string& text, const YAML::Mark& mark) {
  if (text.empty() || mark.pos < 0 || static_cast<std::size_t>(mark.pos) > text.size() || mark.line < 0) return mark;
  const auto pos = static_cast<std::size_t>(mark.pos);
  if (pos < text.size() && starts_with_null_literal(text, pos)) return mark;
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  const auto dash_at = [](std::size_t at, int line, int column) {
    YAML::Mark dash;
    dash.pos = static_cast<int>(at);
    dash.line = line;
    dash.column = column;
    return dash;
  };
  // The token's own line, back from the token: no comment comes before a token on its line.
  std::size_t end = pos;
  while (end > 0 && blank(text[end - 1])) --end;
  if (end > 0 && text[end - 1] != '\n') {
    if (text[end - 1] != '-') return mark;
    return dash_at(end - 1, mark.line, mark.column - static_cast<int>(pos - (end - 1)));
  }
  // The lines before it, up to the first with more than blanks and a comment.
  int line = mark.line;
  while (end > 0) {
    const std::size_t newline = end - 1;  // ends the line before
    const std::size_t line_start = newline == 0 ? 0 : text.rfind('\n', newline - 1) + 1;  // npos + 1 == 0
    --line;
    std::string_view content(text.data() + line_start, newline - line_start);
    for (std::size_t i = 0; i < content.size(); ++i)
      if (content[i] == '#' && (i == 0 || content[i - 1] == ' ' || content[i - 1] == '\t')) {
        content = content.substr(0, i);
        break;
      }
    const std::size_t last = content.find_last_not_of(" \t\r");
    if (last != std::string_view::npos) {
      if (content[last] != '-') return mark;
      return dash_at(line_start + last, line, static_cast<int>(last));
    }
    end = line_start;
  }
  return mark;
}

// The core schema's int and float forms, matched by hand in one pass. (libstdc++'s std::regex
// recurses once per character: a scalar of 50,000 digits overflowed the stack.)
std::size_t count_digits(std::string_view s, std::size_t i, bool (*is_digit)(char)) {
  std::size_t n = 0;
  while (i + n < s.size() && is_digit(s[i + n])) ++n;
  return n;
}
bool decimal(char c) { return c >= '0' && c <= '9'; }
bool octal(char c) { return c >= '0' && c <= '7'; }
bool hexadecimal(char c) { return decimal(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+
bool is_int_text(std::string_view s) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x'))
    return count_digits(s, 2, s[1] == 'o' ? octal : hexadecimal) == s.size() - 2;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  return !s.empty() && count_digits(s, 0, decimal) == s.size();
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? | [-+]?\.(inf|Inf|INF) | \.(nan|NaN|NAN)
bool is_float_text(std::string_view s) {
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return true;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  if (s == ".inf" || s == ".Inf" || s == ".INF") return true;
  std::size_t i = count_digits(s, 0, decimal);
  if (i == 0) {  // \.[0-9]+
    if (i == s.size() || s[i] != '.') return false;
    const std::size_t fraction = count_digits(s, i + 1, decimal);
    if (fraction == 0) return false;
    i += 1 + fraction;
  } else if (i < s.size() && s[i] == '.') {  // [0-9]+\.[0-9]*
    i += 1 + count_digits(s, i + 1, decimal);
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const std::size_t exponent = count_digits(s, i, decimal);
    if (exponent == 0) return false;
    i += exponent;
  }
  return i == s.size();
}

bool is_bool_text(const std::string& s) {
  return s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE";
}

std::string shorten(std::string s) {
  std::string out;
  for (char c : s) out += c == '\n' ? std::string("\\n") : std::string(1, c);
  if (out.size() > 60) out = out.substr(0, 57) + "...";
  return out;
}

}  // namespace

std::string child_path(const std::string& parent, const std::string& key) {
  if (is_identifier(key)) return parent.empty() ? key : parent + "." + key;
  std::string escaped;
  for (char c : key) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return parent + "[\"" + escaped + "\"]";
}

std::string located(const Source& source, const YAML::Mark& mark, const std::string& message) {
  if (mark.line < 0) return fmt::format("{}: {}", source.file, message);
  return fmt::format("{}:{}:{}: {}", source.file, mark.line + 1, mark.column + 1, message);
}

std::string one_of(const std::vector<std::string>& words, const char* last) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? fmt::format(" {} ", last) : std::string(", ");
    out += words[i];
  }
  return out;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& words) {
  std::size_t best = 3;
  std::string best_word;
  for (const std::string& w : words) {
    // Levenshtein distance, one row at a time.
    std::vector<std::size_t> row(w.size() + 1);
    for (std::size_t j = 0; j <= w.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= word.size(); ++i) {
      std::size_t diagonal = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= w.size(); ++j) {
        const std::size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (word[i - 1] == w[j - 1] ? 0 : 1)});
        diagonal = up;
      }
    }
    if (row[w.size()] < best && row[w.size()] < word.size()) {
      best = row[w.size()];
      best_word = w;
    }
  }
  return best_word.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", best_word);
}

namespace {

// A node loaded from block YAML keeps its style, which an emitter's format does not override.
void set_flow_style(YAML::Node node) {
  node.SetStyle(YAML::EmitterStyle::Flow);
  if (node.IsSequence())
    for (YAML::Node item : node) set_flow_style(item);
  else if (node.IsMap())
    for (auto entry : node) set_flow_style(entry.second);
}

}  // namespace

std::string flow_text(const YAML::Node& node) {
  if (node.IsNull()) return "null";
  if (node.IsScalar()) return node.Scalar();
  const YAML::Node copy = YAML::Clone(node);
  set_flow_style(copy);
  YAML::Emitter out;
  out << copy;
  return out.c_str();
}

Documents load_documents(const Source& source) {
  Documents documents;
  try {
    std::istringstream stream(source.text);
    YAML::Parser parser(stream);
    DocumentCounter counter;
    while (parser.HandleNextDocument(counter)) {
      // A document that starts where the previous one did consumed nothing: the parser is stuck
      // on a token no document can start with, and would report null documents forever.
      const std::size_t n = counter.starts.size();
      if (n >= 2 && counter.starts[n - 1].pos == counter.starts[n - 2].pos) {
        const YAML::Mark& at = counter.starts[n - 1];
        const bool known = at.pos >= 0 && static_cast<std::size_t>(at.pos) < source.text.size();
        const char c = known ? source.text[static_cast<std::size_t>(at.pos)] : '?';
        throw Error(located(source, at,
                            c == ','
                                ? std::string("unexpected ',' outside a flow collection ([...] or {...})")
                                : fmt::format("unexpected '{}': expected a YAML value", std::string(1, c))));
      }
    }
    documents.count = counter.starts.size();
    if (counter.values.size() >= 2) documents.second = counter.values[1];
    documents.first = YAML::Load(source.text);
  } catch (const YAML::Exception& e) {
    throw Error(located(source, e.mark, e.msg));
  }
  return documents;
}

Value::Value(YAML::Node node, std::string path, const Source& source, YAML::Mark mark)
    : node_(std::move(node)), path_(std::move(path)), source_(&source), mark_(mark) {}

Value Value::item(YAML::Node node, std::string path, const Source& source) {
  YAML::Mark mark = node.Mark();
  if (node.IsNull()) mark = dash_of_empty_item(source.text, mark);
  return Value(std::move(node), std::move(path), source, mark);
}

void Value::fail(const std::string& message) const {
  // The document's root has no path: its messages start after the position.
  throw ConfigError(located(*source_, mark_, path_.empty() ? message : fmt::format("{}: {}", path_, message)));
}

void Value::expected(const std::string& what) const { fail(fmt::format("expected {}, got {}", what, got())); }

ScalarType Value::scalar_type() const {
  if (node_.IsNull()) return ScalarType::Null;
  if (!node_.IsScalar()) return ScalarType::String;
  const std::string& tag = node_.Tag();
  const std::string& s = node_.Scalar();
  if (tag == "tag:yaml.org,2002:int") return ScalarType::Int;
  if (tag == "tag:yaml.org,2002:float") return ScalarType::Float;
  if (tag == "tag:yaml.org,2002:bool") return ScalarType::Bool;
  if (tag == "tag:yaml.org,2002:null") return ScalarType::Null;
  if (tag != "?") return ScalarType::String;  // quoted ("!"), !!str, or a tag of its own
  if (is_bool_text(s)) return ScalarType::Bool;
  if (is_int_text(s)) return ScalarType::Int;
  if (is_float_text(s)) return ScalarType::Float;
  return ScalarType::String;
}

std::string Value::got() const {
  if (node_.IsNull()) return "null";
  if (node_.IsSequence()) return "a list";
  if (node_.IsMap()) return "a mapping";
  const std::string s = shorten(node_.Scalar());
  switch (scalar_type()) {
    case ScalarType::Bool:
    case ScalarType::Int:
    case ScalarType::Float: return s;
    case ScalarType::Null: return "null";
    case ScalarType::String: break;
  }
  if (node_.Tag() == "!") return fmt::format("the quoted string \"{}\"", s);
  return fmt::format("'{}'", s);
}

int64_t Value::as_int(const std::string& what) const {
  if (scalar_type() != ScalarType::Int) expected(what);
  std::string s = node_.Scalar();
  int base = 10;
  bool negative = false;
  if (s.rfind("0o", 0) == 0 || s.rfind("0x", 0) == 0) {
    base = s[1] == 'o' ? 8 : 16;
    s = s.substr(2);
  } else if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s = s.substr(1);
  }
  uint64_t magnitude = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), magnitude, base);
  if (ec != std::errc() || ptr != s.data() + s.size() ||
      magnitude > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    expected(what);
  const auto v = static_cast<int64_t>(magnitude);
  return negative ? -v : v;
}

double Value::as_float(const std::string& what) const {
  if (scalar_type() != ScalarType::Float) expected(what);
  std::string s = node_.Scalar();
  const bool negative = !s.empty() && s[0] == '-';
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s = s.substr(1);
  if (s == ".inf" || s == ".Inf" || s == ".INF")
    return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return std::numeric_limits<double>::quiet_NaN();
  double v = 0.0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) expected(what);
  return negative ? -v : v;
}

double Value::as_number(const std::string& what) const {
  if (scalar_type() == ScalarType::Int) return static_cast<double>(as_int(what));
  return as_float(what);
}

bool Value::as_bool(const std::string& what) const {
  if (scalar_type() != ScalarType::Bool) expected(what);
  const std::string& s = node_.Scalar();
  return s == "true" || s == "True" || s == "TRUE";
}

std::string Value::as_string(const std::string& what) const {
  if (!node_.IsScalar() || scalar_type() != ScalarType::String) expected(what);
  return node_.Scalar();
}

std::vector<Value> Value::items(const std::string& what) const {
  if (!node_.IsSequence()) expected(what);
  std::vector<Value> out;
  for (std::size_t i = 0; i < node_.size(); ++i)
    out.push_back(Value::item(node_[i], fmt::format("{}[{}]", path_, i), *source_));
  return out;
}

std::string Value::text() const { return flow_text(node_); }

Mapping::Mapping(const Value& value, const std::string& what) : self_(value) {
  if (!value.is_map()) value.expected(what);
  for (auto it = value.node().begin(); it != value.node().end(); ++it) {
    const YAML::Node k = it->first;
    Value key_value(k, value.path(), value.source(), k.Mark());
    if (!k.IsScalar()) key_value.fail(fmt::format("expected a key name, got {}", key_value.got()));
    const std::string key = k.Scalar();
    key_value = Value(k, child_path(value.path(), key), value.source(), k.Mark());
    if (const Entry* first = find(key))
      key_value.fail(fmt::format("duplicate key (first at line {}, column {})", first->key_value.mark().line + 1,
                                 first->key_value.mark().column + 1));
    const YAML::Node v = it->second;
    // An empty value has no position of its own: use its key's.
    Value entry_value(v, key_value.path(), value.source(), v.IsNull() ? k.Mark() : v.Mark());
    entries_.push_back({key, key_value, entry_value});
  }
}

void Mapping::check_keys(const std::vector<std::string>& allowed,
                         const std::function<std::string(const std::string& key)>& message) const {
  for (const Entry& e : entries_) {
    if (std::find(allowed.begin(), allowed.end(), e.key) != allowed.end()) continue;
    if (e.key == "<<") e.key_value.fail("YAML merge keys ('<<') are not supported; write the keys out");
    e.key_value.fail(message(e.key));
  }
}

const Mapping::Entry* Mapping::find(const std::string& key) const {
  for (const Entry& e : entries_)
    if (e.key == key) return &e;
  return nullptr;
}

std::optional<Value> Mapping::get(const std::string& key) const {
  if (const Entry* e = find(key)) return e->value;
  return std::nullopt;
}

}  // namespace sparsetrain::config
