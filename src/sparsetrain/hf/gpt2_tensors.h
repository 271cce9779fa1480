#pragma once
// GPT-2's tensors in Hugging Face's layout and in sparsetrain's. The names are the same but for
// the prefix: sparsetrain's `transformer.h.0.attn.c_attn.weight` is `transformer.h.0.attn.c_attn.weight`
// in a file GPT2LMHeadModel.save_pretrained writes and `h.0.attn.c_attn.weight` in one GPT2Model
// writes (the hub's `gpt2`). The four linear weights of each block (attn.c_attn, attn.c_proj,
// mlp.c_fc, mlp.c_proj) are HF Conv1D weights, [in, out], the transpose of sparsetrain's [out, in];
// every other tensor has the same shape in both. The output head is tied to transformer.wte, so
// the file has no lm_head.weight.
#include <cstdint>
#include <string>
#include <vector>

#include "sparsetrain/models/gpt.h"
#include "sparsetrain/nn/state_dict.h"

namespace sparsetrain {

struct HfGpt2Tensor {
  std::string name;               // sparsetrain's: transformer.h.0.attn.c_attn.weight
  std::vector<int64_t> hf_shape;  // [in, out] for a Conv1D weight
  bool conv1d = false;            // stored transposed in the Hugging Face file
  std::string dims;               // the shape in config.json's fields: "[n_embd, 3 * n_embd]"
};

// Every tensor of the GPT `config` describes, in sparsetrain's parameter order.
std::vector<HfGpt2Tensor> hf_gpt2_tensors(const GptConfig& config);

// sparsetrain's model state (Gpt::state_dict(): zeros at pruned positions, masks beside) in
// Hugging Face's layout, named as GPT2LMHeadModel.save_pretrained names them. With `masks`, the
// `<name>_mask` tensors instead, in the same layout and named `<HF name>_mask` (none for a dense
// model). An Error names a tensor the state lacks.
StateDict to_hf_gpt2(const StateDict& state, const GptConfig& config, bool masks = false);

// A Hugging Face GPT-2 file's tensors (`file` names it in messages) as sparsetrain's, for a model
// of `config` (read from `config_file`). Strict: a missing or unexpected tensor, a shape other
// than the config's, or a value that is not finite is an Error naming the tensor (and both shapes).
// Accepted and left out: the attention buffers older transformers saved (h.N.attn.bias,
// h.N.attn.masked_bias) and an lm_head.weight equal to transformer.wte.weight.
StateDict from_hf_gpt2(const StateDict& hf, const GptConfig& config, const std::string& file,
                       const std::string& config_file);

}  // namespace sparsetrain
