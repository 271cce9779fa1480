#pragma once
// Hugging Face GPT-2's config.json (transformers' GPT2Config) and sparsetrain's GptConfig.
// sparsetrain's GPT is GPT-2's architecture exactly (pre-LayerNorm blocks with biases, attention
// scaled by 1/sqrt(head width), GELU's tanh form, learned positions, a head tied to the token
// embedding), so every GptConfig has a config.json; the reverse holds for the configs whose
// fields describe that architecture, and any other is refused naming the field (docs/formats.md).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sparsetrain/models/gpt.h"

namespace sparsetrain {

// config.json for `config`: GPT2LMHeadModel with HF's field names; dropout 0 (sparsetrain trains
// without it); bos/eos the tokenizer's end-of-text id when it has one.
nlohmann::json hf_gpt2_config_json(const GptConfig& config, std::optional<int32_t> end_of_text);

// The GptConfig a config.json describes; an Error names `file` and the field that is missing,
// of the wrong type, or describes something sparsetrain's GPT does not compute (another
// model_type, the erf GELU, n_inner other than 4 * n_embd, untied head, cross-attention, ...).
GptConfig hf_gpt2_config_from_json(const nlohmann::json& config, const std::string& file);

}  // namespace sparsetrain
