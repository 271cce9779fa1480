#pragma once
// A Hugging Face model directory holding a GPT-2 or a BERT: what `sparsetrain export --format hf`
// writes, and what `model.init_from: hf:DIR` reads
// (docs/formats.md#hugging-face-model-directories).
//
//   config.json          GPT2Config's fields (hf/gpt2_config.h) or BertConfig's (hf/bert_config.h)
//   model.safetensors    the weights in Hugging Face's layout (GPT-2: hf/gpt2_tensors.h; BERT:
//                        sparsetrain's own names and layout, which are BertForPreTraining's), F32,
//                        zeros at pruned positions; the tied decoder is left out, as
//                        save_pretrained leaves it out
//   masks.safetensors    sparse models only: `<tensor>_mask` (BOOL, 1 = kept) in the same layout;
//                        transformers ignores it
//   tokenizer files      hf/tokenizer_files.h
#include <string>

#include "sparsetrain/models/bert.h"
#include "sparsetrain/models/gpt.h"
#include "sparsetrain/nn/state_dict.h"
#include "sparsetrain/text/tokenizer.h"

namespace sparsetrain {

// Writes the directory `out` (created if missing; one that holds files is refused, so nothing of
// an earlier export is left beside the new one) from a GPT's state (Gpt::state_dict()).
void write_hf_gpt2_dir(const std::string& out, const StateDict& state, const GptConfig& config,
                       const Tokenizer& tokenizer);

// The same for a BERT's state (Bert::state_dict()).
void write_hf_bert_dir(const std::string& out, const StateDict& state, const BertConfig& config,
                       const Tokenizer& tokenizer);

// The config of the Hugging Face GPT-2 in `dir`. An Error names the directory or file: no such
// directory, no config.json, weights only as a pickle (pytorch_model.bin; refused with the command
// that converts them), sharded weights, no model.safetensors, a config sparsetrain cannot compute.
GptConfig read_hf_gpt2_config(const std::string& dir);

// The weights of the GPT-2 in `dir` under sparsetrain's names and layout, checked against
// read_hf_gpt2_config(dir) (hf/gpt2_tensors.h: from_hf_gpt2).
StateDict read_hf_gpt2_weights(const std::string& dir);

// The config of the Hugging Face BERT in `dir`, refused as read_hf_gpt2_config refuses
// (hf/bert_config.h: hf_bert_config_from_json); next_sentence on.
BertConfig read_hf_bert_config(const std::string& dir);

// The weights of the BERT in `dir` under sparsetrain's names, checked against
// read_hf_bert_config(dir) with the next-sentence head when `next_sentence` (hf/bert_tensors.h:
// from_hf_bert).
StateDict read_hf_bert_weights(const std::string& dir, bool next_sentence);

}  // namespace sparsetrain
