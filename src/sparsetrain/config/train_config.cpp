#include "sparsetrain/config/train_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "sparsetrain/config/yaml_reader.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/hf/bert_config.h"
#include "sparsetrain/hf/pretrained_dir.h"

namespace sparsetrain {

using config::Mapping;
using config::Source;
using config::Value;

const char* TrainConfig::model_name() const {
  if (is_gpt()) return "gpt";
  return is_bert() ? "bert" : "mlp";
}

const char* dataset_name(DatasetKind kind) {
  switch (kind) {
    case DatasetKind::Brown: return "brown";
    case DatasetKind::TextFile: return "text_file";
    case DatasetKind::FashionMnist: return "fashion_mnist";
  }
  return "?";
}

namespace {

// Typed reads with range checks; each failure names the file, position and key path.
int64_t int_at_least(const Value& v, int64_t min) {
  const int64_t x = v.as_int(fmt::format("an integer >= {}", min));
  if (x < min) v.expected(fmt::format("an integer >= {}", min));
  return x;
}

double number_in(const Value& v, double lo, double hi, bool hi_open, const char* what) {
  const double x = v.as_number(what);
  if (!(x >= lo && (hi_open ? x < hi : x <= hi))) v.expected(what);
  return x;
}

double positive_number(const Value& v) {
  const double x = v.as_number("a number > 0");
  if (!(x > 0.0)) v.expected("a number > 0");
  return x;
}

Mapping section(const Value& v, const std::vector<std::string>& keys, const std::string& what) {
  Mapping m(v, what);
  m.check_keys(keys, [&](const std::string& key) {
    return fmt::format("unknown key{}; {} takes {}", config::did_you_mean(key, keys), v.path(),
                       config::one_of(keys, "and"));
  });
  return m;
}

const std::vector<std::string> kGptKeys = {"name",        "vocab_size", "n_positions",        "n_layer",
                                           "n_head",      "n_embd",     "layer_norm_epsilon", "initializer_range",
                                           "sparse_init", "init_from",  "mixed_precision",    "fp16_type"};
// Hugging Face BertConfig's names, and the Model Zoo's disable_nsp.
const std::vector<std::string> kBertKeys = {"name",
                                            "vocab_size",
                                            "hidden_size",
                                            "num_hidden_layers",
                                            "num_attention_heads",
                                            "intermediate_size",
                                            "hidden_act",
                                            "hidden_dropout_prob",
                                            "attention_probs_dropout_prob",
                                            "max_position_embeddings",
                                            "type_vocab_size",
                                            "layer_norm_eps",
                                            "initializer_range",
                                            "disable_nsp",
                                            "sparse_init",
                                            "init_from",
                                            "mixed_precision",
                                            "fp16_type"};
const std::vector<std::string> kMlpKeys = {"name",
                                           "input_size",
                                           "hidden_sizes",
                                           "num_classes",
                                           "activation",
                                           "output_activation",
                                           "loss",
                                           "dropout",
                                           "sparse_init",
                                           "initializer_range",
                                           "inverted_dropout",
                                           "dropout_masks_gradient",
                                           "mixed_precision",
                                           "fp16_type"};

// The Model Zoo's mixed-precision keys of the model section: mixed_precision: true with
// fp16_type: bfloat16 is bf16 mixed precision. Its other half-precision types, and
// mixed_precision alone (the Model Zoo then means float16), are refused rather than trained in
// float32.
Precision read_precision(const Mapping& probe) {
  const std::optional<Value> mixed = probe.get("mixed_precision");
  const std::optional<Value> type = probe.get("fp16_type");
  const bool on = mixed && mixed->as_bool("true or false");
  if (type) {
    const std::string t = type->as_string("bfloat16");
    if (t == "float16" || t == "cbfloat16")
      type->fail(
          fmt::format("'{}' is not supported: sparsetrain's mixed precision is bfloat16 (fp16_type: bfloat16)", t));
    if (t != "bfloat16") type->expected("bfloat16");
    if (!on) type->fail("takes effect only with 'mixed_precision: true'; add that, or remove fp16_type");
  }
  if (on && !type)
    mixed->fail(
        "true without fp16_type means float16 in the Model Zoo, which sparsetrain does not run; add "
        "'fp16_type: bfloat16'");
  return on ? Precision::Bf16 : Precision::Fp32;
}

// hidden_act: Hugging Face's names, "gelu" being the erf form and "gelu_new" GPT-2's tanh form.
Activation read_hidden_act(const Value& x) {
  const std::string name = x.as_string("gelu, gelu_new or relu");
  if (name == "gelu") return Activation::GeluErf;
  if (name == "gelu_new") return Activation::Gelu;
  if (name == "relu") return Activation::ReLU;
  x.expected("gelu (the erf form), gelu_new (the tanh form) or relu");
}

BertConfig read_bert(const Value& v, bool& sets_vocab) {
  const Mapping m = section(v, kBertKeys, "a mapping");
  BertConfig c;
  for (const Mapping::Entry& e : m.entries()) {
    const Value& x = e.value;
    if (e.key == "vocab_size") c.vocab_size = int_at_least(x, 1), sets_vocab = true;
    if (e.key == "hidden_size") c.hidden = int_at_least(x, 1);
    if (e.key == "num_hidden_layers") c.layers = int_at_least(x, 1);
    if (e.key == "num_attention_heads") c.heads = int_at_least(x, 1);
    if (e.key == "intermediate_size") c.intermediate = int_at_least(x, 1);
    if (e.key == "max_position_embeddings") c.max_positions = int_at_least(x, 1);
    if (e.key == "type_vocab_size") c.type_vocab_size = int_at_least(x, 1);
    if (e.key == "hidden_act") c.act = read_hidden_act(x);
    if (e.key == "hidden_dropout_prob")
      c.hidden_dropout = static_cast<float>(number_in(x, 0.0, 1.0, true, "a number in [0, 1)"));
    if (e.key == "attention_probs_dropout_prob")
      c.attention_dropout = static_cast<float>(number_in(x, 0.0, 1.0, true, "a number in [0, 1)"));
    if (e.key == "layer_norm_eps")
      c.layer_norm_eps = static_cast<float>(
          number_in(x, kLayerNormEpsMin, kLayerNormEpsMax, false, "a number > 0 that float32 holds"));
    if (e.key == "initializer_range") c.init_std = positive_number(x);
    if (e.key == "disable_nsp") c.next_sentence = !x.as_bool("true or false");
  }
  if (c.hidden % c.heads != 0)
    v.fail(fmt::format("hidden_size ({}) must be a multiple of num_attention_heads ({})", c.hidden, c.heads));
  return c;
}

ModelConfig read_model(const Value& v, bool& sets_vocab, SparseInit& sparse_init, Precision& precision) {
  const Mapping probe(v, "a mapping with 'name: gpt', 'name: bert' or 'name: mlp'");
  precision = read_precision(probe);
  if (const std::optional<Value> init = probe.get("sparse_init"))
    sparse_init =
        config::at_value(*init, [&] { return parse_sparse_init(init->as_string("dense or scaled"), "sparse_init"); });
  const std::optional<Value> name = probe.get("name");
  if (!name) v.fail("missing key 'name' (gpt, bert or mlp)");
  const std::string kind = name->as_string("gpt, bert or mlp");
  if (kind == "bert") return read_bert(v, sets_vocab);
  if (kind == "gpt") {
    const Mapping m = section(v, kGptKeys, "a mapping");
    GptConfig c;
    for (const Mapping::Entry& e : m.entries()) {
      const Value& x = e.value;
      if (e.key == "vocab_size") c.vocab_size = int_at_least(x, 1), sets_vocab = true;
      if (e.key == "n_positions") c.context = int_at_least(x, 1);
      if (e.key == "n_layer") c.layers = int_at_least(x, 1);
      if (e.key == "n_head") c.heads = int_at_least(x, 1);
      if (e.key == "n_embd") c.embed = int_at_least(x, 1);
      if (e.key == "layer_norm_epsilon")
        c.layer_norm_eps = static_cast<float>(
            number_in(x, kLayerNormEpsMin, kLayerNormEpsMax, false, "a number > 0 that float32 holds"));
      if (e.key == "initializer_range") c.init_std = positive_number(x);
    }
    if (c.embed % c.heads != 0) v.fail(fmt::format("n_embd ({}) must be a multiple of n_head ({})", c.embed, c.heads));
    return c;
  }
  if (kind == "mlp") {
    const Mapping m = section(v, kMlpKeys, "a mapping");
    MlpConfig c;
    for (const Mapping::Entry& e : m.entries()) {
      const Value& x = e.value;
      if (e.key == "input_size") c.inputs = int_at_least(x, 1);
      if (e.key == "num_classes") c.classes = int_at_least(x, 2);
      if (e.key == "dropout") c.dropout = number_in(x, 0.0, 1.0, true, "a number in [0, 1)");
      if (e.key == "initializer_range") c.init_std = number_in(x, 0.0, 1e6, false, "a number >= 0");
      if (e.key == "inverted_dropout") c.inverted_dropout = x.as_bool("true or false");
      if (e.key == "dropout_masks_gradient") c.dropout_masks_gradient = x.as_bool("true or false");
      if (e.key == "activation")
        c.activation =
            config::at_value(x, [&] { return parse_activation(x.as_string("an activation"), "activation"); });
      if (e.key == "output_activation")
        c.output_activation =
            config::at_value(x, [&] { return parse_activation(x.as_string("an activation"), "output_activation"); });
      if (e.key == "loss") c.loss = config::at_value(x, [&] { return parse_mlp_loss(x.as_string("a loss"), "loss"); });
      if (e.key == "hidden_sizes") {
        c.hidden.clear();
        for (const Value& item : x.items("a list of layer widths")) c.hidden.push_back(int_at_least(item, 1));
      }
    }
    config::at_value(v, [&] { c.validate(); });
    return c;
  }
  name->expected("gpt, bert or mlp");
}

// The directory that config paths are relative to: the config file's, or the working directory
// for a config that is not a regular file (a pipe, `--params <(...)`).
std::filesystem::path config_base_dir(const std::string& file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  return fs::is_regular_file(file, ec) ? fs::absolute(file).parent_path() : fs::current_path();
}

// "hf:DIR" -> DIR made absolute against `base`; empty for text of another form.
std::string init_from_dir(const std::string& text, const std::filesystem::path& base) {
  if (!text.starts_with("hf:") || text.size() == 3) return "";
  return (base / text.substr(3)).lexically_normal().string();
}

// model.init_from: the pretrained model's config.json gives every model key the YAML leaves out,
// and one the YAML gives must have its value (a model cannot be resized or changed on loading;
// dropout and initializer_range change no weight and may differ); the loaded weights keep their
// values under a sparse mask unless sparse_init says otherwise.
class InitFrom {
 public:
  explicit InitFrom(TrainConfig& c)
      : c_(c), json_file_((std::filesystem::path(c.init_from) / "config.json").string()) {}

  // `field` = config.json's `value` where the YAML leaves `key` out; else they must agree.
  // `show` writes a value in the message.
  template <typename T, typename Show = decltype([](const T& v) { return fmt::format("{}", v); })>
  void take(const char* key, T& field, const T& value, Show show = {}) {
    const auto at = c_.model_keys_at.find(key);
    if (at == c_.model_keys_at.end()) {
      field = value;
      return;
    }
    if (field != value)  // located at the YAML key already
      throw config::ConfigError(fmt::format(
          "{}: {}, but {} has {} {}; leave model.{} out to take config.json's value, or start from another model",
          at->second, show(field), json_file_, key, show(value), key));
  }

  // `field` = `value` where the YAML leaves `key` out.
  template <typename T>
  void default_to(const char* key, T& field, const T& value) {
    if (!c_.model_keys_at.contains(key)) field = value;
  }

  void finish() {
    if (!c_.model_keys_at.contains("vocab_size")) {
      c_.model_sets_vocab = true;
      c_.vocab_size_at = json_file_ + ": vocab_size";
    }
    if (!c_.model_keys_at.contains("sparse_init")) c_.sparse_init = SparseInit::Dense;
  }

 private:
  TrainConfig& c_;
  std::string json_file_;
};

void resolve_init_from(TrainConfig& c) {
  InitFrom from(c);
  if (auto* gpt = std::get_if<GptConfig>(&c.model)) {
    const GptConfig hf = read_hf_gpt2_config(c.init_from);
    from.take("vocab_size", gpt->vocab_size, hf.vocab_size);
    from.take("n_positions", gpt->context, hf.context);
    from.take("n_layer", gpt->layers, hf.layers);
    from.take("n_head", gpt->heads, hf.heads);
    from.take("n_embd", gpt->embed, hf.embed);
    from.take("layer_norm_epsilon", gpt->layer_norm_eps, hf.layer_norm_eps);
    from.default_to("initializer_range", gpt->init_std, hf.init_std);  // unused by loaded weights
  } else if (auto* bert = std::get_if<BertConfig>(&c.model)) {
    const BertConfig hf = read_hf_bert_config(c.init_from);
    from.take("vocab_size", bert->vocab_size, hf.vocab_size);
    from.take("hidden_size", bert->hidden, hf.hidden);
    from.take("num_hidden_layers", bert->layers, hf.layers);
    from.take("num_attention_heads", bert->heads, hf.heads);
    from.take("intermediate_size", bert->intermediate, hf.intermediate);
    from.take("max_position_embeddings", bert->max_positions, hf.max_positions);
    from.take("type_vocab_size", bert->type_vocab_size, hf.type_vocab_size);
    from.take("hidden_act", bert->act, hf.act, [](Activation a) { return fmt::format("'{}'", hf_hidden_act(a)); });
    from.take("layer_norm_eps", bert->layer_norm_eps, hf.layer_norm_eps);
    from.default_to("hidden_dropout_prob", bert->hidden_dropout, hf.hidden_dropout);
    from.default_to("attention_probs_dropout_prob", bert->attention_dropout, hf.attention_dropout);
    from.default_to("initializer_range", bert->init_std, hf.init_std);
  } else {
    fail("only a gpt or a bert model can start from a Hugging Face model (model.init_from)");
  }
  from.finish();
}

// The keys of BERT's masked-language-modelling data: no other model reads them.
const std::vector<std::string> kMlmInputKeys = {"max_predictions_per_seq", "masked_lm_prob", "short_seq_prob"};

const std::vector<std::string> kInputKeys = {
    "data",       "path",         "tokenizer",      "batch_size",   "max_sequence_length", "validation_fraction",
    "split_seed", "num_examples", "subset_shuffle", "eval_batches", "categories",          "exclude_categories"};

InputConfig read_input(const Value& v, bool eval) {
  std::vector<std::string> keys = kInputKeys;
  keys.insert(keys.end(), kMlmInputKeys.begin(), kMlmInputKeys.end());
  if (!eval) std::erase(keys, "eval_batches");
  const Mapping m = section(v, keys, "a mapping");
  InputConfig in;
  const std::optional<Value> data = m.get("data");
  if (!data) v.fail("missing key 'data' (brown, text_file or fashion_mnist)");
  const std::string d = data->as_string("brown, text_file or fashion_mnist");
  if (d == "brown")
    in.dataset = DatasetKind::Brown;
  else if (d == "text_file")
    in.dataset = DatasetKind::TextFile;
  else if (d == "fashion_mnist")
    in.dataset = DatasetKind::FashionMnist;
  else
    data->expected("brown, text_file or fashion_mnist");
  const bool text = in.dataset != DatasetKind::FashionMnist;
  for (const Mapping::Entry& e : m.entries()) {
    const Value& x = e.value;
    const bool text_only = e.key == "tokenizer" || e.key == "max_sequence_length" || e.key == "validation_fraction" ||
                           e.key == "split_seed";
    if (text_only && !text) e.key_value.fail(fmt::format("'{}' is for text data, not {}", e.key, d));
    if (e.key == "num_examples" && text)
      e.key_value.fail("'num_examples' is for image data; text uses validation_fraction");
    if (e.key == "subset_shuffle" && text)
      e.key_value.fail(fmt::format("'subset_shuffle' is for image data, not {}", d));
    if (e.key == "subset_shuffle" && eval)
      e.key_value.fail("'subset_shuffle' belongs in train_input: one shuffle stream picks both subsets");
    const bool brown_only = e.key == "categories" || e.key == "exclude_categories";
    if (brown_only && in.dataset != DatasetKind::Brown)
      e.key_value.fail(fmt::format("'{}' is for brown data, not {}", e.key, d));
    if (brown_only && eval)
      e.key_value.fail(
          fmt::format("'{}' belongs in train_input: the validation split is taken from its documents", e.key));
    if (brown_only) {
      std::vector<std::string>& list = e.key == "categories" ? in.categories : in.exclude_categories;
      for (const Value& item : x.items("a list of Brown categories")) list.push_back(item.as_string("a category name"));
    }
    if (e.key == "path") in.path = x.as_string("a path");
    if (e.key == "tokenizer") {
      in.tokenizer = x.as_string("byte, gpt2 or wordpiece");
      if (in.tokenizer != "byte" && in.tokenizer != "gpt2" && in.tokenizer != "wordpiece")
        x.expected("byte, gpt2 or wordpiece");
    }
    if (e.key == "batch_size") in.batch_size = int_at_least(x, 1);
    if (e.key == "max_sequence_length") in.sequence_length = int_at_least(x, 1);
    if (e.key == "validation_fraction") in.validation_fraction = number_in(x, 0.0, 1.0, true, "a number in (0, 1)");
    if (e.key == "split_seed") in.split_seed = static_cast<uint64_t>(int_at_least(x, 0));
    if (e.key == "num_examples") in.num_examples = int_at_least(x, 1);
    if (e.key == "subset_shuffle") {
      const std::string shuffle = x.as_string("philox or numpy");
      if (shuffle == "philox")
        in.subset_shuffle = InputConfig::SubsetShuffle::Philox;
      else if (shuffle == "numpy")
        in.subset_shuffle = InputConfig::SubsetShuffle::Numpy;
      else
        x.expected("philox or numpy");
    }
    if (e.key == "eval_batches") in.eval_batches = int_at_least(x, 1);
    if (e.key == "max_predictions_per_seq") in.max_predictions_per_seq = int_at_least(x, 1);
    if (e.key == "masked_lm_prob") {
      in.masked_lm_prob = number_in(x, 0.0, 1.0, true, "a number in (0, 1)");
      if (!(in.masked_lm_prob > 0.0)) x.expected("a number in (0, 1)");
    }
    if (e.key == "short_seq_prob") in.short_seq_prob = number_in(x, 0.0, 1.0, true, "a number in [0, 1)");
  }
  if (in.dataset == DatasetKind::TextFile && in.path.empty()) v.fail("text_file data needs 'path', the text file");
  if (text && !(in.validation_fraction > 0.0)) v.fail("'validation_fraction' must be > 0");
  return in;
}

LrSchedule read_learning_rate(const Value& v) {
  if (!v.is_map()) return LrSchedule::constant(positive_number(v));
  const std::vector<std::string> keys = {
      "scheduler", "initial_learning_rate", "end_learning_rate", "warmup_steps", "total_iters", "step_size", "gamma"};
  const Mapping m = section(v, keys, "a number or a schedule mapping");
  auto get = [&](const char* key) { return m.get(key); };
  const std::optional<Value> kind = get("scheduler");
  const std::optional<Value> initial = get("initial_learning_rate");
  if (!kind) v.fail("missing key 'scheduler' (constant, linear, cosine or step)");
  if (!initial) v.fail("missing key 'initial_learning_rate'");
  const double lr = positive_number(*initial);
  const std::string s = kind->as_string("constant, linear, cosine or step");
  auto need = [&](const char* key) {
    const std::optional<Value> x = get(key);
    if (!x) v.fail(fmt::format("the {} scheduler needs '{}'", s, key));
    return *x;
  };
  auto refuse = [&](std::initializer_list<const char*> not_for) {
    for (const char* key : not_for)
      if (const Mapping::Entry* e = m.find(key))
        e->key_value.fail(fmt::format("'{}' does not apply to the {} scheduler", key, s));
  };
  const std::optional<Value> end_value = get("end_learning_rate");
  const double end = end_value ? number_in(*end_value, 0.0, lr, false, "a number in [0, initial_learning_rate]") : 0.0;
  LrSchedule schedule = LrSchedule::constant(lr);
  config::at_value(v, [&] {
    if (s == "constant") {
      refuse({"end_learning_rate", "total_iters", "step_size", "gamma"});
    } else if (s == "linear") {
      refuse({"step_size", "gamma"});
      schedule = LrSchedule::linear(lr, int_at_least(need("total_iters"), 1), end);
    } else if (s == "cosine") {
      refuse({"step_size", "gamma"});
      schedule = LrSchedule::cosine(lr, int_at_least(need("total_iters"), 1), end);
    } else if (s == "step") {
      refuse({"end_learning_rate", "total_iters"});
      const std::optional<Value> gamma_value = get("gamma");
      const double gamma = gamma_value ? number_in(*gamma_value, 0.0, 1.0, false, "a number in (0, 1]") : 0.1;
      schedule = LrSchedule::step(lr, int_at_least(need("step_size"), 1), gamma);
    } else {
      kind->expected("constant, linear, cosine or step");
    }
  });
  if (const std::optional<Value> w = get("warmup_steps")) schedule = schedule.with_warmup(int_at_least(*w, 0));
  return schedule;
}

OptimizerConfig read_optimizer(const Value& v) {
  const std::vector<std::string> keys = {
      "optimizer_type", "learning_rate",     "weight_decay",          "betas", "eps", "momentum", "nesterov",
      "dampening",      "max_gradient_norm", "decoupled_weight_decay"};
  const Mapping m = section(v, keys, "a mapping");
  OptimizerConfig o;
  if (const std::optional<Value> t = m.get("optimizer_type")) {
    o.type = t->as_string("adamw or sgd");
    for (char& ch : o.type) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (o.type != "adamw" && o.type != "sgd") t->expected("adamw or sgd");
  }
  const bool adam = o.type == "adamw";
  if (adam) o.adamw.weight_decay = 0.01;
  for (const Mapping::Entry& e : m.entries()) {
    const Value& x = e.value;
    const bool adam_only = e.key == "betas" || e.key == "eps";
    const bool sgd_only =
        e.key == "momentum" || e.key == "nesterov" || e.key == "dampening" || e.key == "decoupled_weight_decay";
    if ((adam_only && !adam) || (sgd_only && adam))
      e.key_value.fail(fmt::format("'{}' does not apply to the {} optimizer", e.key, o.type));
    if (e.key == "learning_rate") o.learning_rate = read_learning_rate(x);
    if (e.key == "weight_decay") {
      const double wd = number_in(x, 0.0, 1e9, false, "a number >= 0");
      o.adamw.weight_decay = wd;
      o.sgd.weight_decay = wd;
    }
    if (e.key == "betas") {
      const std::vector<Value> b = x.items("a list of two numbers in [0, 1)");
      if (b.size() != 2) x.expected("a list of two numbers in [0, 1)");
      o.adamw.beta1 = number_in(b[0], 0.0, 1.0, true, "a number in [0, 1)");
      o.adamw.beta2 = number_in(b[1], 0.0, 1.0, true, "a number in [0, 1)");
    }
    if (e.key == "eps") o.adamw.eps = number_in(x, 0.0, 1.0, false, "a number in [0, 1]");
    if (e.key == "momentum") o.sgd.momentum = number_in(x, 0.0, 1.0, false, "a number in [0, 1]");
    if (e.key == "dampening") o.sgd.dampening = number_in(x, 0.0, 1.0, false, "a number in [0, 1]");
    if (e.key == "nesterov") o.sgd.nesterov = x.as_bool("true or false");
    if (e.key == "decoupled_weight_decay") o.sgd.decoupled_weight_decay = x.as_bool("true or false");
    if (e.key == "max_gradient_norm") o.max_gradient_norm = number_in(x, 0.0, 1e30, false, "a number >= 0");
  }
  if (!m.has("learning_rate")) v.fail("missing key 'learning_rate'");
  if (o.sgd.nesterov && (o.sgd.momentum <= 0.0 || o.sgd.dampening != 0.0))
    v.fail("nesterov needs momentum > 0 and dampening 0");
  return o;
}

RunConfig read_run(const Value& v) {
  const std::vector<std::string> keys = {"max_steps",        "num_epochs",        "log_steps",   "checkpoint_steps",
                                         "eval_frequency",   "keep_checkpoints",  "seed",        "num_threads",
                                         "nonfinite_policy", "loss_spike_factor", "tensorboard", "bucket_cap_mb"};
  const Mapping m = section(v, keys, "a mapping");
  RunConfig r;
  for (const Mapping::Entry& e : m.entries()) {
    const Value& x = e.value;
    if (e.key == "max_steps") r.max_steps = int_at_least(x, 1);
    if (e.key == "num_epochs") r.num_epochs = int_at_least(x, 1);
    if (e.key == "log_steps") r.log_steps = int_at_least(x, 1);
    if (e.key == "checkpoint_steps") r.checkpoint_steps = int_at_least(x, 0);
    if (e.key == "eval_frequency") r.eval_frequency = int_at_least(x, 0);
    if (e.key == "keep_checkpoints") r.keep_checkpoints = int_at_least(x, 1);
    if (e.key == "seed") r.seed = static_cast<uint64_t>(int_at_least(x, 0));
    if (e.key == "num_threads") r.num_threads = static_cast<int>(int_at_least(x, 1));
    if (e.key == "nonfinite_policy") {
      const std::string policy = x.as_string("skip or stop");
      if (policy != "skip" && policy != "stop") x.expected("skip or stop");
      r.nonfinite_policy = policy == "stop" ? NonfinitePolicy::Stop : NonfinitePolicy::Skip;
    }
    if (e.key == "loss_spike_factor") {
      r.loss_spike_factor = x.as_number("a number > 1, or 0 for off");
      if (r.loss_spike_factor != 0.0 && !(r.loss_spike_factor > 1.0)) x.expected("a number > 1, or 0 for off");
    }
    if (e.key == "tensorboard") r.tensorboard = x.as_bool("true or false");
    if (e.key == "bucket_cap_mb") {
      r.bucket_cap_mb = x.as_number("a number of MiB > 0");
      if (!(r.bucket_cap_mb > 0.0 && r.bucket_cap_mb <= 65536.0)) x.expected("a number of MiB in (0, 65536]");
    }
  }
  if (m.has("max_steps") == m.has("num_epochs")) v.fail("give exactly one of 'max_steps' and 'num_epochs'");
  return r;
}

TrainConfig read_train_document(const Source& src) {
  const config::Documents documents = config::load_documents(src);
  if (documents.count != 1) fail("{}: expected one YAML document, found {}", src.file, documents.count);
  const YAML::Node root = documents.first;
  const Value top(root, "", src, root.Mark());
  const std::vector<std::string> sections = {"model",    "train_input", "eval_input", "optimizer",
                                             "sparsity", "runconfig",   "trainer"};
  const Mapping m(top, "a mapping of the sections model, train_input, eval_input, optimizer, sparsity, runconfig");
  m.check_keys(sections, [&](const std::string& key) {
    return fmt::format("unknown section{}; a training config has {}", config::did_you_mean(key, sections),
                       config::one_of(sections, "and"));
  });
  // The Model Zoo 2.4+ place of the sparsity section, trainer.init.sparsity (load_sparsity_yaml
  // reads it there); nothing else of a trainer section is read, so nothing else is accepted.
  if (const std::optional<Value> trainer = m.get("trainer")) {
    const auto only = [](const std::string&) {
      return std::string("not read; a training config takes trainer.init.sparsity only (the sparsity section)");
    };
    const Mapping t(*trainer, "a mapping holding init.sparsity");
    t.check_keys({"init"}, only);
    if (const std::optional<Value> init = t.get("init"))
      Mapping(*init, "a mapping holding sparsity").check_keys({"sparsity"}, only);
  }
  TrainConfig c;
  c.file = src.file;
  c.text = src.text;
  for (const char* required : {"model", "train_input", "optimizer", "runconfig"})
    if (!m.has(required)) top.fail(fmt::format("missing section '{}'", required));
  try {
    c.model = read_model(*m.get("model"), c.model_sets_vocab, c.sparse_init, c.precision);
    c.train_input = read_input(*m.get("train_input"), false);
    c.eval_input = m.has("eval_input") ? read_input(*m.get("eval_input"), true) : c.train_input;
    c.optimizer = read_optimizer(*m.get("optimizer"));
    c.run = read_run(*m.get("runconfig"));
  } catch (const YAML::Exception& e) {
    throw Error(config::located(src, e.mark, e.msg));
  }
  const bool image = c.train_input.dataset == DatasetKind::FashionMnist;
  if (c.is_text() == image)
    m.get("train_input")
        ->fail(fmt::format("{} data does not fit the {} model", dataset_name(c.train_input.dataset), c.model_name()));
  if ((c.eval_input.dataset == DatasetKind::FashionMnist) != image)
    m.get("eval_input")->fail("eval_input must be the same kind of data as train_input");
  if (c.run.num_epochs > 0 && c.is_gpt())
    m.get("runconfig")->fail("'num_epochs' is for data read in epochs; gpt samples its windows: use 'max_steps'");
  // Only a bert model reads the masked-language-modelling keys; gpt and mlp would ignore them.
  if (!c.is_bert())
    for (const char* section : {"train_input", "eval_input"}) {
      const std::optional<Value> input = m.get(section);
      if (!input) continue;
      const Mapping given(*input, "");
      for (const std::string& key : kMlmInputKeys)
        if (const Mapping::Entry* e = given.find(key))
          e->key_value.fail(
              fmt::format("'{}' is for bert models (masked language modelling), not {}", key, c.model_name()));
    }
  if (c.is_text() && c.train_input.tokenizer != c.eval_input.tokenizer)
    m.get("eval_input")->fail("eval_input must use the tokenizer of train_input");
  const Mapping model(*m.get("model"), "");
  for (const Mapping::Entry& e : model.entries())
    c.model_keys_at[e.key] = config::located(e.value.source(), e.value.mark(), e.value.path());
  if (const std::optional<Value> from = model.get("init_from")) {
    c.init_from = init_from_dir(from->as_string("hf:DIR"), config_base_dir(c.file));
    if (c.init_from.empty()) from->expected("hf:DIR, a Hugging Face model directory");
    config::at_value(*from, [&] { resolve_init_from(c); });
  }
  if (c.is_text()) {
    if (c.model_keys_at.contains("vocab_size")) c.vocab_size_at = c.model_keys_at.at("vocab_size");
    // A sequence longer than the context has no position embedding: refused here, at the key,
    // rather than when the data is read (`sparsetrain config` reads none).
    const auto* gpt = std::get_if<GptConfig>(&c.model);
    const int64_t context = gpt ? gpt->context : std::get<BertConfig>(c.model).max_positions;
    const char* context_key = gpt ? "n_positions" : "max_position_embeddings";
    for (const char* section : {"train_input", "eval_input"}) {
      const std::optional<Value> input = m.get(section);
      const std::optional<Value> length = input ? Mapping(*input, "").get("max_sequence_length") : std::nullopt;
      if (length && length->as_int("an integer") > context)
        length->fail(
            fmt::format("expected at most model.{} ({}), got {}: the model has no position beyond its context; lower "
                        "max_sequence_length or raise model.{}",
                        context_key, context, length->as_int("an integer"), context_key));
    }
  }
  c.sparsity = load_sparsity_yaml(src.text, src.file);
  return c;
}

// The sections only a training config has (sparsity: a sparsity file has it too).
const std::vector<std::string> kTrainingSections = {"model", "train_input", "eval_input", "optimizer", "runconfig"};

// A training section, or a misspelling close to one (`models:`), which the training loader then
// names with its suggestion instead of a sparsity-only read that checks nothing.
bool names_a_training_section(const std::string& key) {
  return std::find(kTrainingSections.begin(), kTrainingSections.end(), key) != kTrainingSections.end() ||
         !config::did_you_mean(key, kTrainingSections).empty();
}

}  // namespace

TrainConfig load_train_config_yaml(const std::string& text, const std::string& file) {
  return read_train_document(Source{file, text});
}

namespace {

// Makes the relative paths of train_input, eval_input and model.init_from absolute: against the
// directory of the config file (config_base_dir). The config text gets the absolute paths, so its
// copy in a model directory (params.yaml) reads the same data and weights from wherever it is used.
void resolve_data_paths(TrainConfig& c) {
  namespace fs = std::filesystem;
  const fs::path base = config_base_dir(c.file);
  std::vector<std::string> resolved;
  YAML::Node root = YAML::Load(c.text);
  if (!c.init_from.empty()) {
    const std::string given = root["model"]["init_from"].as<std::string>();
    if (given != "hf:" + c.init_from) {
      root["model"]["init_from"] = "hf:" + c.init_from;
      resolved.push_back(fmt::format("model.init_from {}", given));
    }
  }
  for (const auto& [in, section] : {std::pair{&c.train_input, "train_input"}, {&c.eval_input, "eval_input"}}) {
    if (in->path.empty() || fs::path(in->path).is_absolute()) continue;
    const std::string absolute = (base / in->path).lexically_normal().string();
    const YAML::Node given = std::as_const(root)[section];
    if (given.IsDefined() && given.IsMap() && given["path"].IsDefined()) {
      root[section]["path"] = absolute;
      resolved.push_back(fmt::format("{}.path {}", section, in->path));
    }
    in->path = absolute;
  }
  if (resolved.empty()) return;
  YAML::Emitter out;
  out << root;
  c.text = fmt::format("# {} with {} made absolute (relative to {})\n{}\n", c.file, fmt::join(resolved, ", "),
                       base.string(), out.c_str());
}

}  // namespace

TrainConfig load_train_config_file(const std::string& path) {
  TrainConfig c = load_train_config_yaml(read_file(path), path);
  resolve_data_paths(c);
  return c;
}

void apply_run_overrides(TrainConfig& config, const RunOverrides& o) {
  std::vector<std::string> given;
  YAML::Node root = YAML::Load(config.text);
  YAML::Node run = root["runconfig"];
  if (o.max_steps) {
    config.run.max_steps = *o.max_steps;
    config.run.num_epochs = 0;
    run["max_steps"] = *o.max_steps;
    run.remove("num_epochs");
    given.push_back(fmt::format("--max_steps {}", *o.max_steps));
  }
  if (o.seed) {
    config.run.seed = *o.seed;
    run["seed"] = *o.seed;
    given.push_back(fmt::format("--seed {}", *o.seed));
  }
  if (o.num_threads) {
    config.run.num_threads = *o.num_threads;
    run["num_threads"] = *o.num_threads;
    given.push_back(fmt::format("--threads {}", *o.num_threads));
  }
  if (o.precision) {
    config.precision = *o.precision;
    YAML::Node model = root["model"];
    if (*o.precision == Precision::Bf16) {
      model["mixed_precision"] = true;
      model["fp16_type"] = "bfloat16";
    } else {
      model.remove("mixed_precision");
      model.remove("fp16_type");
    }
    given.push_back(fmt::format("--precision {}", precision_name(*o.precision)));
  }
  if (o.init_from) {
    config.init_from = init_from_dir(*o.init_from, std::filesystem::current_path());
    if (config.init_from.empty())
      fail("--init_from: expected hf:DIR, a Hugging Face model directory, got '{}'", *o.init_from);
    resolve_init_from(config);
    root["model"]["init_from"] = "hf:" + config.init_from;
    given.push_back(fmt::format("--init_from {}", *o.init_from));
  }
  if (o.eval_batches) {
    config.eval_input.eval_batches = *o.eval_batches;
    // Without an eval_input section evaluation reads train_input's data: the copy says so.
    if (!root["eval_input"]) root["eval_input"] = YAML::Clone(root["train_input"]);
    root["eval_input"]["eval_batches"] = *o.eval_batches;
    given.push_back(fmt::format("--eval_batches {}", *o.eval_batches));
  }
  if (given.empty()) return;
  YAML::Emitter out;
  out << root;
  config.text =
      fmt::format("# {} with the command-line overrides {}\n{}\n", config.file, fmt::join(given, ", "), out.c_str());
}

std::variant<TrainConfig, SparsityConfig> load_train_or_sparsity_file(const std::string& path) {
  const std::string text = read_file(path);
  bool training = false;
  try {
    const config::Documents documents = config::load_documents(Source{path, text});
    if (documents.count == 1 && documents.first.IsMap())
      for (auto it = documents.first.begin(); it != documents.first.end() && !training; ++it)
        training = it->first.IsScalar() && names_a_training_section(it->first.Scalar());
  } catch (const Error&) {
    // Not valid YAML: the sparsity loader says where.
  }
  if (training) return load_train_config_yaml(text, path);
  return load_sparsity_yaml(text, path);
}

}  // namespace sparsetrain
