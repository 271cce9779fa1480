// Parameter filters: fnmatch globs over whole dotted names, PCRE2 regexes, and the default.
#include <gtest/gtest.h>

#include "sparsetrain/core/error.h"
#include "sparsetrain/sparsity/param_filter.h"

namespace sparsetrain {
namespace {

struct Owner : Module {
  explicit Owner(const char* type) : Module(type) {}
};

// Whether the filter takes a parameter of this full name and shape, owned by a module of this type.
bool matches(const ParamFilter& f, const std::string& name, const char* type = "Linear", Shape shape = {4, 4}) {
  Owner owner(type);
  Parameter param(name, std::move(shape));
  return f.matches({&param, &owner, false});
}

TEST(ParamFilter, GlobStarCrossesDotsAndMustMatchTheWholeName) {
  const ParamFilter f = ParamFilter::globs({"*.mlp.*.weight"});
  EXPECT_TRUE(matches(f, "transformer.h.0.mlp.c_fc.weight"));
  EXPECT_TRUE(matches(f, "h.11.mlp.c_proj.weight"));
  EXPECT_FALSE(matches(f, "h.0.mlp.c_fc.weight_extra"));
  EXPECT_FALSE(matches(f, "h.0.attn.c_attn.weight"));
  const ParamFilter q = ParamFilter::globs({"h.?.attn.c_[ap]*.weight", "lm_head.weight"});
  EXPECT_TRUE(matches(q, "h.3.attn.c_attn.weight"));
  EXPECT_TRUE(matches(q, "h.3.attn.c_proj.weight"));
  EXPECT_FALSE(matches(q, "h.12.attn.c_attn.weight"));
  EXPECT_TRUE(matches(q, "lm_head.weight"));
  EXPECT_TRUE(matches(ParamFilter::globs({"fc[!0-4].weight"}), "fc7.weight"));
  EXPECT_FALSE(matches(ParamFilter::globs({"fc[!0-4].weight"}), "fc3.weight"));
  // Regex metacharacters in a glob are literal.
  EXPECT_FALSE(matches(ParamFilter::globs({"fc1+weight"}), "fc11weight"));
  EXPECT_EQ(ParamFilter::glob_to_regex("a.*[!x]?"), "a\\..*[^x].");
}

TEST(ParamFilter, RegexesMatchTheWholeName) {
  const ParamFilter f = ParamFilter::regexes({".*proj_[qkv]_dense_layer\\.weight"});
  EXPECT_TRUE(matches(f, "decoder.0.attn.proj_q_dense_layer.weight"));
  EXPECT_FALSE(matches(f, "decoder.0.attn.proj_q_dense_layer.weight2"));
  EXPECT_FALSE(matches(ParamFilter::regexes({"fc"}), "fc1.weight")) << "a regex must match the whole name";
  try {
    ParamFilter::regexes({"fc(1"});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("parameter filter 'fc(1': bad regular expression at offset 4"),
              std::string::npos)
        << e.what();
  }
}

TEST(ParamFilter, DefaultDecidesByDimensionsModuleTypeAndName) {
  const ParamFilter d = ParamFilter::default_filter();
  EXPECT_TRUE(d.is_default());
  EXPECT_TRUE(matches(d, "h.0.mlp.c_fc.weight"));
  EXPECT_FALSE(matches(d, "h.0.mlp.c_fc.bias", "Linear", {4}));
  EXPECT_FALSE(matches(d, "transformer.wte.weight", "Embedding"));
  EXPECT_FALSE(matches(d, "h.0.ln_1.weight", "LayerNorm"));
  EXPECT_FALSE(matches(d, "lm_head.weight"));
  EXPECT_FALSE(matches(d, "encoder.token_embedding.weight"));
  EXPECT_FALSE(matches(d, "encoder.NormLayer.weight"));
  EXPECT_EQ(d.describe(), "default");
  EXPECT_EQ(ParamFilter::globs({"a.*", "b"}).describe(), "globs(a.*, b)");
  EXPECT_EQ(ParamFilter::regexes({"a.*", "b"}).describe(), "regexes(a.*, b)");
  EXPECT_EQ(ParamFilter::regex_searches({"a.*", "b"}).describe(), "regex_searches(a.*, b)");
}

TEST(ParamFilter, RegexSearchesMatchAnywhereInTheName) {
  // The sideband form's param_name_patterns: unanchored search, unlike regexes().
  const ParamFilter f = ParamFilter::regex_searches({"fc_layers.*weight"});
  EXPECT_TRUE(matches(f, "fc_layers.0.weight"));
  EXPECT_TRUE(matches(f, "model.fc_layers.3.weight_extra")) << "a search needs no match at either end";
  EXPECT_FALSE(matches(f, "fc_layers.0.bias"));
  EXPECT_FALSE(matches(ParamFilter::regexes({"fc_layers.*weight"}), "model.fc_layers.3.weight_extra"));
  const ParamFilter anchored = ParamFilter::regex_searches({"^fc", "bias$"});
  EXPECT_TRUE(matches(anchored, "fc1.weight"));
  EXPECT_FALSE(matches(anchored, "x.fc1.weight")) << "explicit anchors still anchor";
  EXPECT_TRUE(matches(anchored, "x.fc1.bias", "Linear", {4}));
  // Unlike the default filter, patterns take any parameter they match, vectors included.
  EXPECT_TRUE(matches(ParamFilter::regex_searches({"fc"}), "fc1.bias", "Linear", {4}));
  try {
    ParamFilter::regex_searches({"fc[1"});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("parameter filter 'fc[1': bad regular expression at offset 4"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sparsetrain
