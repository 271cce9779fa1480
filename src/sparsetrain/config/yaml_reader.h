#pragma once
// Strict reading of YAML for config loaders (internal to src/sparsetrain/config). Every value carries the
// file, its position and its key path, and every failure is a sparsetrain::Error
//
//   cfg.yaml:12:9: sparsity[1].update.freq: expected an integer >= 1, got 'ten'
//
// Lines and columns are 1-based. Plain scalars are typed by the YAML 1.2 core schema (null, bool,
// int, float, else string), so `0` is an int, `0.0` and `1e-3` floats, `"0.5"` (quoted) a string;
// reads never convert between types except int -> number. Mappings reject duplicate and
// non-scalar keys (yaml-cpp keeps both entries of a duplicate key; the loader must not).
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sparsetrain/core/error.h"

namespace sparsetrain::config {

// Where the YAML came from: the file name for messages, and the text when known. yaml-cpp puts
// an empty value (`- ` with nothing after it) at the next token; the text lets messages point at
// the `-` instead.
struct Source {
  std::string file;
  std::string text;
};

enum class ScalarType { Null, Bool, Int, Float, String };

// An Error that already names its file, position and key path: at_value passes it on as is.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// "sparsity" + "update" -> "sparsity.update"; keys that are not identifiers are bracketed:
// "sparsity.overrides" + "fc1.weight" -> "sparsity.overrides[\"fc1.weight\"]".
std::string child_path(const std::string& parent, const std::string& key);

// "file:line:col: message" for a yaml-cpp mark (1-based; no position for a mark yaml-cpp did not set).
std::string located(const Source& source, const YAML::Mark& mark, const std::string& message);

class Value {
 public:
  Value(YAML::Node node, std::string path, const Source& source, YAML::Mark mark);
  // A sequence item: an empty (null) item is placed at its `-` when the text is known.
  static Value item(YAML::Node node, std::string path, const Source& source);

  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  const YAML::Mark& mark() const { return mark_; }
  const Source& source() const { return *source_; }

  // "file:line:col: path: message"
  [[noreturn]] void fail(const std::string& message) const;
  // "... expected <what>, got <got()>"
  [[noreturn]] void expected(const std::string& what) const;
  // How the value reads in a message: 0.5, true, null, 'ten', the quoted string "0.5", a list, a mapping.
  std::string got() const;

  bool is_null() const { return node_.IsNull(); }
  bool is_map() const { return node_.IsMap(); }
  bool is_list() const { return node_.IsSequence(); }
  // The core-schema type of a scalar or null; String for lists and mappings.
  ScalarType scalar_type() const;

  // Typed reads: each fails with expected(what) when the value has another type.
  double as_number(const std::string& what) const;  // int or float
  double as_float(const std::string& what) const;   // float only: `1` is rejected
  int64_t as_int(const std::string& what) const;
  bool as_bool(const std::string& what) const;
  std::string as_string(const std::string& what) const;  // a string scalar, plain or quoted
  // A list's items, paths "<path>[i]"; fails unless the value is a list.
  std::vector<Value> items(const std::string& what) const;
  // A scalar's text, or any other value as one-line flow YAML.
  std::string text() const;

 private:
  YAML::Node node_;
  std::string path_;
  const Source* source_;
  YAML::Mark mark_;
};

// A mapping whose keys are checked once: every key is a non-null scalar and none repeats.
class Mapping {
 public:
  struct Entry {
    std::string key;
    Value key_value;  // the key itself, for messages about the key (unknown, exclusive, ...)
    Value value;      // path "<mapping path>.<key>"; an empty value is placed at its key
  };

  // Fails with expected(what) unless `value` is a mapping.
  Mapping(const Value& value, const std::string& what);
  // Entries gathered from elsewhere (a flattened `params:` block), already checked.
  Mapping(Value self, std::vector<Entry> entries) : self_(std::move(self)), entries_(std::move(entries)) {}

  // Fails at the first key not in `allowed`, with message(key) after the key's path.
  void check_keys(const std::vector<std::string>& allowed,
                  const std::function<std::string(const std::string& key)>& message) const;

  const Value& self() const { return self_; }
  const std::vector<Entry>& entries() const { return entries_; }
  bool has(const std::string& key) const { return find(key) != nullptr; }
  const Entry* find(const std::string& key) const;
  std::optional<Value> get(const std::string& key) const;

 private:
  Value self_;
  std::vector<Entry> entries_;
};

// Runs `f`; an Error it throws is rethrown at `at` ("file:line:col: path: <message>"), unless it
// is a ConfigError, which already says where it is.
template <typename F>
auto at_value(const Value& at, F&& f) -> decltype(f());

// The YAML documents of a config's text: the first (a null node when there is none), how many
// there are, and where the second one's value starts. A syntax error is an Error naming the file
// and position. Use this, never YAML::LoadAll: yaml-cpp 0.7's LoadAll loops forever, adding a null
// document each time, on a ',' outside a flow collection (",", "[a],"; jbeder/yaml-cpp#1040).
struct Documents {
  YAML::Node first;
  std::size_t count = 0;
  YAML::Mark second;
};
Documents load_documents(const Source& source);

// "a, b or c"
std::string one_of(const std::vector<std::string>& words, const char* last = "or");
// " (did you mean 'sparsity'?)" for the closest word within two edits, else "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& words);

// A scalar's text, "null", or any other value as one line of flow YAML, however it was written
// (block or flow style): "[1, 2]", "{a: 1, b: [x, y]}".
std::string flow_text(const YAML::Node& node);

template <typename F>
auto at_value(const Value& at, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {
    at.fail(e.what());
  }
}

}  // namespace sparsetrain::config
