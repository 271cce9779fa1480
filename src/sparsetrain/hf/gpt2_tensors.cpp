#include "sparsetrain/hf/gpt2_tensors.h"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "sparsetrain/core/error.h"
#include "sparsetrain/hf/tensor_checks.h"

namespace sparsetrain {

namespace {

constexpr std::string_view kPrefix = "transformer.";

// [rows x cols] row-major -> [cols x rows], for values and mask bytes alike.
template <typename T>
std::vector<T> transposed(const std::vector<T>& v, int64_t rows, int64_t cols) {
  std::vector<T> out(v.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<std::size_t>(c * rows + r)] = v[static_cast<std::size_t>(r * cols + c)];
  return out;
}

// The state's tensor `name`; an Error when it is missing (a model that is not GPT-2 shaped).
const StateTensor& required(const StateDict& state, const std::string& name) {
  const StateTensor* t = state.find(name);
  if (t == nullptr) fail("the model has no tensor '{}'; not a GPT of this config", name);
  return *t;
}

// A buffer of GPT2Attention that older transformers saved with the weights: the causal mask
// (attn.bias) and the masking constant (attn.masked_bias). sparsetrain computes both itself.
bool attention_buffer(std::string_view name) {
  return name.starts_with("h.") && (name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias"));
}

}  // namespace

std::vector<HfGpt2Tensor> hf_gpt2_tensors(const GptConfig& c) {
  const int64_t e = c.embed;
  std::vector<HfGpt2Tensor> all = {
      {"transformer.wte.weight", {c.vocab_size, e}, false, "[vocab_size, n_embd]"},
      {"transformer.wpe.weight", {c.context, e}, false, "[n_positions, n_embd]"},
  };
  auto vector = [&](const std::string& name) { all.push_back({name, {e}, false, "[n_embd]"}); };
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string h = fmt::format("transformer.h.{}.", l);
    vector(h + "ln_1.weight");
    vector(h + "ln_1.bias");
    all.push_back({h + "attn.c_attn.weight", {e, 3 * e}, true, "[n_embd, 3 * n_embd]"});
    all.push_back({h + "attn.c_attn.bias", {3 * e}, false, "[3 * n_embd]"});
    all.push_back({h + "attn.c_proj.weight", {e, e}, true, "[n_embd, n_embd]"});
    vector(h + "attn.c_proj.bias");
    vector(h + "ln_2.weight");
    vector(h + "ln_2.bias");
    all.push_back({h + "mlp.c_fc.weight", {e, 4 * e}, true, "[n_embd, 4 * n_embd]"});
    all.push_back({h + "mlp.c_fc.bias", {4 * e}, false, "[4 * n_embd]"});
    all.push_back({h + "mlp.c_proj.weight", {4 * e, e}, true, "[4 * n_embd, n_embd]"});
    vector(h + "mlp.c_proj.bias");
  }
  vector("transformer.ln_f.weight");
  vector("transformer.ln_f.bias");
  return all;
}

StateDict to_hf_gpt2(const StateDict& state, const GptConfig& config, bool masks) {
  StateDict out;
  for (const HfGpt2Tensor& spec : hf_gpt2_tensors(config)) {
    const std::string suffix = masks ? "_mask" : "";
    StateTensor t;
    if (masks) {
      const StateTensor* mask = state.find(spec.name + suffix);
      if (mask == nullptr) continue;  // a dense parameter
      t = *mask;
    } else {
      t = required(state, spec.name);
    }
    if (spec.conv1d) {
      const int64_t rows = t.shape.at(0), cols = t.shape.at(1);  // sparsetrain's [out, in]
      if (masks)
        t.keep = transposed(t.keep, rows, cols);
      else
        t.values = transposed(t.values, rows, cols);
      t.shape = {cols, rows};
    }
    out.add(std::move(t));
  }
  return out;
}

StateDict from_hf_gpt2(const StateDict& hf, const GptConfig& config, const std::string& file,
                       const std::string& config_file) {
  const std::vector<HfGpt2Tensor> specs = hf_gpt2_tensors(config);
  std::map<std::string, std::size_t> index;  // name without the prefix -> spec
  for (std::size_t i = 0; i < specs.size(); ++i) index[specs[i].name.substr(kPrefix.size())] = i;
  const auto config_values = fmt::format("vocab_size {}, n_positions {}, n_embd {}, n_layer {}", config.vocab_size,
                                         config.context, config.embed, config.layers);
  std::vector<const StateTensor*> found(specs.size(), nullptr);
  const StateTensor* head = nullptr;
  for (const StateTensor& t : hf.tensors) {
    const std::string_view bare =
        std::string_view(t.name).starts_with(kPrefix) ? std::string_view(t.name).substr(kPrefix.size()) : t.name;
    if (attention_buffer(bare)) continue;
    if (bare == "lm_head.weight") {
      head = &t;
      continue;
    }
    const auto it = index.find(std::string(bare));
    if (it == index.end() || t.is_mask)
      fail("{}: unexpected tensor '{}' {}: not part of the GPT-2 that {} describes ({})", file, t.name,
           hf_shape_text(t.shape), config_file, config_values);
    const HfGpt2Tensor& spec = specs[it->second];
    hf_take_tensor(t, found[it->second], spec.name, spec.hf_shape, spec.dims, file, config_file, config_values);
  }
  StateDict out;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const HfGpt2Tensor& spec = specs[i];
    if (found[i] == nullptr)
      fail("{}: no tensor '{}' (or '{}'), {} = {}, which the GPT-2 of {} has ({})", file, spec.name,
           spec.name.substr(kPrefix.size()), spec.dims, hf_shape_text(spec.hf_shape), config_file, config_values);
    StateTensor t{spec.name, spec.hf_shape, false, found[i]->values, {}};
    if (spec.conv1d) {
      t.values = transposed(t.values, spec.hf_shape[0], spec.hf_shape[1]);
      t.shape = {spec.hf_shape[1], spec.hf_shape[0]};
    }
    out.add(std::move(t));
  }
  // Files that store the tied head anyway must store it tied.
  if (head != nullptr && (head->shape != specs[0].hf_shape || head->values != found[0]->values))
    fail(
        "{}: tensor '{}' differs from '{}': the output head is not tied to the token embedding, which sparsetrain's "
        "GPT (and GPT-2) requires",
        file, head->name, found[0]->name);
  return out;
}

}  // namespace sparsetrain
