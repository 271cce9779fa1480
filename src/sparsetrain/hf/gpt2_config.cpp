#include "sparsetrain/hf/gpt2_config.h"

#include <fmt/format.h>

#include "sparsetrain/core/error.h"
#include "sparsetrain/hf/config_fields.h"

namespace sparsetrain {

using json = nlohmann::json;

json hf_gpt2_config_json(const GptConfig& c, std::optional<int32_t> end_of_text) {
  json j = {
      {"architectures", {"GPT2LMHeadModel"}},
      {"model_type", "gpt2"},
      {"vocab_size", c.vocab_size},
      {"n_positions", c.context},
      {"n_ctx", c.context},  // read by transformers releases before n_positions replaced it
      {"n_embd", c.embed},
      {"n_layer", c.layers},
      {"n_head", c.heads},
      {"n_inner", nullptr},  // 4 * n_embd
      {"activation_function", "gelu_new"},
      {"layer_norm_epsilon", hf_config_float(c.layer_norm_eps)},
      {"initializer_range", c.init_std},
      {"resid_pdrop", 0.0},
      {"embd_pdrop", 0.0},
      {"attn_pdrop", 0.0},
      {"scale_attn_weights", true},
      {"scale_attn_by_inverse_layer_idx", false},
      {"reorder_and_upcast_attn", false},
      {"tie_word_embeddings", true},
      {"use_cache", true},
      {"torch_dtype", "float32"},
  };
  if (end_of_text) {
    j["bos_token_id"] = *end_of_text;
    j["eos_token_id"] = *end_of_text;
  }
  return j;
}

GptConfig hf_gpt2_config_from_json(const json& j, const std::string& file) {
  constexpr const char* kModel = "sparsetrain's GPT";
  if (!j.is_object()) fail("{}: expected a JSON object", file);
  const json model_type = j.value("model_type", json());
  if (model_type != "gpt2")
    fail("{}: 'model_type' is {}; sparsetrain imports Hugging Face GPT-2 models ('gpt2')", file, hf_shown(model_type));
  GptConfig c;
  c.vocab_size = hf_positive_int(j, "vocab_size", file);
  c.context = hf_positive_int(j, "n_positions", file);
  c.embed = hf_positive_int(j, "n_embd", file);
  c.layers = hf_positive_int(j, "n_layer", file);
  c.heads = hf_positive_int(j, "n_head", file);
  if (c.embed % c.heads != 0) fail("{}: 'n_embd' ({}) is not a multiple of 'n_head' ({})", file, c.embed, c.heads);
  if (const json inner = j.value("n_inner", json()); !inner.is_null() && inner != json(4 * c.embed))
    fail("{}: 'n_inner' is {}; sparsetrain's GPT has an MLP of 4 * n_embd = {} units", file, hf_shown(inner),
         4 * c.embed);
  // gelu_new, gelu_pytorch_tanh and gelu_fast are all 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  const json act = j.value("activation_function", json("gelu_new"));
  if (act != "gelu_new" && act != "gelu_pytorch_tanh" && act != "gelu_fast")
    fail(
        "{}: 'activation_function' is {}; sparsetrain's GPT computes GELU's tanh form ('gelu_new'), so this model's "
        "outputs would differ{}",
        file, hf_shown(act), act == "gelu" ? " ('gelu' is the erf form)" : "");
  c.layer_norm_eps = hf_layer_norm_eps(j, "layer_norm_epsilon", 1e-5, file);
  c.init_std = hf_positive_number(j, "initializer_range", 0.02, file);
  hf_require_flag(j, "scale_attn_weights", true, file, "attention scores are not divided by sqrt(head width)", kModel);
  hf_require_flag(j, "scale_attn_by_inverse_layer_idx", false, file, "attention scores are divided by the layer index",
                  kModel);
  hf_require_flag(j, "add_cross_attention", false, file, "the blocks have cross-attention", kModel);
  hf_require_flag(j, "tie_word_embeddings", true, file, "the output head is not the token embedding", kModel);
  return c;
}

}  // namespace sparsetrain
