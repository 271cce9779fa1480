#include "sparsetrain/train/setup.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sparsetrain/config/yaml_reader.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/data/mlm_examples.h"
#include "sparsetrain/hf/pretrained_dir.h"
#include "sparsetrain/models/gpt.h"
#include "sparsetrain/models/mlp.h"
#include "sparsetrain/models/sparse_init.h"
#include "sparsetrain/optim/adamw.h"
#include "sparsetrain/optim/sgd.h"
#include "sparsetrain/sparsity/group.h"
#include "sparsetrain/train/mlm_source.h"

namespace sparsetrain {

namespace {

// A language model's vocabulary: the config's vocab_size, or `vocab` (the ids the data uses) when
// it gives none; one smaller than `vocab` is an Error at the key. `what` names those ids.
int64_t model_vocab(const TrainConfig& config, int64_t given, int64_t vocab, const std::string& what) {
  if (!config.model_sets_vocab) return vocab;
  if (given < vocab)
    fail("{}: {} is smaller than the {} {}; give at least {}, or leave vocab_size out to take them",
         config.vocab_size_at.empty() ? config.file + ": model.vocab_size" : config.vocab_size_at, given, vocab, what,
         vocab);
  return given;
}

}  // namespace

std::unique_ptr<Model> build_model(const TrainConfig& config, int64_t vocab) {
  const std::string& tokenizer = config.train_input.tokenizer;
  if (const auto* gpt = std::get_if<GptConfig>(&config.model)) {
    GptConfig c = *gpt;
    c.vocab_size = model_vocab(config, c.vocab_size, vocab, fmt::format("ids of the {} tokenizer", tokenizer));
    return std::make_unique<Gpt>(c);
  }
  if (const auto* bert = std::get_if<BertConfig>(&config.model)) {
    BertConfig c = *bert;
    c.vocab_size = model_vocab(config, c.vocab_size, vocab,
                               fmt::format("ids of the {} tokenizer with BERT's special tokens", tokenizer));
    // What the FLOP count assumes per row: Google's num_to_predict for a full row.
    const InputConfig& in = config.train_input;
    const int64_t seq = in.sequence_length > 0 ? in.sequence_length : c.max_positions;
    c.predictions_per_row =
        std::clamp<int64_t>(std::llround(static_cast<double>(seq) * in.masked_lm_prob), 1, in.max_predictions_per_seq);
    return std::make_unique<Bert>(c);
  }
  return std::make_unique<Mlp>(std::get<MlpConfig>(config.model));
}

namespace {

// Up to 8 names, then how many more.
std::string shown(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 8;
  std::vector<std::string> head(names.begin(),
                                names.begin() + static_cast<std::ptrdiff_t>(std::min(names.size(), kShown)));
  if (names.size() > kShown) head.push_back(fmt::format("and {} more", names.size() - kShown));
  return fmt::format("{}", fmt::join(head, ", "));
}

// A group without `format` keeps its matrices masked-dense: no speed-up, and flops_actual counts
// them dense (docs/training.md). Said once per group, with the key that gives sparse kernels.
std::optional<std::string> masked_dense_warning(const SparsityAlgorithm& group) {
  const SparsityOptions& o = group.options();
  if (o.format || o.auto_format || o.masked_dense_chosen) return std::nullopt;
  std::size_t count = 0;
  for (const Parameter* p : group.parameters())
    if (p->shape().size() == 2 && p->storage() == Storage::MaskedDense) ++count;
  if (count == 0) return std::nullopt;
  return fmt::format(
      "{}: {} matri{} stored masked-dense (no 'format'): a mask zeroes weights of a dense matrix, which runs at dense "
      "speed or slower, and flops_actual counts it dense; 'format: csr' (or 'auto') runs sparse kernels",
      group.name(), count, count == 1 ? "x" : "ces");
}

// A glob that reads as a regex ('.*', '\\.', '(', '|', '+', '^', '$'): what it means as a glob, a
// hint; else empty.
std::string regex_in_glob_hint(const ParamFilter& filter) {
  if (filter.kind() != "globs") return "";
  for (const std::string& p : filter.patterns()) {
    if (p.find_first_of("\\()|+^$") == std::string::npos && p.find(".*") == std::string::npos) continue;
    std::string glob;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (p.compare(i, 2, ".*") == 0) {
        glob += '*';
        ++i;
      } else if (p[i] == '\\' && i + 1 < p.size()) {
        glob += p[++i];
      } else if (p[i] != '^' && p[i] != '$') {
        glob += p[i];
      }
    }
    return fmt::format(
        "; '{}' reads as a regex, but param_filter takes globs ('*' matches any text, '.' only a dot): write a glob "
        "such as '{}', or select by regex with param_name_patterns",
        p, glob);
  }
  return "";
}

// The claims of a config's groups on the model, checked before they are applied, so each message
// points at the key to change: a group that would claim nothing (its filter matches no parameter,
// or only ones an earlier group takes: a parameter goes to the first group whose filter matches)
// and an override naming a parameter its group does not claim.
void check_claims(const SparsityConfig& config, Module& model) {
  const std::vector<Module::Entry> entries = model.named_parameters();
  std::vector<std::string> candidates;
  for (const Module::Entry& e : entries)
    if (!e.requires_dense) candidates.push_back(e.param->name());
  std::map<std::string, std::size_t> first_group;  // parameter -> the first group whose filter matches it
  for (std::size_t g = 0; g < config.groups.size() && g < config.sources.size(); ++g) {
    const SparsityConfig::Source& at = config.sources[g];
    const ParamFilter& filter = config.groups[g].options.filter;
    const std::string& key = at.filter.empty() ? at.group : at.filter;
    std::vector<std::string> matched, claimed;
    std::optional<std::size_t> earlier;
    for (const Module::Entry& e : entries) {
      if (e.requires_dense || !filter.matches(e)) continue;
      const std::string& name = e.param->name();
      matched.push_back(name);
      if (const auto it = first_group.find(name); it != first_group.end()) {
        if (!earlier) earlier = it->second;
      } else {
        first_group[name] = g;
        claimed.push_back(name);
      }
    }
    if (matched.empty()) {
      const std::string suggestion =
          filter.patterns().size() == 1 ? config::did_you_mean(filter.patterns()[0], candidates) : "";
      fail("{}: {} matches no parameter that can be sparsified{}{}; the model has: {}", key, filter.describe(),
           suggestion, regex_in_glob_hint(filter), shown(candidates));
    }
    if (claimed.empty())
      fail(
          "{}: every parameter {} matches ({}) is already claimed by group {} ({}), and a parameter goes to the first "
          "group whose filter matches; narrow group {}'s filter or remove this group",
          key, filter.describe(), shown(matched), *earlier + 1, config.sources[*earlier].group, *earlier + 1);
    for (const auto& [name, level] : config.groups[g].options.overrides)
      if (std::find(claimed.begin(), claimed.end(), name) == claimed.end())
        fail("{}: '{}' is not a parameter of this group{}; the group claims: {}",
             at.overrides.contains(name) ? at.overrides.at(name) : at.group, name, config::did_you_mean(name, claimed),
             shown(claimed));
  }
}

}  // namespace

Setup make_setup(TrainConfig config, uint64_t seed, bool load_data, bool apply_sparsity) {
  Setup s;
  s.seed = seed;
  s.config = std::move(config);
  const TrainConfig& c = s.config;
  const auto* gpt = std::get_if<GptConfig>(&c.model);
  const auto* bert = std::get_if<BertConfig>(&c.model);
  if (c.is_text()) s.tokenizer = make_tokenizer(c.train_input.tokenizer);
  // A BERT's vocabulary: the tokenizer's, with [PAD] [CLS] [SEP] [MASK] appended where it has none.
  const int64_t vocab = bert != nullptr ? bert_special_tokens(*s.tokenizer).vocab_size
                        : s.tokenizer   ? s.tokenizer->vocab_size()
                                        : 0;
  s.model = build_model(c, vocab);
  s.model->set_precision(c.precision);
  if (load_data) {
    if (bert != nullptr)
      s.data = make_mlm_data_source(c, bert->max_positions, bert->next_sentence, *s.tokenizer);
    else
      s.data = make_data_source(c, gpt != nullptr ? gpt->context : 0, s.tokenizer.get());
    if (const auto* mlp = std::get_if<MlpConfig>(&c.model); mlp != nullptr && mlp->inputs != s.data->input_size())
      fail("{}: model.input_size is {}, but the data has {} features per example", c.file, mlp->inputs,
           s.data->input_size());
  }
  s.model->init_weights(seed);
  // Pretrained weights replace the initialization before the masks are chosen, so that a
  // magnitude init_method (topk) keeps the largest pretrained weights.
  if (!c.init_from.empty()) {
    try {
      s.model->load_state_dict(
          bert != nullptr ? read_hf_bert_weights(c.init_from, bert->next_sentence) : read_hf_gpt2_weights(c.init_from),
          /*strict=*/true);
    } catch (const Error& e) {
      fail("{}: model.init_from: {}", c.file, e.what());
    }
  }
  if (apply_sparsity && c.sparsity.form != ConfigForm::None) {
    // Groups without their own seed draw their masks from the run's, so --seed varies them too.
    SparsityConfig sparsity = c.sparsity;
    for (AlgorithmSpec& group : sparsity.groups)
      if (!group.options.seed) group.options.seed = seed;
    check_claims(c.sparsity, *s.model);
    s.sparsity = sparsity.build();
    // What the model refuses (a layer that would keep no block), at the group that asked for it
    // (a config built in code has no sources: the file then).
    const auto group_at = [&](std::size_t g) {
      return g < c.sparsity.sources.size() ? c.sparsity.sources[g].group : c.file;
    };
    try {
      s.sparsity->apply(*s.model);
    } catch (const GroupMemberError& e) {
      fail("{}: {}", group_at(e.member()), e.detail());
    } catch (const Error& e) {
      fail("{}: {}", group_at(0), e.what());
    }
    apply_sparse_init(*s.model, c.sparse_init);
    const std::vector<const SparsityAlgorithm*> groups = s.sparsity->leaf_algorithms();
    for (std::size_t g = 0; g < groups.size(); ++g) {
      for (const std::string& w : groups[g]->storage_warnings())
        s.warnings.push_back(fmt::format("{}: sparsity group {}: {}", c.file, g + 1, w));
      if (const std::optional<std::string> w = masked_dense_warning(*groups[g]))
        s.warnings.push_back(fmt::format("{}: sparsity group {}: {}", c.file, g + 1, *w));
    }
  }
  const OptimizerConfig& o = c.optimizer;
  if (o.type == "sgd")
    s.optimizer = std::make_unique<Sgd>(s.model->parameters(), o.learning_rate, o.sgd);
  else
    s.optimizer = std::make_unique<AdamW>(s.model->parameters(), o.learning_rate, o.adamw);
  if (s.sparsity) s.sparsity->apply(*s.optimizer);
  return s;
}

}  // namespace sparsetrain
