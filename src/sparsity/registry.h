#pragma once
// The algorithm registry: the algorithms a sparsity config can name, by lower-case name, with the
// keys each accepts (Cerebras' `algorithm:` values are the lower-cased class names).
//
//   AlgorithmSpec       everything one group of a config resolves to; a plain value, so a config
//                       and hand-written C++ can be compared field by field.
//   register_algorithm  adds a name, a factory building the algorithm from a spec, and the key
//                       rules the config loader enforces (with file, line and key) before the
//                       factory ever runs.
//   make_algorithm      checks a spec against its algorithm's rules and builds it.
//
// Built in: static, gmp, set, rigl, with Cerebras' rules: static takes neither `update` nor
// `drop_fraction` and needs a constant level; gmp needs `update` and a level that changes with
// the step, and takes no `drop_fraction`; set and rigl need `update` and take an optional
// `drop_fraction` (0.3 when absent). "group" is reserved: groups do not nest.
//
// A user algorithm (usually a DynamicSparsityAlgorithm subclass) registered before a config is
// loaded is selectable by its name; keys it declares in AlgorithmKeys::extra reach its factory
// as text in AlgorithmSpec::extra. Registration is thread-safe; names cannot be re-registered.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sparsity/algorithm.h"

namespace sparsetrain {

struct AlgorithmSpec {
  std::string algorithm = "static";  // a registered, lower-case name
  LevelSchedule sparsity = LevelSchedule::constant(0.0);
  std::optional<UpdateSchedule> update;        // when masks change (dynamic algorithms)
  std::optional<LevelSchedule> drop_fraction;  // set, rigl; absent means 0.3
  SparsityOptions options;                     // filter, init_method, seed, distribution, ...
  // Keys the algorithm declared in AlgorithmKeys::extra: a scalar's text as written, or any
  // other value (list, mapping) as one-line flow YAML ("[1, 2]", "{a: 1}").
  std::map<std::string, std::string> extra;
};

enum class KeyRule { Rejected, Optional, Required };
enum class LevelRule {
  Any,       // any level schedule
  Constant,  // one number in [0, 1) (static)
  Changing,  // a schedule that changes with the step (gmp: a constant level never prunes)
};

struct AlgorithmKeys {
  KeyRule update = KeyRule::Optional;
  KeyRule drop_fraction = KeyRule::Rejected;
  LevelRule level = LevelRule::Any;
  std::vector<std::string> extra;  // further keys the factory reads from AlgorithmSpec::extra
};

using AlgorithmFactory = std::function<std::unique_ptr<SparsityAlgorithm>(const AlgorithmSpec&)>;

// Throws for a name that is not lower-case [a-z][a-z0-9_]*, is "group", or is taken, for an empty
// factory, and for extra keys that repeat or shadow a common key (sparsity, update, ...).
void register_algorithm(const std::string& name, AlgorithmFactory factory, AlgorithmKeys allowed_keys = {});

// The rules of a registered algorithm; nullopt for an unknown name.
std::optional<AlgorithmKeys> algorithm_keys(const std::string& name);
// Every registered name, sorted.
std::vector<std::string> registered_algorithms();
// "unknown algorithm 'x'; registered: gmp, rigl, set, static"
std::string unknown_algorithm_message(const std::string& name);
// The keys every algorithm accepts in a config group (extra keys may not reuse them).
const std::vector<std::string>& common_algorithm_keys();

// Throws an Error naming the algorithm and the key when `spec` breaks its algorithm's rules
// (unknown name, update or drop_fraction present where rejected or missing where required, a
// level of the wrong kind, an undeclared extra key).
void check_spec(const AlgorithmSpec& spec);
// check_spec, then the factory.
std::unique_ptr<SparsityAlgorithm> make_algorithm(const AlgorithmSpec& spec);

}  // namespace sparsetrain
