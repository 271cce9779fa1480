#pragma once
// The `sparsity:` section of a Cerebras-style YAML training config, in every generation, resolved
// to one AlgorithmSpec per group (docs/sparsity.md, "YAML configuration", documents every key):
//
//   sideband (1.8-1.9)  type: sideband; sparsity (a float), init_method (default topk), seed,
//                       param_name_patterns: regex | [regex] | {regex: settings}; regexes are
//                       unanchored searches; a dict's blocks merge over the top level, first
//                       match wins; out_groups / in_groups; kept counts round half to even.
//   2.0-2.1             type: static|gmp|set|rigl (no `algorithm`); schedule: {freq, stop} is the
//                       update cadence; param_name_patterns: [regex] (whole-name matches);
//                       sparsity, drop_fraction, init_method.
//   2.2+                algorithm (`type` is a deprecated alias; default static); sparsity or its
//                       alias schedule: a number, a schedule mapping {type: ...}, or a list
//                       (cycling); update: {freq, start, stop} | {steps}; drop_fraction;
//                       init_method; param_filter: glob | [glob] or (sparsetrain's)
//                       param_name_patterns: regex | [regex] (whole-name), not both; balance_in_groups /
//                       balance_out_groups. The section is a number (static at that level), a
//                       mapping, a list of mappings (groups: first match wins, no inheritance),
//                       or {groups: [...]} whose items may nest their keys under `params:`.
//   sparsetrain         format (csr, bcsr4/8/16, N:M), distribution (uniform, er, erk), seed,
//                       overrides (parameter name -> level), in every form.
//
// A group's `algorithm` is any registered name (sparsity/registry.h), user algorithms included.
// Nothing is guessed: unknown or duplicate keys, wrong types (an int where the sideband form wants
// a float, a quoted string for a number), out-of-range values, contradictions and nesting are all
// sparsetrain::Errors of the form
//
//   cfg.yaml:12:9: sparsity[1].update.freq: expected an integer >= 1, got 'ten'
//
// with 1-based line and column. Every group is also built once while loading, so an error any
// algorithm's constructor would raise surfaces here, at the group.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sparsetrain/sparsity/registry.h"

namespace YAML {
class Node;
}

namespace sparsetrain {

enum class ConfigForm {
  None,      // no section, or `sparsity: null`
  Sideband,  // 1.8-1.9
  V21,       // 2.0-2.1
  V22,       // 2.2 and later
};
const char* config_form_name(ConfigForm form);  // "none", "sideband", "2.1", "2.2+"

struct SparsityConfig {
  ConfigForm form = ConfigForm::None;
  std::vector<AlgorithmSpec> groups;  // in file order; a parameter goes to the first that matches
  std::vector<std::string> warnings;  // located, e.g. the deprecated `type:` alias

  // Where each group is written (parallel to `groups`), for the checks that need the model
  // (train/setup.cpp): "cfg.yaml:3:5: sparsity[1]"-style prefixes of the group, of the key that
  // selects its parameters (empty for the default filter) and of each override's key.
  struct Source {
    std::string group, filter;
    std::map<std::string, std::string> overrides;
  };
  std::vector<Source> sources;

  // The algorithm of a single group, a Group of several, or an empty Group when there are none;
  // its leaf_algorithms() are the groups, in file order.
  std::unique_ptr<SparsityAlgorithm> build() const;
};

// Reads the section itself (`node` is the value of `sparsity:`). `file` names it in messages,
// `path` is its key path ("sparsity", or "trainer.init.sparsity" for 2.4+ configs).
SparsityConfig load_sparsity(const YAML::Node& node, const std::string& file, const std::string& path = "sparsity");

// A whole config document: the section is top-level `sparsity:` (up to 2.3) or
// `trainer.init.sparsity:` (2.4+); giving both is an error, giving neither an empty config.
// Other keys of the document are not read. YAML syntax errors, several documents in one file and
// an unreadable file are Errors naming the file (and the position).
SparsityConfig load_sparsity_yaml(const std::string& text, const std::string& file);
SparsityConfig load_sparsity_file(const std::string& path);

}  // namespace sparsetrain
