#include "sparsetrain/hf/bert_config.h"

#include "sparsetrain/core/error.h"
#include "sparsetrain/hf/config_float.h"

namespace sparsetrain {

using json = nlohmann::json;

namespace {

const char* hf_activation(Activation act) {
  switch (act) {
    case Activation::GeluErf: return "gelu";
    case Activation::Gelu: return "gelu_new";
    case Activation::ReLU: return "relu";
    default: fail("export: a BERT with the {} activation has no Hugging Face hidden_act", activation_name(act));
  }
}

}  // namespace

json hf_bert_config_json(const BertConfig& c, int32_t pad_token_id) {
  return {
      {"architectures", {c.next_sentence ? "BertForPreTraining" : "BertForMaskedLM"}},
      {"model_type", "bert"},
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.hidden},
      {"num_hidden_layers", c.layers},
      {"num_attention_heads", c.heads},
      {"intermediate_size", c.intermediate},
      {"hidden_act", hf_activation(c.act)},
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

}  // namespace sparsetrain
