#pragma once
// A Hugging Face BERT's tensors as sparsetrain's BERT's. The names and layout are the same
// (BertForPreTraining's; weights [out, in] as nn.Linear stores them), so reading is a check,
// plus what files written by transformers and by Google's TensorFlow conversions hold besides:
//   *.LayerNorm.gamma / .beta         the LayerNorm weight / bias under their TensorFlow names,
//                                     which transformers renames on loading; so does this
//   cls.predictions.decoder.weight    the tied decoder stored anyway: must equal the word embedding
//   cls.predictions.decoder.bias      the same tensor as cls.predictions.bias: must equal it
//   bert.pooler.*, cls.seq_relationship.*   the next-sentence head, left out when the run trains
//                                     without that task (model.disable_nsp: true)
// (bert.embeddings.position_ids, an integer buffer, is left out when the file is read.)
#include <cstdint>
#include <string>
#include <vector>

#include "sparsetrain/models/bert.h"
#include "sparsetrain/nn/state_dict.h"

namespace sparsetrain {

struct HfBertTensor {
  std::string name;  // bert.encoder.layer.0.attention.self.query.weight
  std::vector<int64_t> shape;
  std::string dims;  // the shape in config.json's fields: "[hidden_size, hidden_size]"
};

// Every tensor of the BERT `config` describes (the next-sentence head when config.next_sentence),
// in sparsetrain's parameter order.
std::vector<HfBertTensor> hf_bert_tensors(const BertConfig& config);

// A Hugging Face BERT file's tensors (`file` names it in messages) as sparsetrain's, for a model of
// `config` (read from `config_file`). Strict: a missing or unexpected tensor, one there twice (as
// weight and gamma), a shape other than the config's, a value that is not finite, or an untied
// decoder is an Error naming the tensor (and both shapes).
StateDict from_hf_bert(const StateDict& hf, const BertConfig& config, const std::string& file,
                       const std::string& config_file);

}  // namespace sparsetrain
