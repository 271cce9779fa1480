#pragma once
// The algorithm registry: the algorithms a sparsity config can name, by lower-case name, with the
// keys each accepts (Cerebras' `algorithm:` values are the lower-cased class names).
//
//   AlgorithmSpec       everything one group of a config resolves to; a plain value, so a config
//                       and hand-written C++ can be compared field by field.
//   register_algorithm  adds a name, a factory building the algorithm from a spec, and its key
//                       rules (AlgorithmKeys).
//   *_rule_violation    the rules, each checked in one place with one wording: check_spec (the
//                       C++ API) throws the message as is, and the config loader puts the same
//                       message after the file, line, column and key path of the offending key
//                       (of the group, for a missing key) before the factory ever runs.
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

#include "sparsetrain/sparsity/algorithm.h"

namespace sparsetrain {

struct AlgorithmSpec {
  std::string algorithm = "static";  // a registered, lower-case name
  LevelSchedule sparsity = LevelSchedule::constant(0.0);
  std::optional<UpdateSchedule> update;        // when masks change (dynamic algorithms)
  std::optional<LevelSchedule> drop_fraction;  // set, rigl; see effective_drop_fraction
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
// The drop fraction a spec runs with: its own, else kDefaultDropFraction for set and rigl;
// nullopt for an algorithm that takes none, or a user algorithm whose factory picks its own.
std::optional<LevelSchedule> effective_drop_fraction(const AlgorithmSpec& spec);
// Every registered name, sorted.
std::vector<std::string> registered_algorithms();
// "unknown algorithm 'x'; registered: gmp, rigl, set, static"
std::string unknown_algorithm_message(const std::string& name);
// The keys every algorithm accepts in a config group (extra keys may not reuse them).
const std::vector<std::string>& common_algorithm_keys();

// The rules of AlgorithmKeys. Each returns nullopt when the rule holds, else its message, which
// names the algorithm and has no location:
//
//   update         "static takes no update schedule: its masks never change"
//                  "missing 'update': gmp needs an update schedule ({freq, start, stop} or {steps: [...]})"
//   drop_fraction  "gmp takes no drop_fraction: it does not regrow connections"
//                  "missing 'drop_fraction': <algorithm> needs one"
//   level          "expected a number in [0, 1) (static keeps one fixed level), got linear(...)"
//                  "expected a schedule that changes with the step (gmp never prunes at a constant level),
//                   got constant(0.5)"
//
// `given`: whether the key is there. `key`: what the update schedule is called where it is missing
// ("schedule" in the 2.0-2.1 config form). `got`: how the level reads in the message (a config
// quotes its text; by default level.describe()).
std::optional<std::string> update_rule_violation(const std::string& algorithm, const AlgorithmKeys& keys, bool given,
                                                 const std::string& key = "update");
std::optional<std::string> drop_fraction_rule_violation(const std::string& algorithm, const AlgorithmKeys& keys,
                                                        bool given);
std::optional<std::string> level_rule_violation(const std::string& algorithm, const AlgorithmKeys& keys,
                                                const LevelSchedule& level, const std::string& got = "");
// What a Constant or Changing level rule expects: its message is "expected <this>, got <level>".
// A config also refuses with it a value that cannot be read as a level of the rule's kind at all
// (a list or a mapping where static needs one number).
std::string level_rule_expectation(const std::string& algorithm, LevelRule rule);

// The storage rule of every algorithm: an N:M format keeps n of every m weights, a fixed level of
// 1 - n/m, so the spec must ask for that level: a constant within 0.001 of it, a uniform
// distribution and no override at another level. nullopt when it holds (and for every other
// format, whose level follows the sparsity), else e.g.
//   "format '2:4' keeps 2 of every 4 weights, a fixed level of 0.5, but the sparsity is 0.9; give
//    sparsity 0.5, or a format whose level follows the sparsity (csr, bcsr4, bcsr8, bcsr16 or auto)"
std::optional<std::string> format_rule_violation(const AlgorithmSpec& spec);

// Throws an Error when `spec` breaks its algorithm's rules: the unknown-algorithm message, a
// *_rule_violation message, or "<algorithm>: unknown extra key '<key>'..." for a key of
// AlgorithmSpec::extra the algorithm did not declare.
void check_spec(const AlgorithmSpec& spec);
// check_spec, then the factory.
std::unique_ptr<SparsityAlgorithm> make_algorithm(const AlgorithmSpec& spec);

}  // namespace sparsetrain
