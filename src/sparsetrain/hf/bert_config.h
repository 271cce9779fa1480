#pragma once
// Hugging Face BERT's config.json (transformers' BertConfig) for sparsetrain's BertConfig.
// sparsetrain's BERT is BERT's architecture (post-LayerNorm layers, learned absolute positions,
// token types, the decoder tied to the word embeddings) under BertForPreTraining's tensor names,
// or BertForMaskedLM's modules when the next-sentence task is off (no pooler, no
// cls.seq_relationship), so every BertConfig has a config.json.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "sparsetrain/models/bert.h"

namespace sparsetrain {

// The name config.json's hidden_act gives `act`; an Error for an activation it has no name for.
const char* hf_hidden_act(Activation act);

// config.json for `config`: BertForPreTraining (next sentence on) or BertForMaskedLM, with
// BertConfig's field names; hidden_act "gelu" is the erf form, "gelu_new" the tanh form.
nlohmann::json hf_bert_config_json(const BertConfig& config, int32_t pad_token_id);

// The BertConfig a config.json describes; an Error names `file` and the field that is missing, of
// the wrong type, or describes something sparsetrain's BERT does not compute (another model_type,
// relative position embeddings, a decoder or cross-attention, an untied decoder, an unknown
// hidden_act). `architectures` is not read: the hub's bert-base-uncased says BertForMaskedLM and
// holds the next-sentence head too, so whether the task is on is the run's config's choice
// (model.disable_nsp) and the weights are checked against it. next_sentence is left on.
BertConfig hf_bert_config_from_json(const nlohmann::json& config, const std::string& file);

}  // namespace sparsetrain
