#pragma once
// Which parameters a sparsity group applies to.
//
//   glob     fnmatch semantics over the whole dotted name: `*` matches any run of characters,
//            dots included; `?` one character; `[seq]` / `[!seq]` a character class
//            ("*.mlp.*.weight").
//   regex    a PCRE2 pattern that must match the whole name (the sideband configs'
//            `param_name_patterns`).
//   default  Cerebras' default: parameters with more than one dimension, except those owned by
//            embedding or normalization modules (decided by module type, since GPT-2 names
//            such as `wte` or `ln_1` do not say so) and those whose lower-cased name contains
//            "embedding", "norm" or "lm_head".
//
// A filter is a list of patterns; a parameter passes when any pattern matches. A given filter
// replaces the default one entirely.
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace sparsetrain {

class ParamFilter {
 public:
  static ParamFilter default_filter();
  static ParamFilter globs(const std::vector<std::string>& patterns);
  // Throws an Error naming the pattern and the position PCRE2 reports for a bad regex.
  static ParamFilter regexes(const std::vector<std::string>& patterns);

  bool matches(const Module::Entry& entry) const;
  bool is_default() const { return patterns_.empty(); }
  std::string describe() const;  // "default" or the patterns as given

  // fnmatch.translate: the anchored regex a glob stands for.
  static std::string glob_to_regex(const std::string& glob);

 private:
  struct Compiled;
  std::vector<std::string> patterns_;  // as given, for describe()
  std::vector<std::shared_ptr<const Compiled>> compiled_;
};

}  // namespace sparsetrain
