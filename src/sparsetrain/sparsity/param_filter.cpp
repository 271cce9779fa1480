#include "sparsetrain/sparsity/param_filter.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pcre2.h>

#include <algorithm>
#include <cctype>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

struct ParamFilter::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool mentions(const std::string& text, std::initializer_list<const char*> words) {
  const std::string l = lower(text);
  return std::any_of(words.begin(), words.end(), [&](const char* w) { return l.find(w) != std::string::npos; });
}

}  // namespace

std::string ParamFilter::glob_to_regex(const std::string& glob) {
  std::string re;
  for (std::size_t i = 0; i < glob.size(); ++i) {
    const char c = glob[i];
    if (c == '*') {
      re += ".*";
    } else if (c == '?') {
      re += '.';
    } else if (c == '[') {
      // A class runs to the next ']' (a ']' right after '[' or '[!' belongs to it); without
      // one, '[' is literal, as in fnmatch.
      std::size_t j = i + 1;
      if (j < glob.size() && glob[j] == '!') ++j;
      if (j < glob.size() && glob[j] == ']') ++j;
      while (j < glob.size() && glob[j] != ']') ++j;
      if (j >= glob.size()) {
        re += "\\[";
        continue;
      }
      std::string body = glob.substr(i + 1, j - i - 1);
      if (!body.empty() && body[0] == '!') body[0] = '^';
      std::string escaped;
      for (char b : body) escaped += b == '\\' ? std::string("\\\\") : std::string(1, b);
      re += "[" + escaped + "]";
      i = j;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      re += c;
    } else {
      re += '\\';
      re += c;
    }
  }
  return re;
}

ParamFilter ParamFilter::default_filter() { return ParamFilter(); }

ParamFilter ParamFilter::globs(const std::vector<std::string>& patterns) {
  std::vector<std::string> regexes;
  for (const std::string& g : patterns) regexes.push_back(glob_to_regex(g));
  ParamFilter f = compile(regexes, /*anchored=*/true);
  f.kind_ = "globs";
  f.patterns_ = patterns;
  return f;
}

ParamFilter ParamFilter::regexes(const std::vector<std::string>& patterns) {
  ParamFilter f = compile(patterns, /*anchored=*/true);
  f.kind_ = "regexes";
  return f;
}

ParamFilter ParamFilter::regex_searches(const std::vector<std::string>& patterns) {
  ParamFilter f = compile(patterns, /*anchored=*/false);
  f.kind_ = "regex_searches";
  return f;
}

ParamFilter ParamFilter::compile(const std::vector<std::string>& patterns, bool anchored) {
  if (patterns.empty()) fail("parameter filter: no patterns given");
  ParamFilter f;
  for (const std::string& p : patterns) {
    int code = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* re =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(),
                      (anchored ? PCRE2_ANCHORED | PCRE2_ENDANCHORED : 0u) | PCRE2_UTF, &code, &offset, nullptr);
    if (!re) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(code, message, sizeof message);
      fail("parameter filter '{}': bad regular expression at offset {}: {}", p, offset,
           reinterpret_cast<const char*>(message));
    }
    auto compiled = std::make_shared<Compiled>();
    compiled->code = re;
    f.compiled_.push_back(std::move(compiled));
  }
  f.patterns_ = patterns;
  return f;
}

bool is_embedding_or_norm(const Module& module) { return mentions(module.type(), {"embedding", "norm"}); }

bool ParamFilter::matches(const Module::Entry& entry) const {
  const std::string& name = entry.param->name();
  if (is_default())
    return entry.param->shape().size() > 1 && !is_embedding_or_norm(*entry.owner) &&
           !mentions(name, {"embedding", "norm", "lm_head"});
  for (const auto& c : compiled_) {
    pcre2_match_data* data = pcre2_match_data_create_from_pattern(c->code, nullptr);
    const int rc = pcre2_match(c->code, reinterpret_cast<PCRE2_SPTR>(name.data()), name.size(), 0, 0, data, nullptr);
    pcre2_match_data_free(data);
    if (rc >= 0) return true;
  }
  return false;
}

std::string ParamFilter::describe() const {
  return is_default() ? std::string("default") : fmt::format("{}({})", kind_, fmt::join(patterns_, ", "));
}

}  // namespace sparsetrain
