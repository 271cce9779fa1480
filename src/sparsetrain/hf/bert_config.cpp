#include "sparsetrain/hf/bert_config.h"

#include "sparsetrain/core/error.h"
#include "sparsetrain/hf/config_fields.h"

namespace sparsetrain {

using json = nlohmann::json;

const char* hf_hidden_act(Activation act) {
  switch (act) {
    case Activation::GeluErf: return "gelu";
    case Activation::Gelu: return "gelu_new";
    case Activation::ReLU: return "relu";
    default: fail("export: a BERT with the {} activation has no Hugging Face hidden_act", activation_name(act));
  }
}

json hf_bert_config_json(const BertConfig& c, int32_t pad_token_id) {
  return {
      {"architectures", {c.next_sentence ? "BertForPreTraining" : "BertForMaskedLM"}},
      {"model_type", "bert"},
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.hidden},
      {"num_hidden_layers", c.layers},
      {"num_attention_heads", c.heads},
      {"intermediate_size", c.intermediate},
      {"hidden_act", hf_hidden_act(c.act)},
      {"hidden_dropout_prob", hf_config_float(c.hidden_dropout)},
      {"attention_probs_dropout_prob", hf_config_float(c.attention_dropout)},
      {"max_position_embeddings", c.max_positions},
      {"type_vocab_size", c.type_vocab_size},
      {"initializer_range", c.init_std},
      {"layer_norm_eps", hf_config_float(c.layer_norm_eps)},
      {"pad_token_id", pad_token_id},
      {"position_embedding_type", "absolute"},
      {"classifier_dropout", nullptr},
      {"tie_word_embeddings", true},
      {"use_cache", true},
      {"torch_dtype", "float32"},
  };
}

namespace {

// transformers' ACT2FN names for the three activations sparsetrain's BERT computes.
Activation activation_of(const json& name, const std::string& file) {
  if (name == "gelu" || name == "gelu_python") return Activation::GeluErf;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Activation::Gelu;
  if (name == "relu") return Activation::ReLU;
  fail(
      "{}: 'hidden_act' is {}; sparsetrain's BERT computes 'gelu' (the erf form; also 'gelu_python'), 'gelu_new' (the "
      "tanh form; also 'gelu_pytorch_tanh', 'gelu_fast') or 'relu'",
      file, hf_shown(name));
}

}  // namespace

BertConfig hf_bert_config_from_json(const json& j, const std::string& file) {
  constexpr const char* kModel = "sparsetrain's BERT";
  if (!j.is_object()) fail("{}: expected a JSON object", file);
  const json model_type = j.value("model_type", json());
  if (model_type != "bert")
    fail("{}: 'model_type' is {}; sparsetrain's bert model imports Hugging Face BERT models ('bert')", file,
         hf_shown(model_type));
  BertConfig c;
  c.vocab_size = hf_positive_int(j, "vocab_size", file);
  c.hidden = hf_positive_int(j, "hidden_size", file);
  c.layers = hf_positive_int(j, "num_hidden_layers", file);
  c.heads = hf_positive_int(j, "num_attention_heads", file);
  if (c.hidden % c.heads != 0)
    fail("{}: 'hidden_size' ({}) is not a multiple of 'num_attention_heads' ({})", file, c.hidden, c.heads);
  c.intermediate = hf_positive_int(j, "intermediate_size", file);
  // The rest has BertConfig's defaults when absent.
  c.max_positions = j.contains("max_position_embeddings") ? hf_positive_int(j, "max_position_embeddings", file) : 512;
  c.type_vocab_size = j.contains("type_vocab_size") ? hf_positive_int(j, "type_vocab_size", file) : 2;
  c.act = activation_of(j.value("hidden_act", json("gelu")), file);
  c.hidden_dropout = hf_probability(j, "hidden_dropout_prob", 0.1, file);
  c.attention_dropout = hf_probability(j, "attention_probs_dropout_prob", 0.1, file);
  c.layer_norm_eps = hf_layer_norm_eps(j, "layer_norm_eps", 1e-12, file);
  c.init_std = hf_positive_number(j, "initializer_range", 0.02, file);
  if (const json type = j.value("position_embedding_type", json("absolute")); type != "absolute")
    fail("{}: 'position_embedding_type' is {}; sparsetrain's BERT has learned absolute positions ('absolute')", file,
         hf_shown(type));
  hf_require_flag(j, "is_decoder", false, file, "the model is a causal decoder", kModel);
  hf_require_flag(j, "add_cross_attention", false, file, "the layers have cross-attention", kModel);
  hf_require_flag(j, "tie_word_embeddings", true, file, "the decoder is not the word embedding", kModel);
  c.validate();
  return c;
}

}  // namespace sparsetrain
