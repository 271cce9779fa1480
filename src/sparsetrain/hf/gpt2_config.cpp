#include "sparsetrain/hf/gpt2_config.h"

#include <fmt/format.h>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/json_text.h"
#include "sparsetrain/hf/config_float.h"

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

namespace {

// A value of the file in a message: bounded in length and depth (core/json_text.h), so a hostile
// config.json cannot make the message itself overflow the stack.
std::string shown(const json& v) { return v.is_string() ? fmt::format("'{}'", v.get<std::string>()) : json_text(v); }

int64_t positive_int(const json& j, const char* field, const std::string& file) {
  if (!j.contains(field)) fail("{}: missing '{}'", file, field);
  const json& v = j.at(field);
  if (!v.is_number_integer() || v.get<int64_t>() < 1)
    fail("{}: '{}' is {}; expected an integer >= 1", file, field, shown(v));
  return v.get<int64_t>();
}

double positive_number(const json& j, const char* field, double fallback, const std::string& file) {
  if (!j.contains(field)) return fallback;  // transformers' GPT2Config default
  const json& v = j.at(field);
  if (!v.is_number() || !(v.get<double>() > 0.0)) fail("{}: '{}' is {}; expected a number > 0", file, field, shown(v));
  return v.get<double>();
}

// A boolean field whose other value describes a model sparsetrain's GPT does not compute.
void require_flag(const json& j, const char* field, bool needed, const std::string& file, const char* why) {
  if (!j.contains(field)) return;  // transformers' default is the needed value
  const json& v = j.at(field);
  if (!v.is_boolean()) fail("{}: '{}' is {}; expected true or false", file, field, shown(v));
  if (v.get<bool>() != needed) fail("{}: '{}' is {}: {}; sparsetrain's GPT cannot load it", file, field, shown(v), why);
}

}  // namespace

GptConfig hf_gpt2_config_from_json(const json& j, const std::string& file) {
  if (!j.is_object()) fail("{}: expected a JSON object", file);
  const json model_type = j.value("model_type", json());
  if (model_type != "gpt2")
    fail("{}: 'model_type' is {}; sparsetrain imports Hugging Face GPT-2 models ('gpt2')", file, shown(model_type));
  GptConfig c;
  c.vocab_size = positive_int(j, "vocab_size", file);
  c.context = positive_int(j, "n_positions", file);
  c.embed = positive_int(j, "n_embd", file);
  c.layers = positive_int(j, "n_layer", file);
  c.heads = positive_int(j, "n_head", file);
  if (c.embed % c.heads != 0) fail("{}: 'n_embd' ({}) is not a multiple of 'n_head' ({})", file, c.embed, c.heads);
  if (const json inner = j.value("n_inner", json()); !inner.is_null() && inner != json(4 * c.embed))
    fail("{}: 'n_inner' is {}; sparsetrain's GPT has an MLP of 4 * n_embd = {} units", file, shown(inner), 4 * c.embed);
  // gelu_new, gelu_pytorch_tanh and gelu_fast are all 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  const json act = j.value("activation_function", json("gelu_new"));
  if (act != "gelu_new" && act != "gelu_pytorch_tanh" && act != "gelu_fast")
    fail(
        "{}: 'activation_function' is {}; sparsetrain's GPT computes GELU's tanh form ('gelu_new'), so this model's "
        "outputs would differ{}",
        file, shown(act), act == "gelu" ? " ('gelu' is the erf form)" : "");
  // Computed in float32: a value float cannot hold (or rounds to 0) is refused, not cast.
  const double eps = positive_number(j, "layer_norm_epsilon", 1e-5, file);
  if (!(eps >= kLayerNormEpsMin && eps <= kLayerNormEpsMax))
    fail("{}: 'layer_norm_epsilon' is {}; expected a number float32 holds above 0", file,
         shown(j.at("layer_norm_epsilon")));
  c.layer_norm_eps = static_cast<float>(eps);
  c.init_std = positive_number(j, "initializer_range", 0.02, file);
  require_flag(j, "scale_attn_weights", true, file, "attention scores are not divided by sqrt(head width)");
  require_flag(j, "scale_attn_by_inverse_layer_idx", false, file, "attention scores are divided by the layer index");
  require_flag(j, "add_cross_attention", false, file, "the blocks have cross-attention");
  require_flag(j, "tie_word_embeddings", true, file, "the output head is not the token embedding");
  return c;
}

}  // namespace sparsetrain
