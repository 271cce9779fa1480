#pragma once
// Hugging Face BERT's config.json (transformers' BertConfig) for sparsetrain's BertConfig.
// sparsetrain's BERT is BERT's architecture (post-LayerNorm layers, learned absolute positions,
// token types, the decoder tied to the word embeddings) under BertForPreTraining's tensor names,
// or BertForMaskedLM's modules when the next-sentence task is off (no pooler, no
// cls.seq_relationship), so every BertConfig has a config.json.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "sparsetrain/models/bert.h"

namespace sparsetrain {

// config.json for `config`: BertForPreTraining (next sentence on) or BertForMaskedLM, with
// BertConfig's field names; hidden_act "gelu" is the erf form, "gelu_new" the tanh form.
nlohmann::json hf_bert_config_json(const BertConfig& config, int32_t pad_token_id);

}  // namespace sparsetrain
