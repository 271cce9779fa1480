// The YAML `sparsity:` loader: every Cerebras generation (1.8-1.9 sideband, 2.0-2.1, 2.2+) and the
// examples of the reference resolve to the same AlgorithmSpecs as hand-written C++; configs build
// and claim the expected parameters; user algorithms are selectable by name; every error names
// file, line, column, key path and what was expected.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "error_of.h"
#include "sparsetrain/config/sparsity_config.h"
#include "sparsetrain/sparsity/algorithms.h"
#include "sparsetrain/sparsity/group.h"
#include "sparsetrain/sparsity/mask_select.h"
#include "toy_modules.h"

namespace sparsetrain {
namespace {

using testing::error_of;

// ---- models ------------------------------------------------------------------------------------

using Linear = testing::ToyLinear;

struct Holder : Module {
  explicit Holder(const char* type) : Module(type) {}
  template <typename M>
  M& add(const char* name, std::unique_ptr<M> child) {
    return register_module(name, std::move(child));
  }
};

using testing::fill_distinct;

// The parameter names of the Cerebras Model Zoo GPT-3, one decoder layer.
struct Gpt : Holder {
  Gpt() : Holder("GPT3") {
    add("embedding", std::make_unique<Linear>(8, 20, "Embedding"));
    auto& layer = add("layers", std::make_unique<Holder>("ModuleList")).add("0", std::make_unique<Holder>("Decoder"));
    auto& attn = layer.add("self_attn", std::make_unique<Holder>("MultiheadAttention"));
    for (const char* n : {"proj_q_dense_layer", "proj_k_dense_layer", "proj_v_dense_layer", "proj_output_dense_layer"})
      attn.add(n, std::make_unique<Linear>(8, 8));
    layer.add("norm1", std::make_unique<Linear>(8, 8, "LayerNorm"));
    auto& ffn = layer.add("ffn", std::make_unique<Holder>("FeedForward"));
    ffn.add("0", std::make_unique<Holder>("Block")).add("linear_layer", std::make_unique<Linear>(8, 16));
    ffn.add("1", std::make_unique<Holder>("Block")).add("linear_layer", std::make_unique<Linear>(16, 8));
    add("lm_head", std::make_unique<Linear>(8, 20));
    fill_distinct(*this);
  }
};

// Cerebras' documentation model: fc1 (25 -> 20), fc2 (20 -> 10), and a head.
struct Mlp : Holder {
  Mlp() : Holder("Mlp") {
    fc1 = &add("fc1", std::make_unique<Linear>(25, 20));
    fc2 = &add("fc2", std::make_unique<Linear>(20, 10));
    head = &add("head", std::make_unique<Linear>(10, 4));
    fill_distinct(*this);
  }
  Linear *fc1, *fc2, *head;
};

std::vector<std::string> sparse_names(Module& m) {
  std::vector<std::string> names;
  for (Parameter* p : m.parameters())
    if (p->is_sparse()) names.push_back(p->name());
  return names;
}

std::vector<std::string> names_of(const SparsityAlgorithm& a) {
  std::vector<std::string> names;
  for (const Parameter* p : a.parameters()) names.push_back(p->name());
  return names;
}

// ---- a user algorithm --------------------------------------------------------------------------

// Every update shifts each row of the mask `shift` columns to the right, wrapping around.
class Shift final : public DynamicSparsityAlgorithm {
 public:
  Shift(LevelSchedule sparsity, UpdateSchedule schedule, int shift, SparsityOptions options)
      : DynamicSparsityAlgorithm(std::move(sparsity), std::move(schedule), std::move(options)), shift_(shift) {
    if (shift < 0) fail("shift: 'shift' must be >= 0, got {}", shift);
  }
  std::string name() const override { return "shift"; }
  Mask update_mask(Parameter& /*p*/, const Mask& mask, double /*sparsity*/, int64_t /*step*/) override {
    Mask out(mask.rows(), mask.cols());
    for (int64_t r = 0; r < mask.rows(); ++r)
      for (int64_t c = 0; c < mask.cols(); ++c) out.set(r, (c + shift_) % mask.cols(), mask.at(r, c));
    return out;
  }
  int shift() const { return shift_; }

 private:
  int shift_;
};

// Registered once per process, before any test that reads the registry's names: shift, and
// regrow, a SET that needs its drop_fraction (no built-in requires one).
void register_shift() {
  static std::once_flag once;
  std::call_once(once, [] {
    AlgorithmKeys keys;
    keys.update = KeyRule::Required;
    keys.extra = {"shift", "note"};
    register_algorithm(
        "shift",
        [](const AlgorithmSpec& s) {
          const int shift = s.extra.count("shift") ? std::stoi(s.extra.at("shift")) : 1;
          return std::make_unique<Shift>(s.sparsity, *s.update, shift, s.options);
        },
        keys);
    register_algorithm("regrow",
                       [](const AlgorithmSpec& s) {
                         return std::make_unique<SET>(s.sparsity, *s.update, *s.drop_fraction, s.options);
                       },
                       {KeyRule::Required, KeyRule::Required, LevelRule::Any, {}});
  });
}

// ---- helpers -----------------------------------------------------------------------------------

// Raw strings start with a newline for readability; line 1 is the line after it.
std::string text(const char* yaml) { return yaml[0] == '\n' ? yaml + 1 : yaml; }

SparsityConfig load(const char* yaml) { return load_sparsity_yaml(text(yaml), "cfg.yaml"); }

std::string load_error(const char* yaml) {
  register_shift();
  return error_of([&] { load(yaml); });
}

// Everything a spec holds, on one line.
std::string describe(const AlgorithmSpec& s) {
  const SparsityOptions& o = s.options;
  std::string overrides, extra;
  for (const auto& [name, level] : o.overrides) overrides += fmt::format(" {}={}", name, level);
  for (const auto& [key, value] : s.extra) extra += fmt::format(" {}={}", key, value);
  auto count = [](const std::optional<int>& n) { return n ? std::to_string(*n) : std::string("-"); };
  return fmt::format(
      "{} | sparsity {} | update {} | drop {} | filter {} | init {} | seed {} | {} | overrides{} | format {} | "
      "balance out {} in {} | {} | extra{}",
      s.algorithm, s.sparsity.describe(), s.update ? s.update->describe() : "none",
      s.drop_fraction ? s.drop_fraction->describe() : "none", o.filter.describe(), init_method_name(o.init_method),
      o.seed ? std::to_string(*o.seed) : std::string("run"), distribution_name(o.distribution), overrides,
      o.auto_format ? "auto"
      : o.format    ? o.format->name()
                    : "none",
      count(o.balance_out_groups), count(o.balance_in_groups), o.round_half_even ? "half-even" : "truncate", extra);
}

std::vector<std::string> describe(const SparsityConfig& c) {
  std::vector<std::string> out;
  for (const AlgorithmSpec& s : c.groups) out.push_back(describe(s));
  return out;
}

AlgorithmSpec make_spec(const std::string& algorithm, LevelSchedule sparsity, SparsityOptions options = {},
                        std::optional<UpdateSchedule> update = {}, std::optional<LevelSchedule> drop = {}) {
  AlgorithmSpec s;
  s.algorithm = algorithm;
  s.sparsity = std::move(sparsity);
  s.options = std::move(options);
  s.update = std::move(update);
  s.drop_fraction = std::move(drop);
  return s;
}

SparsityOptions sideband_options(ParamFilter filter = ParamFilter::default_filter()) {
  SparsityOptions o;
  o.filter = std::move(filter);
  o.init_method = InitMethod::TopK;
  o.round_half_even = true;
  return o;
}

// ---- 1.8-1.9 sideband --------------------------------------------------------------------------

TEST(SparsityConfig, DescribePinsEveryField) {
  SparsityOptions o;
  o.filter = ParamFilter::globs({"a.*"});
  o.format = FormatSpec::nm(2, 4);
  o.overrides["a.weight"] = 0.5;
  o.balance_in_groups = 2;
  AlgorithmSpec s = make_spec("rigl", LevelSchedule::constant(0.9), o, UpdateSchedule::every(100, 0, 3584),
                              LevelSchedule::cosine(0.3, 3584));
  s.extra["k"] = "v";
  EXPECT_EQ(describe(s),
            "rigl | sparsity constant(0.9) | update every 100 steps from 0 to 3584 (exclusive) | drop "
            "cosine(init=0.3, half_period=3584, minimum=0) | filter globs(a.*) | init random | seed run | uniform | "
            "overrides a.weight=0.5 | format 2:4 | balance out - in 2 | truncate | extra k=v");
}

TEST(SparsityConfig, SidebandSeedExamplesParseToStaticSpecs) {
  // The four snippets of the Model Zoo "Sparsity" page (seed 000).
  SparsityOptions uniform = sideband_options();
  uniform.init_method = InitMethod::Random;
  uniform.seed = 1234;
  SparsityConfig c = load(R"(
sparsity:
  type: sideband
  sparsity: 0.3 # uniform sparsify of every >1D non-norm non-embedding tensor (default heuristic)
  init_method: "random"
  seed: 1234 # random sparsity pattern is deterministic based on parameter name
)");
  EXPECT_EQ(c.form, ConfigForm::Sideband);
  EXPECT_EQ(describe(c),
            std::vector<std::string>{describe(make_spec("static", LevelSchedule::constant(0.3), uniform))});

  SparsityOptions one = uniform;
  one.filter = ParamFilter::regex_searches({"fc_layers.*weight"});
  EXPECT_EQ(describe(load(R"(
sparsity:
  type: sideband
  sparsity: 0.3
  init_method: "random"
  param_name_patterns: "fc_layers.*weight" # only these tensors, regex supported
  seed: 1234
)")),
            std::vector<std::string>{describe(make_spec("static", LevelSchedule::constant(0.3), one))});

  const SparsityOptions two =
      sideband_options(ParamFilter::regex_searches({"fc_layers.*weight", "final_layer.*weight"}));
  EXPECT_EQ(describe(load(R"(
sparsity:
  type: sideband
  sparsity: 0.3
  init_method: "topk" # absolute weight magnitude based sparsity; also the default setting of `init_method`
  param_name_patterns: # only these tensors, multi regex supported
  - "fc_layers.*weight"
  - "final_layer.*weight"
)")),
            std::vector<std::string>{describe(make_spec("static", LevelSchedule::constant(0.3), two))});

  // Per-group levels; init_method defaults to topk.
  EXPECT_EQ(describe(load(R"(
sparsity:
  type: sideband
  param_name_patterns:
    fc_layers.*weight: # per-tensor-group setting
      sparsity: 0.3
    final_layer.*weight:
      sparsity: 0.4
)")),
            (std::vector<std::string>{
                describe(make_spec("static", LevelSchedule::constant(0.3),
                                   sideband_options(ParamFilter::regex_searches({"fc_layers.*weight"})))),
                describe(make_spec("static", LevelSchedule::constant(0.4),
                                   sideband_options(ParamFilter::regex_searches({"final_layer.*weight"})))),
            }));
}

TEST(SparsityConfig, SidebandDictBlocksMergeOverTheTopLevel) {
  // The reference's example (api.md 1.2): each block is {**top, **block}.
  SparsityOptions fc = sideband_options(ParamFilter::regex_searches({"fc_layers.*weight"}));
  fc.init_method = InitMethod::Random;
  fc.seed = 7;
  SparsityOptions final_layer = sideband_options(ParamFilter::regex_searches({"final_layer.*weight"}));
  final_layer.seed = 7;
  EXPECT_EQ(describe(load(R"(
sparsity:                    # sideband, per-group overrides
  type: sideband
  init_method: random
  seed: 7
  param_name_patterns:
    "fc_layers.*weight": {sparsity: 0.5}
    "final_layer.*weight": {sparsity: 0.8, init_method: topk}
)")),
            (std::vector<std::string>{describe(make_spec("static", LevelSchedule::constant(0.5), fc)),
                                      describe(make_spec("static", LevelSchedule::constant(0.8), final_layer))}));

  // A block's setting wins over the top level's; out_groups / in_groups become balance options.
  SparsityOptions balanced = sideband_options(ParamFilter::regex_searches({"fc1"}));
  balanced.balance_out_groups = 4;
  balanced.format = FormatSpec::csr();
  EXPECT_EQ(describe(load(R"(
sparsity:
  type: sideband
  sparsity: 0.5
  out_groups: 2
  format: csr
  param_name_patterns:
    fc1: {sparsity: 0.75, out_groups: 4, dump_masks: false}
)")),
            std::vector<std::string>{describe(make_spec("static", LevelSchedule::constant(0.75), balanced))});
}

TEST(SparsityConfig, SidebandPatternsSearchAndTheFirstMatchingBlockWins) {
  // Unanchored search: "fc" finds fc1.weight, fc1.bias and fc2.*; a bias that matches is
  // sparsified (the patterns replace the default filter). Unmatched parameters stay dense.
  Mlp mlp;
  auto algorithm = load(R"(
sparsity:
  type: sideband
  sparsity: 0.5
  param_name_patterns:
    "fc1": {sparsity: 0.8}
    "fc": {}
)")
                       .build();
  algorithm->apply(mlp);
  EXPECT_EQ(sparse_names(mlp), (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  const auto& members = dynamic_cast<const Group&>(*algorithm).members();
  EXPECT_EQ(names_of(*members[0]), (std::vector<std::string>{"fc1.weight", "fc1.bias"}));
  EXPECT_EQ(mlp.fc1->weight->kept(), 500 - 400);
  EXPECT_EQ(mlp.fc2->weight->kept(), 100);
  EXPECT_FALSE(mlp.head->weight->is_sparse());

  // 2.x globs and 2.1 regexes must match the whole name instead: "fc" claims nothing, which
  // is an error rather than a silently dense run.
  Mlp other;
  EXPECT_NE(error_of([&] {
              load("sparsity: {sparsity: 0.5, param_filter: fc}").build()->apply(other);
            }).find("static: the filter globs(fc) matches no parameter"),
            std::string::npos);
  EXPECT_TRUE(sparse_names(other).empty());
}

struct Ten : Holder {
  Ten() : Holder("Ten") { fc = &add("fc", std::make_unique<Linear>(5, 2)); }
  Linear* fc;
};

TEST(SparsityConfig, SidebandRoundsKeptCountsHalfToEven) {
  // numel 10: s = 0.25 keeps 10 - round(2.5) = 8 (2.x: int(7.5) = 7); s = 0.45 keeps
  // 10 - round(4.5) = 6 (2.x: int(5.5) = 5).
  for (const auto& [level, sideband_kept, v2_kept] : {std::tuple{0.25, 8, 7}, std::tuple{0.45, 6, 5}}) {
    Ten sideband, v2;
    load(fmt::format("sparsity: {{type: sideband, sparsity: {}, param_name_patterns: fc.weight}}", level).c_str())
        .build()
        ->apply(sideband);
    load(fmt::format("sparsity: {{sparsity: {}, param_filter: fc.weight}}", level).c_str()).build()->apply(v2);
    EXPECT_EQ(sideband.fc->weight->kept(), sideband_kept) << level;
    EXPECT_EQ(v2.fc->weight->kept(), v2_kept) << level;
  }
}

// ---- 2.0-2.1 ---------------------------------------------------------------------------------

const char* const kRigl75V21 = R"(
sparsity:
  type: rigl
  sparsity: 0.75
  init_method: random
  drop_fraction:
    type: cosine
    init: 0.3
    half_period: 3584
  schedule:
    freq: 100
    stop: 3584
  param_name_patterns:
    - '.*proj_[qkv]_dense_layer\.weight'
    - '.*proj_output_dense_layer\.weight'
    - '.*linear_layer\.weight'
)";

// Shipped GPT-3 125M RigL75 (api.md 1.4), 2.2-2.3 placement.
const char* const kRigl75 = R"(
train_input:
  batch_size: 256
optimizer:
  optimizer_type: AdamW
  max_steps: 4778
sparsity:
  algorithm: rigl
  sparsity: 0.75
  init_method: random
  drop_fraction:
    type: cosine
    init: 0.3
    half_period: 3584
  update:
    freq: 100
    stop: 3584
  param_filter:
    - "*proj_[qkv]_dense_layer.weight"
    - "*proj_output_dense_layer.weight"
    - "*linear_layer.weight"
)";

const std::vector<std::string> kGptSparse = {
    "layers.0.self_attn.proj_q_dense_layer.weight", "layers.0.self_attn.proj_k_dense_layer.weight",
    "layers.0.self_attn.proj_v_dense_layer.weight", "layers.0.self_attn.proj_output_dense_layer.weight",
    "layers.0.ffn.0.linear_layer.weight",           "layers.0.ffn.1.linear_layer.weight"};

TEST(SparsityConfig, V21FormTakesTheCadenceFromScheduleAndWholeNameRegexes) {
  SparsityOptions o;
  o.filter = ParamFilter::regexes(
      {".*proj_[qkv]_dense_layer\\.weight", ".*proj_output_dense_layer\\.weight", ".*linear_layer\\.weight"});
  const SparsityConfig c = load(kRigl75V21);
  EXPECT_EQ(c.form, ConfigForm::V21);
  EXPECT_EQ(describe(c), std::vector<std::string>{describe(make_spec("rigl", LevelSchedule::constant(0.75), o,
                                                                     UpdateSchedule::every(100, 0, 3584),
                                                                     LevelSchedule::cosine(0.3, 3584)))});
  Gpt gpt;
  c.build()->apply(gpt);
  EXPECT_EQ(sparse_names(gpt), kGptSparse);

  // Static 2.1 with a single regex string and no cadence.
  SparsityOptions s;
  s.filter = ParamFilter::regexes({"fc.\\.weight"});
  EXPECT_EQ(describe(load("sparsity: {type: static, sparsity: 0.5, param_name_patterns: 'fc.\\.weight'}")),
            std::vector<std::string>{describe(make_spec("static", LevelSchedule::constant(0.5), s))});
}

// ---- 2.2+ --------------------------------------------------------------------------------------

TEST(SparsityConfig, V22GroupsSelectByWholeNameRegexesToo) {
  const SparsityConfig c = load(R"(
sparsity:
  - algorithm: rigl
    sparsity: 0.9
    update: {freq: 100}
    param_name_patterns: '.*proj_[qkv]_dense_layer\.weight'
  - algorithm: static
    sparsity: 0.5
    param_name_patterns: ['.*linear_layer\.weight', 'layers\.0\.self_attn\.proj_output_dense_layer\.weight']
)");
  ASSERT_EQ(c.form, ConfigForm::V22);
  SparsityOptions first, second;
  first.filter = ParamFilter::regexes({".*proj_[qkv]_dense_layer\\.weight"});
  second.filter =
      ParamFilter::regexes({".*linear_layer\\.weight", "layers\\.0\\.self_attn\\.proj_output_dense_layer\\.weight"});
  EXPECT_EQ(describe(c),
            (std::vector<std::string>{
                describe(make_spec("rigl", LevelSchedule::constant(0.9), first, UpdateSchedule::every(100))),
                describe(make_spec("static", LevelSchedule::constant(0.5), second))}));
  Gpt gpt;
  c.build()->apply(gpt);
  EXPECT_EQ(sparse_names(gpt), kGptSparse);
  // Whole-name matches, as in 2.0-2.1: 'proj_q' alone finds nothing.
  Gpt unmatched;
  EXPECT_EQ(error_of([&] {
              load("sparsity: {sparsity: 0.5, param_name_patterns: proj_q}").build()->apply(unmatched);
            }).rfind("static: the filter regexes(proj_q) matches no parameter that can be sparsified", 0),
            0u);
  // A bad regex is reported where it is written.
  EXPECT_EQ(load_error("sparsity: {sparsity: 0.5, param_name_patterns: ['fc(']}"),
            "cfg.yaml:1:49: sparsity.param_name_patterns[0]: parameter filter 'fc(': bad regular expression at offset "
            "3: missing closing parenthesis");
}

TEST(SparsityConfig, ShippedGpt3ConfigsMatchTheirCpp) {
  SparsityOptions o;
  o.filter =
      ParamFilter::globs({"*proj_[qkv]_dense_layer.weight", "*proj_output_dense_layer.weight", "*linear_layer.weight"});
  const AlgorithmSpec rigl = make_spec("rigl", LevelSchedule::constant(0.75), o, UpdateSchedule::every(100, 0, 3584),
                                       LevelSchedule::cosine(0.3, 3584));
  const SparsityConfig c = load(kRigl75);
  EXPECT_EQ(c.form, ConfigForm::V22);
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_EQ(describe(c), std::vector<std::string>{describe(rigl)});

  // 2.4+ placement under trainer.init: the same spec.
  EXPECT_EQ(describe(load(R"(
trainer:
  init:
    model_dir: model_dir
    sparsity:
      algorithm: rigl
      sparsity: 0.75
      init_method: random
      drop_fraction: {type: cosine, init: 0.3, half_period: 3584}
      update: {freq: 100, stop: 3584}
      param_filter: ["*proj_[qkv]_dense_layer.weight", "*proj_output_dense_layer.weight", "*linear_layer.weight"]
  fit:
    train_dataloader: {batch_size: 256}
)")),
            std::vector<std::string>{describe(rigl)});

  // SET75: the same with set; Static75: no update or drop_fraction; VSPDF 6.7B: static 0.9.
  AlgorithmSpec set = rigl;
  set.algorithm = "set";
  EXPECT_EQ(describe(load(R"(
sparsity:
  algorithm: set
  sparsity: 0.75
  init_method: random
  drop_fraction: {type: cosine, init: 0.3, half_period: 3584}
  update: {freq: 100, stop: 3584}
  param_filter: ["*proj_[qkv]_dense_layer.weight", "*proj_output_dense_layer.weight", "*linear_layer.weight"]
)")),
            std::vector<std::string>{describe(set)});
  EXPECT_EQ(describe(load(R"(
sparsity:
  algorithm: static
  sparsity: 0.75
  init_method: random
  param_filter: ["*proj_[qkv]_dense_layer.weight", "*proj_output_dense_layer.weight", "*linear_layer.weight"]
)")),
            std::vector<std::string>{describe(make_spec("static", LevelSchedule::constant(0.75), o))});
  EXPECT_EQ(describe(load("sparsity: {sparsity: 0.9}")),
            std::vector<std::string>{describe(make_spec("static", LevelSchedule::constant(0.9)))});

  // Applied: RigL75 claims the projections and FFN weights, as the 2.1 regexes do.
  Gpt gpt;
  const auto algorithm = c.build();
  EXPECT_EQ(algorithm->name(), "rigl");
  EXPECT_EQ(algorithm->leaf_algorithms(), std::vector<const SparsityAlgorithm*>{algorithm.get()});
  EXPECT_EQ(algorithm->apply(gpt), 6);
  EXPECT_EQ(sparse_names(gpt), kGptSparse);
  EXPECT_EQ(gpt.parameter("layers.0.ffn.0.linear_layer.weight").kept(), kept_units(0.75, 128));
  const auto& dynamic = dynamic_cast<const RigL&>(*algorithm);
  EXPECT_TRUE(dynamic.update_schedule().fires(3500));
  EXPECT_FALSE(dynamic.update_schedule().fires(3584));
}

TEST(SparsityConfig, TrainerListExampleBuildsAGroupThatClaimsByFirstMatch) {
  // api.md 1.4's example, on fc1 / fc2 / head.
  const SparsityConfig c = load(R"(
trainer:                      # 2.4+ placement; 2.2-2.3 put `sparsity:` at top level
  init:
    sparsity:
      - algorithm: rigl
        sparsity: 0.9
        update: {freq: 100, stop: 7500}
        drop_fraction: {type: cosine, init: 0.3, half_period: 7500}
        param_filter: ["fc1.weight", "fc2.weight"]
      - algorithm: gmp
        sparsity: [0.5, 0.7, 0.8]          # cycling: one value per update
        update: {steps: [0, 1000, 2000]}
        param_filter: "head.*"
)");
  SparsityOptions rigl_options, gmp_options;
  rigl_options.filter = ParamFilter::globs({"fc1.weight", "fc2.weight"});
  gmp_options.filter = ParamFilter::globs({"head.*"});
  EXPECT_EQ(describe(c), (std::vector<std::string>{
                             describe(make_spec("rigl", LevelSchedule::constant(0.9), rigl_options,
                                                UpdateSchedule::every(100, 0, 7500), LevelSchedule::cosine(0.3, 7500))),
                             describe(make_spec("gmp", LevelSchedule::cycling({0.5, 0.7, 0.8}), gmp_options,
                                                UpdateSchedule::steps({0, 1000, 2000}))),
                         }));
  Mlp mlp;
  const auto algorithm = c.build();
  const auto& group = dynamic_cast<const Group&>(*algorithm);
  ASSERT_EQ(group.members().size(), 2u);
  EXPECT_EQ(algorithm->leaf_algorithms(),
            (std::vector<const SparsityAlgorithm*>{group.members()[0].get(), group.members()[1].get()}));
  EXPECT_EQ(algorithm->apply(mlp), 4);
  EXPECT_EQ(names_of(*group.members()[0]), (std::vector<std::string>{"fc1.weight", "fc2.weight"}));
  EXPECT_EQ(names_of(*group.members()[1]), (std::vector<std::string>{"head.weight", "head.bias"}));
  EXPECT_EQ(group.members()[0]->name(), "rigl");
  EXPECT_EQ(group.members()[1]->name(), "gmp");
  EXPECT_EQ(mlp.fc1->weight->kept(), kept_units(0.9, 500));
  EXPECT_EQ(mlp.head->weight->kept(), kept_units(0.5, 40));
  EXPECT_FALSE(mlp.fc1->bias->is_sparse());
}

TEST(SparsityConfig, SeedGroupExampleAndGroupsFormAreTheSameList) {
  // seed 001: Group({"fc1.*": Static(0.3), "fc2.*": SET(0.9, update={"freq": 1000}, drop_fraction=0.3)}).
  SparsityOptions fc1, fc2;
  fc1.filter = ParamFilter::globs({"fc1.*"});
  fc2.filter = ParamFilter::globs({"fc2.*"});
  const std::vector<std::string> expected = {
      describe(make_spec("static", LevelSchedule::constant(0.3), fc1)),
      describe(make_spec("set", LevelSchedule::constant(0.9), fc2, UpdateSchedule::every(1000),
                         LevelSchedule::constant(0.3)))};
  EXPECT_EQ(describe(load(R"(
sparsity:
  - param_filter: "fc1.*"
    sparsity: 0.3
  - algorithm: set
    param_filter: "fc2.*"
    sparsity: 0.9
    update: {freq: 1000}
    drop_fraction: 0.3
)")),
            expected);
  // {groups: [...]} with the keys under `params:` (Model Zoo config classes) flattens to the same.
  const SparsityConfig groups = load(R"(
sparsity:
  groups:
    - params: {param_filter: "fc1.*", sparsity: 0.3}
    - algorithm: set
      params:
        param_filter: "fc2.*"
        sparsity: 0.9
        update: {freq: 1000}
        drop_fraction: 0.3
)");
  EXPECT_EQ(describe(groups), expected);

  Mlp mlp;
  groups.build()->apply(mlp);
  EXPECT_EQ(sparse_names(mlp), (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
}

TEST(SparsityConfig, LevelSchedulesAndUpdatesMatchTheirFactories) {
  struct Case {
    const char* yaml;
    LevelSchedule expected;
  };
  const Case cases[] = {
      {"0.5", LevelSchedule::constant(0.5)},
      {"0", LevelSchedule::constant(0.0)},
      {"[0.5, 0.7, 0.8]", LevelSchedule::cycling({0.5, 0.7, 0.8})},
      {"{type: constant, value: 0.25}", LevelSchedule::constant(0.25)},
      {"{type: linear, init: 0.1, slope: 1e-4}", LevelSchedule::linear(0.1, 1e-4)},
      {"{type: exp, init: 0.2, gamma: -0.01}", LevelSchedule::exp(0.2, -0.01)},
      {"{type: exp, init: 0.2, gamma: -0.01, final: 0.9}", LevelSchedule::exp(0.2, -0.01, 0.9)},
      {"{type: power, init: 0.5, beta: 0.999}", LevelSchedule::power(0.5, 0.999)},
      {"{type: cosine, init: 0.3, half_period: 7500}", LevelSchedule::cosine(0.3, 7500)},
      {"{type: cosine, init: 0.3, half_period: 10.5, minimum: 0.1}", LevelSchedule::cosine(0.3, 10.5, 0.1)},
      {"{type: cycling, values: [0.1, 0.2]}", LevelSchedule::cycling({0.1, 0.2})},
      {"{type: polynomial, init: 0, final: 0.9, begin: 100, end: 1000}",
       LevelSchedule::polynomial(0.0, 0.9, 100, 1000)},
      {"{type: polynomial, init: 0, final: 0.9, begin: 0, end: 1000, power: 2}",
       LevelSchedule::polynomial(0.0, 0.9, 0, 1000, 2.0)},
      {"{type: graphcore_cosine, init: 0.5, total_steps: 1600}", LevelSchedule::graphcore_cosine(0.5, 1600)},
      {"{type: graphcore_cosine, init: 0.5, total_steps: 1600, zero_steps: 100, phase_delay: 0.1, period: 1}",
       LevelSchedule::graphcore_cosine(0.5, 1600, 100, 0.1, 1.0)},
  };
  for (const Case& c : cases) {
    // As a SET level and drop fraction; `schedule` is the level's alias.
    const std::string yaml =
        fmt::format("sparsity: {{algorithm: set, schedule: {0}, drop_fraction: {0}, update: {{freq: 1}}}}", c.yaml);
    const SparsityConfig config = load(yaml.c_str());
    ASSERT_EQ(config.groups.size(), 1u) << c.yaml;
    EXPECT_EQ(config.groups[0].sparsity.describe(), c.expected.describe()) << c.yaml;
    EXPECT_EQ(config.groups[0].drop_fraction->describe(), c.expected.describe()) << c.yaml;
  }
  const std::pair<const char*, UpdateSchedule> updates[] = {
      {"{freq: 100}", UpdateSchedule::every(100)},
      {"{freq: 100, start: 50}", UpdateSchedule::every(100, 50)},
      {"{freq: 100, start: 50, stop: 1000}", UpdateSchedule::every(100, 50, 1000)},
      {"{steps: [2000, 0, 1000]}", UpdateSchedule::steps({0, 1000, 2000})},
  };
  for (const auto& [yaml, expected] : updates) {
    const std::string config = fmt::format("sparsity: {{algorithm: rigl, sparsity: 0.9, update: {}}}", yaml);
    EXPECT_EQ(load(config.c_str()).groups[0].update->describe(), expected.describe()) << yaml;
  }
}

TEST(SparsityConfig, SparsetrainAdditionsAndBalanceKeys) {
  SparsityOptions o;
  o.filter = ParamFilter::globs({"fc*.weight"});
  o.init_method = InitMethod::Checkerboard;
  o.seed = 42;
  o.distribution = Distribution::ERK;
  o.overrides = {{"fc1.weight", 0.5}, {"fc2.weight", 0.0}};
  o.format = FormatSpec::csr();
  o.balance_in_groups = 5;
  EXPECT_EQ(describe(load(R"(
sparsity:
  algorithm: rigl
  sparsity: 0.9
  update: {freq: 10}
  init_method: checkerboard
  param_filter: "fc*.weight"
  seed: 42
  distribution: erk
  overrides: {fc1.weight: 0.5, "fc2.weight": 0}
  format: csr
  balance_in_groups: 5
)")),
            std::vector<std::string>{
                describe(make_spec("rigl", LevelSchedule::constant(0.9), o, UpdateSchedule::every(10)))});
  for (const auto& [format, level] : std::vector<std::pair<const char*, double>>{
           {"csr", 0.5}, {"bcsr4", 0.5}, {"bcsr16", 0.5}, {"2:4", 0.5}, {"1:8", 0.875}}) {
    const std::string yaml = fmt::format("sparsity: {{sparsity: {}, format: \"{}\"}}", level, format);
    EXPECT_EQ(load(yaml.c_str()).groups[0].options.format->name(), format);
  }
  EXPECT_EQ(load("sparsity: {sparsity: 0.5, balance_out_groups: 4}").groups[0].options.balance_out_groups, 4);
  // Balanced selection cuts elements: a block or N:M format is refused at the balance key.
  EXPECT_EQ(load_error("sparsity: {sparsity: 0.5, format: bcsr8, balance_out_groups: 4}"),
            "cfg.yaml:1:42: sparsity.balance_out_groups: 'balance_out_groups' needs element-wise masks, but format "
            "'bcsr8' keeps whole 8x8 blocks; use format csr (or auto), or drop 'balance_out_groups'");
  EXPECT_EQ(load_error(R"(sparsity: {type: sideband, sparsity: 0.5, format: "2:4", in_groups: 2})"),
            "cfg.yaml:1:58: sparsity.in_groups: 'in_groups' needs element-wise masks, but format '2:4' keeps 2 of "
            "every 4 weights; use format csr (or auto), or drop 'in_groups'");
  const SparsityOptions automatic = load("sparsity: {sparsity: 0.5, format: auto}").groups[0].options;
  EXPECT_TRUE(automatic.auto_format);
  EXPECT_FALSE(automatic.format);
  const SparsityOptions masked = load("sparsity: {sparsity: 0.5, format: masked-dense}").groups[0].options;
  EXPECT_FALSE(masked.auto_format);
  EXPECT_FALSE(masked.format);
}

TEST(SparsityConfigErrors, AnNmFormatFixesTheLevelSoTheSparsityMustAskForIt) {
  const std::string fixed_2_4 = "format '2:4' keeps 2 of every 4 weights, a fixed level of 0.5, but the sparsity ";
  const std::string fixed_1_4 = "format '1:4' keeps 1 of every 4 weights, a fixed level of 0.75, but the sparsity ";
  const std::string other = "or a format whose level follows the sparsity (csr, bcsr4, bcsr8, bcsr16 or auto)";
  EXPECT_EQ(load_error(R"(sparsity: {sparsity: 0.9, format: "2:4"})"),
            "cfg.yaml:1:35: sparsity.format: " + fixed_2_4 + "is 0.9; give sparsity 0.5, " + other);
  EXPECT_EQ(load_error("sparsity: {algorithm: gmp, sparsity: {type: polynomial, init: 0.0, final: 0.8, begin: 0, end: "
                       "100}, update: {freq: 10}, format: \"1:4\"}"),
            "cfg.yaml:1:129: sparsity.format: " + fixed_1_4 +
                "changes with the step (polynomial(init=0, final=0.8, begin=0, end=100, power=3)); give sparsity "
                "0.75, " +
                other);
  EXPECT_EQ(load_error(R"(sparsity: {sparsity: 0.75, distribution: erk, format: "1:4"})"),
            "cfg.yaml:1:55: sparsity.format: " + fixed_1_4 +
                "is spread by distribution erk into a level per parameter; give sparsity 0.75, " + other);
  EXPECT_EQ(load_error(R"(sparsity: {sparsity: 0.5, format: "2:4", overrides: {fc1.weight: 0.3}})"),
            "cfg.yaml:1:35: sparsity.format: " + fixed_2_4 +
                "is overridden to 0.3 for 'fc1.weight'; give sparsity 0.5, " + other);
  EXPECT_EQ(load_error(R"(sparsity: {type: sideband, sparsity: 0.9, format: "2:4"})"),
            "cfg.yaml:1:51: sparsity.format: " + fixed_2_4 + "is 0.9; give sparsity 0.5, " + other);
  SparsityOptions o;
  o.format = FormatSpec::nm(2, 4);
  EXPECT_EQ(error_of([&] { make_algorithm(make_spec("static", LevelSchedule::constant(0.9), o)); }),
            fixed_2_4 + "is 0.9; give sparsity 0.5, " + other);
  // The format's own level, and every format whose level follows the sparsity, are fine.
  EXPECT_EQ(load(R"(sparsity: {sparsity: 0.5, format: "2:4"})").groups.size(), 1u);
  EXPECT_EQ(load(R"(sparsity: {sparsity: 0.9, distribution: erk, format: bcsr4})").groups.size(), 1u);
}

TEST(SparsityConfig, TypeIsADeprecatedAliasOfAlgorithm) {
  const SparsityConfig c = load(R"(
sparsity:
  type: SET
  sparsity: 0.8
  update: {freq: 10}
)");
  EXPECT_EQ(c.form, ConfigForm::V22);
  EXPECT_EQ(describe(c), std::vector<std::string>{
                             describe(make_spec("set", LevelSchedule::constant(0.8), {}, UpdateSchedule::every(10)))});
  EXPECT_EQ(c.warnings, std::vector<std::string>{"cfg.yaml:2:3: sparsity.type: 'type' is deprecated; use 'algorithm'"});
}

TEST(SparsityConfig, EmptySectionsConfigureNothing) {
  for (const char* yaml :
       {"model: {}", "sparsity:", "sparsity: null", "sparsity: []", "sparsity: {sparsity: null}", "", "# nothing\n"}) {
    const SparsityConfig c = load(yaml);
    EXPECT_TRUE(c.groups.empty()) << yaml;
    Mlp mlp;
    const auto algorithm = c.build();
    EXPECT_EQ(algorithm->apply(mlp), 0) << yaml;
  }
  EXPECT_EQ(load("model: {}").form, ConfigForm::None);
  // Switched off, the other keys are still checked, though not against the algorithm's rules.
  const SparsityConfig off = load("sparsity: {algorithm: rigl, sparsity: null, param_filter: fc1.*}");
  EXPECT_TRUE(off.groups.empty());
  EXPECT_EQ(off.warnings,
            std::vector<std::string>{"cfg.yaml:1:29: sparsity.sparsity: null: this section configures no sparsity"});
  EXPECT_EQ(load_error("sparsity: {algorithm: rigl, sparsity: null, update: {freq: 0}}"),
            "cfg.yaml:1:60: sparsity.update.freq: expected an integer >= 1, got 0");
  EXPECT_EQ(config_form_name(load("sparsity: 0.5").form), std::string("2.2+"));
}

TEST(SparsityConfig, LoadsNodesAndFiles) {
  // The section node itself, with the caller's file name and key path.
  const YAML::Node node = YAML::Load("{algorithm: set, sparsity: 0.8, update: {freq: 5}}");
  const SparsityConfig c = load_sparsity(node, "inline", "run.sparsity");
  EXPECT_EQ(describe(c), std::vector<std::string>{
                             describe(make_spec("set", LevelSchedule::constant(0.8), {}, UpdateSchedule::every(5)))});
  EXPECT_EQ(error_of([] { load_sparsity(YAML::Load("{algorithm: set, sparsity: 0.8}"), "inline", "run.sparsity"); }),
            "inline:1:1: run.sparsity: missing 'update': set needs an update schedule ({freq, start, stop} or {steps: "
            "[...]})");

  YAML::Node document = YAML::Load("model: {}");
  EXPECT_TRUE(load_sparsity(document["sparsity"], "inline").groups.empty()) << "an absent section configures nothing";

  const std::filesystem::path path = std::filesystem::temp_directory_path() / "sparsetrain_test_config.yaml";
  {
    std::ofstream out(path);
    out << text(kRigl75);
  }
  EXPECT_EQ(describe(load_sparsity_file(path.string())), describe(load(kRigl75)));
  {
    std::ofstream out(path);
    out << "sparsity:\n  sparsity: 2\n";
  }
  EXPECT_EQ(
      error_of([&] { load_sparsity_file(path.string()); }),
      path.string() + ":2:13: sparsity.sparsity: expected a number in [0, 1) (static keeps one fixed level), got 2");
  std::filesystem::remove(path);
  EXPECT_EQ(error_of([] { load_sparsity_file("/nonexistent/cfg.yaml"); }),
            "/nonexistent/cfg.yaml: cannot open: No such file or directory");
  const std::string dir = std::filesystem::temp_directory_path().string();
  EXPECT_EQ(error_of([&] { load_sparsity_file(dir); }), dir + ": is a directory; expected a file");
}

// ---- user algorithms -------------------------------------------------------------------------

TEST(SparsityConfig, UserAlgorithmsAreSelectableByName) {
  register_shift();
  const SparsityConfig c = load(R"(
sparsity:
  - algorithm: Shift
    sparsity: 0.5
    update: {freq: 10}
    shift: 2
    note: [a, {b: 1}]
    param_filter: fc2.weight
    init_method: checkerboard
  - algorithm: static
    sparsity: 0.5
    param_filter: fc1.weight
)");
  SparsityOptions o;
  o.filter = ParamFilter::globs({"fc2.weight"});
  o.init_method = InitMethod::Checkerboard;
  AlgorithmSpec expected = make_spec("shift", LevelSchedule::constant(0.5), o, UpdateSchedule::every(10));
  expected.extra = {{"shift", "2"}, {"note", "[a, {b: 1}]"}};
  EXPECT_EQ(describe(c.groups[0]), describe(expected));

  Mlp mlp;
  const auto algorithm = c.build();
  algorithm->apply(mlp);
  const auto& shift = dynamic_cast<const Shift&>(*dynamic_cast<const Group&>(*algorithm).members()[0]);
  EXPECT_EQ(shift.shift(), 2);
  const Mask before = mlp.fc2->weight->mask();
  EXPECT_EQ(before.nnz(), 100);
  algorithm->update(10);
  const Mask after = mlp.fc2->weight->mask();
  for (int64_t r = 0; r < 10; ++r)
    for (int64_t c2 = 0; c2 < 20; ++c2) EXPECT_EQ(after.at(r, (c2 + 2) % 20), before.at(r, c2));
  EXPECT_TRUE(mlp.fc1->weight->is_sparse());

  // Its key rules and constructor checks apply at load time, located.
  EXPECT_EQ(load_error("sparsity: {algorithm: shift, sparsity: 0.5}"),
            "cfg.yaml:1:11: sparsity: missing 'update': shift needs an update schedule ({freq, start, stop} or "
            "{steps: [...]})");
  EXPECT_EQ(load_error("sparsity: {algorithm: shift, sparsity: 0.5, update: {freq: 1}, shift: -1}"),
            "cfg.yaml:1:11: sparsity: shift: 'shift' must be >= 0, got -1");
  EXPECT_EQ(load_error("sparsity: {algorithm: rigl, sparsity: 0.5, update: {freq: 1}, shift: 1}"),
            "cfg.yaml:1:63: sparsity.shift: rigl takes no 'shift'; it is a key of shift");
  EXPECT_EQ(load_error("sparsity: {algorithm: static, sparsity: 0.5, drop_by_sign: true}"),
            "cfg.yaml:1:46: sparsity.drop_by_sign: static takes no 'drop_by_sign'; it is a key of rigl and set");
  EXPECT_EQ(load_error("sparsity: {algorithm: rigl, sparsity: 0.5, update: {freq: 1}, shfit: 1}"),
            "cfg.yaml:1:63: sparsity.shfit: unknown key; a 2.2+ group takes algorithm, type, sparsity, schedule, "
            "update, drop_fraction, init_method, param_filter, param_name_patterns, balance_in_groups, "
            "balance_out_groups, format, "
            "distribution, seed, overrides, grow_init_std or drop_by_sign");
}

// SET's and RigL's extra keys are checked by their setters at load time, located.
TEST(SparsityConfig, DropAndGrowExtraKeysAreChecked) {
  EXPECT_EQ(load_error("sparsity: {algorithm: set, sparsity: 0.5, update: {freq: 1}, drop_by_sign: maybe}"),
            "cfg.yaml:1:11: sparsity: set: 'drop_by_sign' must be true or false, got 'maybe'");
  EXPECT_EQ(load_error("sparsity: {algorithm: rigl, sparsity: 0.5, update: {freq: 1}, format: bcsr4, "
                       "drop_by_sign: true}"),
            "cfg.yaml:1:11: sparsity: rigl: 'drop_by_sign' needs unstructured sparsity; format bcsr4 keeps blocks or "
            "groups, which have no sign");
  EXPECT_NE(describe(load("sparsity: {algorithm: set, sparsity: 0.5, update: {freq: 1}, drop_by_sign: true}"))
                .front()
                .find(" drop_by_sign=true"),
            std::string::npos);
}

TEST(SparsityConfig, RegistryRules) {
  register_shift();
  EXPECT_EQ(registered_algorithms(), (std::vector<std::string>{"gmp", "regrow", "rigl", "set", "shift", "static"}));
  auto factory = [](const AlgorithmSpec& s) { return std::make_unique<Static>(0.5, s.options); };
  EXPECT_EQ(error_of([&] { register_algorithm("rigl", factory); }), "register_algorithm: 'rigl' is already registered");
  EXPECT_EQ(error_of([&] { register_algorithm("My-Algo", factory); }),
            "register_algorithm: name 'My-Algo' must be lower-case letters, digits and '_', starting with a letter");
  EXPECT_EQ(error_of([&] { register_algorithm("group", factory); }),
            "register_algorithm: 'group' is reserved (groups do not nest)");
  EXPECT_EQ(error_of([&] { register_algorithm("nothing", nullptr); }), "register_algorithm: 'nothing' has no factory");
  AlgorithmKeys keys;
  keys.extra = {"update"};
  EXPECT_EQ(error_of([&] { register_algorithm("clash", factory, keys); }),
            "register_algorithm: 'clash' declares extra key 'update', which every algorithm already has");
  EXPECT_EQ(registered_algorithms().size(), 6u) << "failed registrations leave nothing behind";

  // make_algorithm checks a hand-built spec the same way.
  EXPECT_EQ(error_of([] { make_algorithm(make_spec("rigel", LevelSchedule::constant(0.5))); }),
            "unknown algorithm 'rigel'; registered: gmp, regrow, rigl, set, shift, static");
  EXPECT_EQ(
      error_of([] { make_algorithm(make_spec("static", LevelSchedule::constant(0.5), {}, UpdateSchedule::every(1))); }),
      "static takes no update schedule: its masks never change");
  EXPECT_EQ(error_of([] { make_algorithm(make_spec("static", LevelSchedule::linear(0.1, 0.01))); }),
            "expected a number in [0, 1) (static keeps one fixed level), got linear(init=0.1, slope=0.01)");
  EXPECT_EQ(
      error_of([] { make_algorithm(make_spec("gmp", LevelSchedule::constant(0.5), {}, UpdateSchedule::every(1))); }),
      "expected a schedule that changes with the step (gmp never prunes at a constant level), got constant(0.5)");
  EXPECT_EQ(error_of([] {
              make_algorithm(make_spec("gmp", LevelSchedule::linear(0.1, 0.01), {}, UpdateSchedule::every(1),
                                       LevelSchedule::constant(0.3)));
            }),
            "gmp takes no drop_fraction: it does not regrow connections");
  EXPECT_EQ(error_of([] { make_algorithm(make_spec("set", LevelSchedule::constant(0.5))); }),
            "missing 'update': set needs an update schedule ({freq, start, stop} or {steps: [...]})");
  AlgorithmSpec extra = make_spec("static", LevelSchedule::constant(0.5));
  extra.extra["shift"] = "1";
  EXPECT_EQ(error_of([&] { make_algorithm(extra); }), "static: unknown extra key 'shift' (it takes none)");
  SparsityOptions both;
  both.balance_out_groups = 2;
  both.balance_in_groups = 2;
  EXPECT_EQ(error_of([&] { make_algorithm(make_spec("static", LevelSchedule::constant(0.5), both)); }),
            "sparsity options: balance_out_groups (2) and balance_in_groups (2) are exclusive");
  SparsityOptions zero;
  zero.balance_in_groups = 0;
  EXPECT_EQ(error_of([&] { Static(0.5, zero); }), "sparsity options: balance_in_groups must be > 0, got 0");
  // Built-ins build to their classes; set and rigl default drop_fraction to 0.3.
  const auto set = make_algorithm(make_spec("set", LevelSchedule::constant(0.5), {}, UpdateSchedule::every(1)));
  EXPECT_EQ(dynamic_cast<const SET&>(*set).drop_fraction().describe(), "constant(0.3)");
  // effective_drop_fraction says the same without building anything, and nothing where the
  // algorithm takes none or (a user algorithm) its factory would decide.
  const auto drop_of = [](const AlgorithmSpec& spec) {
    const auto drop = effective_drop_fraction(spec);
    return drop ? drop->describe() : std::string("none");
  };
  EXPECT_EQ(drop_of(make_spec("rigl", LevelSchedule::constant(0.5))), "constant(0.3)");
  EXPECT_EQ(drop_of(make_spec("set", LevelSchedule::constant(0.5), {}, UpdateSchedule::every(1),
                              LevelSchedule::cosine(0.5, 100))),
            "cosine(init=0.5, half_period=100, minimum=0)");
  EXPECT_EQ(drop_of(make_spec("gmp", LevelSchedule::linear(0.1, 0.01))), "none");
  EXPECT_EQ(drop_of(make_spec("regrow", LevelSchedule::constant(0.5))), "none");
}

// ---- errors ------------------------------------------------------------------------------------

TEST(SparsityConfigErrors, KeysAreCheckedExactly) {
  EXPECT_EQ(load_error(R"(
sparsity:
  algorithm: rigl
  sparsty: 0.9
)"),
            "cfg.yaml:3:3: sparsity.sparsty: unknown key; a 2.2+ group takes algorithm, type, sparsity, schedule, "
            "update, drop_fraction, init_method, param_filter, param_name_patterns, balance_in_groups, "
            "balance_out_groups, format, "
            "distribution, seed, overrides, grow_init_std or drop_by_sign (did you mean 'sparsity'?)");
  EXPECT_EQ(load_error(R"(
sparsity:
  algorithm: rigl
  sparsity: 0.9
  update: {freq: 100}
  sparsity: 0.8
)"),
            "cfg.yaml:5:3: sparsity.sparsity: duplicate key (first at line 3, column 3)");
  EXPECT_EQ(load_error("sparsity: {algorithm: set, sparsity: 0.9, update: {freq: 1, freq: 2}}"),
            "cfg.yaml:1:61: sparsity.update.freq: duplicate key (first at line 1, column 52)");
  EXPECT_EQ(load_error("sparsity: 0.5\nsparsity: 0.6\n"),
            "cfg.yaml:2:1: sparsity: duplicate key (first at line 1, column 1)");
  EXPECT_EQ(load_error("sparsity:\n  sparsity: 0.5\n  ? [a]\n  : 1\n"),
            "cfg.yaml:3:5: sparsity: expected a key name, got a list");
  EXPECT_EQ(load_error(R"(
sparsity:
  sparsity: 0.5
  schedule: 0.6
)"),
            "cfg.yaml:3:3: sparsity.schedule: 'schedule' is an alias of 'sparsity'; give only one");
  EXPECT_EQ(load_error(R"(
sparsity:
  algorithm: static
  init_method: topk
)"),
            "cfg.yaml:2:3: sparsity: missing 'sparsity' (or its alias 'schedule')");
  EXPECT_EQ(load_error(R"(
sparsity:
  algorithm: rigl
  type: rigl
)"),
            "cfg.yaml:3:3: sparsity.type: 'type' is a deprecated alias of 'algorithm'; give only one");
  EXPECT_EQ(load_error(R"(
sparsity:
  algorithm: rigel
  sparsity: 0.9
)"),
            "cfg.yaml:2:14: sparsity.algorithm: unknown algorithm 'rigel'; registered: gmp, regrow, rigl, set, shift, "
            "static (did you mean 'rigl'?)");
  EXPECT_EQ(load_error("sparsity: {sparsity: 0.5, param_filter: fc1.weight, param_name_patterns: [fc1]}"),
            "cfg.yaml:1:53: sparsity.param_name_patterns: 'param_filter' and 'param_name_patterns' both select the "
            "group's parameters (globs and regexes); give one");
  EXPECT_EQ(load_error("sparsity: {sparsity: 0.5, out_groups: 2}"),
            "cfg.yaml:1:27: sparsity.out_groups: unknown key in a 2.2+ group: 'out_groups' is the sideband name; 2.2+ "
            "calls it 'balance_out_groups'");
  EXPECT_EQ(load_error(R"(
sparsity:
  type: rigl
  sparsity: 0.9
  schedule: {freq: 100}
  update: {freq: 100}
)"),
            "cfg.yaml:5:3: sparsity.update: 'update' is a 2.2+ key, but this section reads as the 2.0-2.1 form ('type' "
            "without 'algorithm', with 'param_name_patterns' or a 'schedule: {freq, ...}' update cadence); write it in "
            "one form");
  EXPECT_EQ(
      load_error("sparsity: {groups: [{sparsity: 0.5}], sparsity: 0.5}"),
      "cfg.yaml:1:39: sparsity.sparsity: unknown key next to 'groups': a {groups: [...]} section has no other key");
  EXPECT_EQ(load_error(R"(
sparsity:
  groups:
    - params: {sparsity: 0.5}
      sparsity: 0.6
)"),
            "cfg.yaml:3:16: sparsity.groups[0].params.sparsity: 'sparsity' is given both in the group (line 4) and in "
            "its 'params'");
  EXPECT_EQ(load_error("base: &base {sparsity: 0.5}\nsparsity:\n  <<: *base\n  init_method: topk\n"),
            "cfg.yaml:3:3: sparsity[\"<<\"]: YAML merge keys ('<<') are not supported; write the keys out");
  EXPECT_EQ(load_error("sparsity: [{sparsity: 0.5, params: {seed: 1}}]"),
            "cfg.yaml:1:28: sparsity[0].params: unknown key: 'params' is only flattened in the items of 'groups:'");
}

TEST(SparsityConfigErrors, TypesAndRangesAreChecked) {
  // The brief's example.
  EXPECT_EQ(load_error(R"(
sparsity:
  - algorithm: static
    sparsity: 0.5
    param_filter: "fc1.*"
  - algorithm: rigl
    sparsity: 0.9
    update:
      freq: ten
)"),
            "cfg.yaml:8:13: sparsity[1].update.freq: expected an integer >= 1, got 'ten'");
  EXPECT_EQ(load_error("sparsity: {algorithm: rigl, sparsity: 0.9, update: {freq: 100.0}}"),
            "cfg.yaml:1:59: sparsity.update.freq: expected an integer >= 1, got 100.0");
  EXPECT_EQ(load_error("sparsity: {type: sideband, sparsity: 0}"),
            "cfg.yaml:1:38: sparsity.sparsity: expected a float in [0, 1) (the sideband form takes no integers: "
            "write 0.0, not 0), got 0");
  EXPECT_EQ(load_error("sparsity: {sparsity: \"0.5\"}"),
            "cfg.yaml:1:22: sparsity.sparsity: expected a number in [0, 1) (static keeps one fixed level), got the "
            "quoted string \"0.5\"");
  EXPECT_EQ(load_error("sparsity: {algorithm: set, sparsity: 1.5, update: {freq: 10}}"),
            "cfg.yaml:1:38: sparsity.sparsity: expected a number in [0, 1], got 1.5");
  EXPECT_EQ(load_error("sparsity: {algorithm: set, sparsity: high, update: {freq: 10}}"),
            "cfg.yaml:1:38: sparsity.sparsity: expected a level: a number in [0, 1], a list of numbers (cycling) or a "
            "schedule mapping with 'type', got 'high'");
  EXPECT_EQ(load_error("sparsity: {algorithm: set, sparsity: [0.5, .nan], update: {freq: 10}}"),
            "cfg.yaml:1:44: sparsity.sparsity[1]: expected a number in [0, 1], got .nan");
  EXPECT_EQ(load_error("sparsity: {algorithm: set, sparsity: [], update: {freq: 10}}"),
            "cfg.yaml:1:38: sparsity.sparsity: expected at least one level, got an empty list");
  EXPECT_EQ(load_error("sparsity: 1.0"),
            "cfg.yaml:1:11: sparsity: expected a number in [0, 1) (static keeps one fixed level), got 1.0");
  EXPECT_EQ(load_error("sparsity: ten"),
            "cfg.yaml:1:11: sparsity: expected a sparsity section: a number (static sparsity), a mapping, a list of "
            "mappings (groups) or {groups: [...]}, got 'ten'");
  EXPECT_EQ(load_error("sparsity: {sparsity: 0.5, seed: -1}"),
            "cfg.yaml:1:33: sparsity.seed: expected an integer >= 0, got -1");
  EXPECT_EQ(
      load_error("sparsity: {sparsity: 0.5, init_method: magnitude}"),
      "cfg.yaml:1:40: sparsity.init_method: unknown init_method 'magnitude'; expected random, topk, from_zeros or "
      "checkerboard");
  EXPECT_EQ(load_error("sparsity: {sparsity: 0.5, format: 3:2}"),
            "cfg.yaml:1:35: sparsity.format: N:M format '3:2' needs 1 <= N < M <= 32");
  EXPECT_EQ(load_error("sparsity: {sparsity: 0.5, format: bcsr32}"),
            "cfg.yaml:1:35: sparsity.format: unknown sparse format 'bcsr32'; expected auto, masked-dense, csr, bcsr4, "
            "bcsr8, bcsr16 or N:M such as 2:4");
  EXPECT_EQ(load_error("sparsity: {sparsity: 0.5, distribution: erdos}"),
            "cfg.yaml:1:41: sparsity.distribution: unknown distribution 'erdos'; expected uniform, er or erk");
  EXPECT_EQ(load_error("sparsity: {sparsity: 0.5, overrides: {fc1.weight: 2}}"),
            "cfg.yaml:1:51: sparsity.overrides[\"fc1.weight\"]: expected a number in [0, 1) (at 1 the parameter keeps "
            "no weight), got 2");
  EXPECT_EQ(load_error("sparsity: {sparsity: 0.5, param_filter: {fc1: 1}}"),
            "cfg.yaml:1:41: sparsity.param_filter: expected a glob or a non-empty list of globs, got a mapping");
  EXPECT_EQ(load_error("sparsity: {sparsity: 0.5, param_filter: []}"),
            "cfg.yaml:1:41: sparsity.param_filter: expected a glob or a non-empty list of globs, got an empty list");
  EXPECT_EQ(load_error("sparsity: {sparsity: 0.5, param_filter: [fc1.weight, 3]}"),
            "cfg.yaml:1:54: sparsity.param_filter[1]: expected a glob, got 3");
  EXPECT_EQ(load_error("sparsity: {sparsity: 0.5, balance_out_groups: 2, balance_in_groups: 2}"),
            "cfg.yaml:1:50: sparsity.balance_in_groups: 'balance_out_groups' and 'balance_in_groups' are exclusive: "
            "balanced selection cuts either rows or columns");
  EXPECT_EQ(load_error("sparsity: {sparsity: 0.5, balance_out_groups: 0}"),
            "cfg.yaml:1:47: sparsity.balance_out_groups: expected an integer >= 1 (a number of groups), got 0");
  // Scalars of any length are typed without recursion (std::regex overflowed the stack here).
  const std::string digits(200000, '7');
  EXPECT_EQ(load_error(("sparsity: " + digits).c_str()),
            "cfg.yaml:1:11: sparsity: expected a number in [0, 1) (static keeps one fixed level), got " +
                digits.substr(0, 57) + "...");
  EXPECT_EQ(load_error(("sparsity: 0." + digits + "e-" + digits).c_str()),
            "cfg.yaml:1:11: sparsity: expected a number in [0, 1) (static keeps one fixed level), got 0." +
                digits.substr(0, 55) + "...");
}

TEST(SparsityConfigErrors, AlgorithmKeyRules) {
  EXPECT_EQ(load_error(R"(
sparsity:
  sparsity: 0.5
  update: {freq: 10}
)"),
            "cfg.yaml:3:3: sparsity.update: static takes no update schedule: its masks never change");
  EXPECT_EQ(load_error(R"(
sparsity:
  algorithm: gmp
  sparsity: {type: polynomial, init: 0, final: 0.8, begin: 0, end: 1000}
  update: {freq: 100}
  drop_fraction: 0.3
)"),
            "cfg.yaml:5:3: sparsity.drop_fraction: gmp takes no drop_fraction: it does not regrow connections");
  EXPECT_EQ(load_error("sparsity: {algorithm: gmp, sparsity: 0.5, update: {freq: 100}}"),
            "cfg.yaml:1:38: sparsity.sparsity: expected a schedule that changes with the step (gmp never prunes at a "
            "constant level), got 0.5");
  EXPECT_EQ(load_error("sparsity: {algorithm: gmp, sparsity: {type: constant, value: 0.5}, update: {freq: 100}}"),
            "cfg.yaml:1:38: sparsity.sparsity: expected a schedule that changes with the step (gmp never prunes at a "
            "constant level), got constant(0.5)");
  EXPECT_EQ(load_error(R"(
sparsity:
  algorithm: rigl
  sparsity: 0.9
)"),
            "cfg.yaml:2:3: sparsity: missing 'update': rigl needs an update schedule ({freq, start, stop} or {steps: "
            "[...]})");
  EXPECT_EQ(load_error("sparsity: {sparsity: [0.5, 0.6]}"),
            "cfg.yaml:1:22: sparsity.sparsity: expected a number in [0, 1) (static keeps one fixed level), got a list");
  EXPECT_EQ(load_error("sparsity: {type: rigl, sparsity: 0.9, param_name_patterns: [fc1]}"),
            "cfg.yaml:1:11: sparsity: missing 'schedule': rigl needs an update schedule ({freq, start, stop} or "
            "{steps: [...]})");
}

// Each rule of an algorithm's keys has one message, the registry's: the C++ API (make_algorithm on a
// hand-built spec) throws it as is, and the 2.2+ and 2.0-2.1 forms put it after the offending key's
// file:line:column and path, or the group's when a key is missing.
TEST(SparsityConfigErrors, EachRuleHasOneMessageInEveryForm) {
  register_shift();
  const auto api_error = [](const AlgorithmSpec& spec) { return error_of([&] { make_algorithm(spec); }); };

  // update, rejected.
  const std::string no_update = "static takes no update schedule: its masks never change";
  EXPECT_EQ(load_error("sparsity: {sparsity: 0.5, update: {freq: 10}}"),
            "cfg.yaml:1:27: sparsity.update: " + no_update);
  EXPECT_EQ(load_error("sparsity: {type: static, sparsity: 0.5, schedule: {freq: 10}}"),
            "cfg.yaml:1:41: sparsity.schedule: " + no_update);
  EXPECT_EQ(api_error(make_spec("static", LevelSchedule::constant(0.5), {}, UpdateSchedule::every(10))), no_update);

  // update, required: the message names the key as the form spells it.
  const auto needs_update = [](const char* key) {
    return fmt::format("missing '{}': rigl needs an update schedule ({{freq, start, stop}} or {{steps: [...]}})", key);
  };
  EXPECT_EQ(load_error("sparsity: {algorithm: rigl, sparsity: 0.9}"),
            "cfg.yaml:1:11: sparsity: " + needs_update("update"));
  EXPECT_EQ(load_error("sparsity: {type: rigl, sparsity: 0.9, param_name_patterns: [fc1]}"),
            "cfg.yaml:1:11: sparsity: " + needs_update("schedule"));
  EXPECT_EQ(api_error(make_spec("rigl", LevelSchedule::constant(0.9))), needs_update("update"));

  // drop_fraction, rejected.
  const std::string no_drop = "gmp takes no drop_fraction: it does not regrow connections";
  EXPECT_EQ(load_error("sparsity: {algorithm: gmp, sparsity: [0.2, 0.4], update: {freq: 10}, drop_fraction: 0.3}"),
            "cfg.yaml:1:70: sparsity.drop_fraction: " + no_drop);
  EXPECT_EQ(load_error("sparsity: {type: gmp, sparsity: [0.2, 0.4], schedule: {freq: 10}, drop_fraction: 0.3}"),
            "cfg.yaml:1:67: sparsity.drop_fraction: " + no_drop);
  EXPECT_EQ(api_error(make_spec("gmp", LevelSchedule::cycling({0.2, 0.4}), {}, UpdateSchedule::every(10),
                                LevelSchedule::constant(0.3))),
            no_drop);

  // drop_fraction, required (a user algorithm's rule).
  const std::string needs_drop = "missing 'drop_fraction': regrow needs one";
  EXPECT_EQ(load_error("sparsity: {algorithm: regrow, sparsity: 0.5, update: {freq: 10}}"),
            "cfg.yaml:1:11: sparsity: " + needs_drop);
  EXPECT_EQ(load_error("sparsity: {type: regrow, sparsity: 0.5, schedule: {freq: 10}}"),
            "cfg.yaml:1:11: sparsity: " + needs_drop);
  EXPECT_EQ(api_error(make_spec("regrow", LevelSchedule::constant(0.5), {}, UpdateSchedule::every(10))), needs_drop);
  EXPECT_EQ(describe(load("sparsity: {algorithm: regrow, sparsity: 0.5, update: {freq: 10}, drop_fraction: 0.2}")),
            std::vector<std::string>{describe(make_spec("regrow", LevelSchedule::constant(0.5), {},
                                                        UpdateSchedule::every(10), LevelSchedule::constant(0.2)))});

  // The level, constant in [0, 1): a config's value is quoted as written, a spec's described.
  const std::string constant = "expected a number in [0, 1) (static keeps one fixed level), got ";
  EXPECT_EQ(load_error("sparsity: {algorithm: static, sparsity: 1.0}"),
            "cfg.yaml:1:41: sparsity.sparsity: " + constant + "1.0");
  EXPECT_EQ(load_error("sparsity: {type: static, sparsity: [0.5], param_name_patterns: [fc1]}"),
            "cfg.yaml:1:36: sparsity.sparsity: " + constant + "a list");
  EXPECT_EQ(api_error(make_spec("static", LevelSchedule::constant(1.0))), constant + "constant(1)");
  EXPECT_EQ(api_error(make_spec("static", LevelSchedule::cycling({0.5}))), constant + "cycling([0.5])");

  // Level 1 (no weight kept), refused for every algorithm and form, the C++ API and overrides alike.
  const std::string one = " would keep no weight of a layer at level 1), got ";
  EXPECT_EQ(load_error("sparsity: {algorithm: rigl, sparsity: 1.0, update: {freq: 10}}"),
            "cfg.yaml:1:39: sparsity.sparsity: expected a level below 1 (rigl" + one + "1.0");
  EXPECT_EQ(load_error("sparsity: {type: set, sparsity: 1.0, schedule: {freq: 10}, param_name_patterns: [fc1]}"),
            "cfg.yaml:1:33: sparsity.sparsity: expected a level below 1 (set" + one + "1.0");
  EXPECT_EQ(load_error("sparsity: {algorithm: gmp, sparsity: {type: polynomial, init: 0.0, final: 1.0, begin: 0, "
                       "end: 100}, update: {freq: 10}}"),
            "cfg.yaml:1:38: sparsity.sparsity: expected a level below 1 (gmp" + one +
                "polynomial(init=0, final=1, begin=0, end=100, power=3)");
  EXPECT_EQ(api_error(make_spec("rigl", LevelSchedule::constant(1.0), {}, UpdateSchedule::every(10))),
            "expected a level below 1 (rigl" + one + "constant(1)");
  EXPECT_EQ(api_error(make_spec("set", LevelSchedule::cycling({0.5, 1.0}), {}, UpdateSchedule::every(10))),
            "expected a level below 1 (set" + one + "cycling([0.5, 1])");
  EXPECT_EQ(
      load_error("sparsity: {algorithm: static, sparsity: 0.5, overrides: {fc1.weight: 1.0}}"),
      "cfg.yaml:1:70: sparsity.overrides[\"fc1.weight\"]: expected a number in [0, 1) (at 1 the parameter keeps no "
      "weight), got 1.0");

  // The level, changing with the step.
  const std::string changing =
      "expected a schedule that changes with the step (gmp never prunes at a constant level), got constant(0.5)";
  EXPECT_EQ(load_error("sparsity: {algorithm: gmp, sparsity: {type: constant, value: 0.5}, update: {freq: 10}}"),
            "cfg.yaml:1:38: sparsity.sparsity: " + changing);
  EXPECT_EQ(load_error("sparsity: {type: gmp, sparsity: {type: constant, value: 0.5}, schedule: {freq: 10}}"),
            "cfg.yaml:1:33: sparsity.sparsity: " + changing);
  EXPECT_EQ(api_error(make_spec("gmp", LevelSchedule::constant(0.5), {}, UpdateSchedule::every(10))), changing);
  // A schedule that never changes is a constant too, whatever its type.
  EXPECT_EQ(load_error("sparsity: {algorithm: gmp, sparsity: {type: linear, init: 0.5, slope: 0}, update: {freq: 10}}"),
            "cfg.yaml:1:38: sparsity.sparsity: expected a schedule that changes with the step (gmp never prunes at a "
            "constant level), got linear(init=0.5, slope=0)");
  EXPECT_EQ(load_error("sparsity: {algorithm: gmp, sparsity: {type: polynomial, init: 0.7, final: 0.7, begin: 0, end: "
                       "100}, update: {freq: 10}}"),
            "cfg.yaml:1:38: sparsity.sparsity: expected a schedule that changes with the step (gmp never prunes at a "
            "constant level), got polynomial(init=0.7, final=0.7, begin=0, end=100, power=3)");
  EXPECT_EQ(load_error("sparsity: {algorithm: gmp, sparsity: [0.5, 0.5], update: {freq: 10}}"),
            "cfg.yaml:1:38: sparsity.sparsity: expected a schedule that changes with the step (gmp never prunes at a "
            "constant level), got cycling([0.5, 0.5])");

  // The other places a config names a rule's key: items of `groups:`, the bare number, the sideband.
  EXPECT_EQ(load_error("sparsity: {groups: [{algorithm: static, sparsity: 0.5, update: {freq: 10}}]}"),
            "cfg.yaml:1:56: sparsity.groups[0].update: " + no_update);
  EXPECT_EQ(load_error("sparsity: 1.0"), "cfg.yaml:1:11: sparsity: " + constant + "1.0");
  EXPECT_EQ(load_error("sparsity: {type: sideband, sparsity: 1.0}"),
            "cfg.yaml:1:38: sparsity.sparsity: " + constant + "1.0");
  EXPECT_EQ(load_error("sparsity: {type: sideband, param_name_patterns: {fc1: {sparsity: -0.5}}}"),
            "cfg.yaml:1:66: sparsity.param_name_patterns.fc1.sparsity: " + constant + "-0.5");
}

TEST(SparsityConfigErrors, SchedulesAndUpdates) {
  const auto with_drop = [](const char* drop) {
    return load_error(
        fmt::format("sparsity: {{algorithm: rigl, sparsity: 0.9, update: {{freq: 1}}, drop_fraction: {}}}", drop)
            .c_str());
  };
  EXPECT_EQ(with_drop("{init: 0.3, half_period: 10}"),
            "cfg.yaml:1:78: sparsity.drop_fraction: missing 'type': a schedule mapping has one of constant, linear, "
            "exp, power, cosine, cycling, polynomial or graphcore_cosine");
  EXPECT_EQ(
      with_drop("{type: cosin, init: 0.3}"),
      "cfg.yaml:1:85: sparsity.drop_fraction.type: unknown schedule type 'cosin'; expected constant, linear, exp, "
      "power, cosine, cycling, polynomial or graphcore_cosine (did you mean 'cosine'?)");
  EXPECT_EQ(with_drop("{type: cosine, init: 0.3}"),
            "cfg.yaml:1:78: sparsity.drop_fraction: missing 'half_period': a cosine schedule takes init and "
            "half_period (optional: minimum)");
  EXPECT_EQ(with_drop("{type: cosine, init: 0.3, half_period: 10, minimun: 0.1}"),
            "cfg.yaml:1:121: sparsity.drop_fraction.minimun: unknown key for a cosine schedule, which takes init and "
            "half_period (optional: minimum) (did you mean 'minimum'?)");
  EXPECT_EQ(with_drop("{type: cosine, init: 1.3, half_period: 10}"),
            "cfg.yaml:1:99: sparsity.drop_fraction.init: expected a number in [0, 1], got 1.3");
  EXPECT_EQ(with_drop("{type: cosine, init: 0.3, half_period: 0}"),
            "cfg.yaml:1:117: sparsity.drop_fraction.half_period: expected a finite number > 0, got 0");
  EXPECT_EQ(with_drop("{type: polynomial, init: 0, final: 0.9, begin: 100, end: 100}"),
            "cfg.yaml:1:135: sparsity.drop_fraction.end: expected an integer > begin (100), got 100");
  EXPECT_EQ(with_drop("{freq: 100}"),
            "cfg.yaml:1:78: sparsity.drop_fraction: expected a level schedule with 'type', got an update cadence "
            "({freq, ...} or {steps}); in 2.2+ the cadence is 'update' and 'schedule' is an alias of 'sparsity'");
  EXPECT_EQ(with_drop("null"),
            "cfg.yaml:1:63: sparsity.drop_fraction: expected a level: a number in [0, 1], a list of numbers (cycling) "
            "or a schedule mapping with 'type', got null");

  const auto with_update = [](const char* update) {
    return load_error(fmt::format("sparsity: {{algorithm: rigl, sparsity: 0.9, update: {}}}", update).c_str());
  };
  EXPECT_EQ(with_update("{start: 10}"),
            "cfg.yaml:1:52: sparsity.update: missing 'freq': an update schedule is {freq, start, stop} or {steps: "
            "[...]}");
  EXPECT_EQ(with_update("{freq: 10, steps: [1]}"),
            "cfg.yaml:1:53: sparsity.update.freq: 'steps' lists the update steps itself: give either steps or "
            "freq/start/stop");
  EXPECT_EQ(with_update("{freq: 10, every: 2}"),
            "cfg.yaml:1:63: sparsity.update.every: unknown key; an update schedule takes freq, start and stop, or "
            "steps");
  EXPECT_EQ(with_update("{steps: [0, 100, 0]}"),
            "cfg.yaml:1:69: sparsity.update.steps[2]: step 0 is listed twice (also at sparsity.update.steps[0])");
  EXPECT_EQ(with_update("{steps: []}"),
            "cfg.yaml:1:60: sparsity.update.steps: expected at least one step, got an empty list");
  EXPECT_EQ(with_update("{freq: 10, start: 100, stop: 100}"),
            "cfg.yaml:1:81: sparsity.update.stop: expected an integer > start (100), got 100");
  EXPECT_EQ(with_update("100"),
            "cfg.yaml:1:52: sparsity.update: expected an update schedule: {freq, start, stop} or {steps: [...]}, got "
            "100");
}

TEST(SparsityConfigErrors, ListsAndNesting) {
  EXPECT_EQ(load_error(R"(
sparsity:
  - sparsity: 0.5
  -
  - sparsity: 0.6
)"),
            "cfg.yaml:3:3: sparsity[1]: expected a mapping (one group), got null");
  EXPECT_EQ(load_error(R"(
sparsity:
  - sparsity: 0.5
  -   # nothing here
)"),
            "cfg.yaml:3:3: sparsity[1]: expected a mapping (one group), got null");
  EXPECT_EQ(load_error("sparsity:\n  - ~\n"), "cfg.yaml:2:5: sparsity[0]: expected a mapping (one group), got null");
  // The `-` of an empty item is found by walking back from the next token, not by counting lines
  // from the start of the text for every item: 300,000 empty items took over a minute that way.
  std::string empties = "sparsity:\n  - {sparsity: 0.5}\n";
  for (int i = 0; i < 150000; ++i) empties += "  -\n";
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(load_error(empties.c_str()), "cfg.yaml:3:3: sparsity[1]: expected a mapping (one group), got null");
  EXPECT_EQ(load_error(("sparsity: [a, b" + std::string(300000, ',') + "]").c_str()),
            "cfg.yaml:1:12: sparsity[0]: expected a mapping (one group), got 'a'");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30.0);
  EXPECT_EQ(load_error("sparsity: [{sparsity: 0.5}, null]"),
            "cfg.yaml:1:29: sparsity[1]: expected a mapping (one group), got null");
  EXPECT_EQ(
      load_error("sparsity: [{sparsity: null}]"),
      "cfg.yaml:1:13: sparsity[0].sparsity: a group of a list cannot switch sparsity off (null); remove the group");
  EXPECT_EQ(load_error("sparsity:\n  - - sparsity: 0.5\n"),
            "cfg.yaml:2:5: sparsity[0]: expected a mapping (one group; groups do not nest), got a list");
  EXPECT_EQ(load_error(R"(
sparsity:
  groups:
    - groups:
        - sparsity: 0.5
)"),
            "cfg.yaml:3:7: sparsity.groups[0].groups: groups do not nest: 'groups' is only valid as the single key of "
            "the section");
  EXPECT_EQ(load_error("sparsity: [{algorithm: group, sparsity: 0.5}]"),
            "cfg.yaml:1:24: sparsity[0].algorithm: groups do not nest: 'group' cannot be the algorithm of a group");
  EXPECT_EQ(load_error("sparsity: [{type: sideband, sparsity: 0.5}]"),
            "cfg.yaml:1:19: sparsity[0].type: 'type: sideband' is the 1.8-1.9 form of a whole section; it cannot be "
            "one group of a list");
}

TEST(SparsityConfigErrors, SidebandForm) {
  EXPECT_EQ(load_error(R"(
sparsity:
  type: sideband
  sparsity: 0.3
  param_name_patterns:
    "fc1.*": 0.5
)"),
            "cfg.yaml:5:14: sparsity.param_name_patterns[\"fc1.*\"]: expected a mapping of settings for the parameters "
            "this regex finds (sparsity, init_method, ...), got 0.5");
  EXPECT_EQ(load_error(R"(
sparsity:
  type: sideband
  param_name_patterns:
    "fc1.*": {init_method: topk}
)"),
            "cfg.yaml:4:14: sparsity.param_name_patterns[\"fc1.*\"]: missing 'sparsity' (give it in this block or at "
            "the top level)");
  EXPECT_EQ(load_error("sparsity: {type: sideband, init_method: topk}"), "cfg.yaml:1:11: sparsity: missing 'sparsity'");
  EXPECT_EQ(load_error("sparsity: {type: sideband, sparsity: 0.5, init_method: checkerboard}"),
            "cfg.yaml:1:56: sparsity.init_method: unknown init_method 'checkerboard' in the sideband form; expected "
            "random, topk or from_zeros");
  EXPECT_EQ(load_error("sparsity: {type: sideband, sparsity: 0.5, seed: '7'}"),
            "cfg.yaml:1:49: sparsity.seed: expected an integer >= 0, got the quoted string \"7\"");
  EXPECT_EQ(load_error(R"(
sparsity:
  type: sideband
  sparsity: 0.5
  out_groups: 2
  param_name_patterns:
    fc1: {in_groups: 4}
)"),
            "cfg.yaml:6:11: sparsity.param_name_patterns.fc1.in_groups: 'out_groups' and 'in_groups' are exclusive: "
            "balanced selection cuts either rows or columns");
  EXPECT_EQ(load_error("sparsity: {type: sideband, sparsity: 0.5, out_groups: 2, in_groups: 2}"),
            "cfg.yaml:1:58: sparsity.in_groups: 'out_groups' and 'in_groups' are exclusive: balanced selection cuts "
            "either rows or columns");
  EXPECT_EQ(load_error("sparsity: {type: sideband, sparsity: 0.5, dump_masks: true}"),
            "cfg.yaml:1:55: sparsity.dump_masks: dump_masks: true is not supported; sparsetrain keeps masks in the "
            "state dict as <param>_mask");
  EXPECT_EQ(load_error("sparsity: {type: sideband, sparsity: 0.5, param_name_patterns: {fc1: {type: static}}}"),
            "cfg.yaml:1:71: sparsity.param_name_patterns.fc1.type: 'type' is a top-level key of the sideband form; a "
            "block of param_name_patterns takes sparsity, init_method, seed, out_groups, in_groups, dump_masks, "
            "format, distribution or overrides");
  EXPECT_EQ(load_error("sparsity: {type: sideband, sparsity: 0.5, algorithm: static}"),
            "cfg.yaml:1:43: sparsity.algorithm: 'algorithm' is not a key of the sideband form (type: sideband), which "
            "takes type, param_name_patterns, sparsity, init_method, seed, out_groups, in_groups, dump_masks, format, "
            "distribution or overrides");
  // Every top-level setting is checked, even when every block overrides it.
  EXPECT_EQ(load_error("sparsity: {type: sideband, sparsity: 2.0, param_name_patterns: {fc1: {sparsity: 0.5}}}"),
            "cfg.yaml:1:38: sparsity.sparsity: expected a number in [0, 1) (static keeps one fixed level), got 2.0");
  EXPECT_EQ(load_error("sparsity: {type: sideband, sparsity: 0.5, param_name_patterns: ['fc(1']}"),
            "cfg.yaml:1:65: sparsity.param_name_patterns[0]: parameter filter 'fc(1': bad regular expression at offset "
            "4: missing closing parenthesis");
  EXPECT_EQ(load_error("sparsity: {type: sideband, sparsity: 0.5, param_name_patterns: {'fc(1': {}}}"),
            "cfg.yaml:1:65: sparsity.param_name_patterns[\"fc(1\"]: parameter filter 'fc(1': bad regular expression at "
            "offset 4: missing closing parenthesis");
}

TEST(SparsityConfigErrors, Documents) {
  EXPECT_EQ(load_error("sparsity: [0.5,\n"), "cfg.yaml:2:1: end of sequence flow not found");
  EXPECT_EQ(load_error("sparsity: 0.5\n---\nsparsity: 0.6\n"), "cfg.yaml:3:1: expected one YAML document, found 2");
  // A ',' outside a flow collection: yaml-cpp 0.7's LoadAll reads null documents there forever.
  EXPECT_EQ(load_error(","), "cfg.yaml:1:1: unexpected ',' outside a flow collection ([...] or {...})");
  EXPECT_EQ(load_error("[0.5],\n"), "cfg.yaml:1:6: unexpected ',' outside a flow collection ([...] or {...})");
  EXPECT_EQ(load_error("sparsity: 0.5\n--- ,\n"),
            "cfg.yaml:2:5: unexpected ',' outside a flow collection ([...] or {...})");
  EXPECT_EQ(load_error("- sparsity: 0.5\n"),
            "cfg.yaml:1:1: expected a mapping at the top level (a training config), got a list");
  EXPECT_EQ(load_error(R"(
sparsity: 0.5
trainer:
  init:
    sparsity: 0.6
)"),
            "cfg.yaml:4:5: trainer.init.sparsity: the section is also given at the top level (line 1); keep one (top "
            "level up to 2.3, trainer.init from 2.4)");
  EXPECT_EQ(load_error("trainer:\n  init:\n    sparsity: {algorithm: set, sparsity: 0.9}\n"),
            "cfg.yaml:3:15: trainer.init.sparsity: missing 'update': set needs an update schedule ({freq, start, stop} "
            "or {steps: [...]})");
}

}  // namespace
}  // namespace sparsetrain
