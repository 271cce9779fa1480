#pragma once
// Which parameters a sparsity group applies to.
//
//   glob     fnmatch semantics over the whole dotted name: `*` matches any run of characters,
//            dots included; `?` one character; `[seq]` / `[!seq]` a character class
//            ("*.mlp.*.weight").
//   regex    a PCRE2 pattern that must match the whole name (the 2.1 configs'
//            `param_name_patterns`).
//   regex search  a PCRE2 pattern found anywhere in the name, unanchored (the 1.8-1.9
//            sideband configs' `param_name_patterns`: "fc" takes "fc1.weight").
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

#include "sparsetrain/nn/module.h"

namespace sparsetrain {

// Whether a module's type names an embedding or a normalization ("Embedding", "LayerNorm",
// "BatchNorm2d"): the default filter leaves their parameters dense, and algorithms never store
// them compressed (no kernels run on them).
bool is_embedding_or_norm(const Module& module);

class ParamFilter {
 public:
  static ParamFilter default_filter();
  static ParamFilter globs(const std::vector<std::string>& patterns);
  // Throws an Error naming the pattern and the position PCRE2 reports for a bad regex.
  static ParamFilter regexes(const std::vector<std::string>& patterns);
  // Unanchored: a parameter passes when a pattern matches anywhere in its name.
  static ParamFilter regex_searches(const std::vector<std::string>& patterns);

  bool matches(const Module::Entry& entry) const;
  bool is_default() const { return patterns_.empty(); }
  // "default", or the factory and the patterns as given: "globs(a.*, b)", "regexes(fc.*)",
  // "regex_searches(fc)".
  std::string describe() const;
  // The factory ("default", "globs", "regexes", "regex_searches") and the patterns as given.
  std::string kind() const { return kind_; }
  const std::vector<std::string>& patterns() const { return patterns_; }

  // fnmatch.translate: the anchored regex a glob stands for.
  static std::string glob_to_regex(const std::string& glob);

 private:
  struct Compiled;
  static ParamFilter compile(const std::vector<std::string>& patterns, bool anchored);
  const char* kind_ = "default";       // the factory, for describe()
  std::vector<std::string> patterns_;  // as given, for describe()
  std::vector<std::shared_ptr<const Compiled>> compiled_;
};

}  // namespace sparsetrain
