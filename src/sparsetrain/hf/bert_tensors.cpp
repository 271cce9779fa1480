#include "sparsetrain/hf/bert_tensors.h"

#include <fmt/format.h>

#include <map>

#include "sparsetrain/core/error.h"
#include "sparsetrain/hf/tensor_checks.h"

namespace sparsetrain {

namespace {

// The name transformers loads a tensor under: LayerNorm's TensorFlow gamma and beta renamed.
std::string loaded_name(std::string_view name) {
  for (const auto& [from, to] :
       {std::pair{"LayerNorm.gamma", "LayerNorm.weight"}, {"LayerNorm.beta", "LayerNorm.bias"}})
    if (name.ends_with(from)) return std::string(name.substr(0, name.size() - std::string_view(from).size())) + to;
  return std::string(name);
}

bool next_sentence_head(std::string_view name) {
  return name.starts_with("bert.pooler.") || name.starts_with("cls.seq_relationship.");
}

}  // namespace

std::vector<HfBertTensor> hf_bert_tensors(const BertConfig& c) {
  std::vector<HfBertTensor> all;
  const auto add = [&](std::string name, std::vector<int64_t> shape, std::string dims) {
    all.push_back({std::move(name), std::move(shape), std::move(dims)});
  };
  const int64_t h = c.hidden, i = c.intermediate;
  const auto linear = [&](const std::string& name, int64_t out, int64_t in, const char* out_dim, const char* in_dim) {
    add(name + ".weight", {out, in}, fmt::format("[{}, {}]", out_dim, in_dim));
    add(name + ".bias", {out}, fmt::format("[{}]", out_dim));
  };
  const auto norm = [&](const std::string& name) {
    add(name + ".weight", {h}, "[hidden_size]");
    add(name + ".bias", {h}, "[hidden_size]");
  };
  add("bert.embeddings.word_embeddings.weight", {c.vocab_size, h}, "[vocab_size, hidden_size]");
  add("bert.embeddings.position_embeddings.weight", {c.max_positions, h}, "[max_position_embeddings, hidden_size]");
  add("bert.embeddings.token_type_embeddings.weight", {c.type_vocab_size, h}, "[type_vocab_size, hidden_size]");
  norm("bert.embeddings.LayerNorm");
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string y = fmt::format("bert.encoder.layer.{}.", l);
    for (const char* part : {"query", "key", "value"})
      linear(y + "attention.self." + part, h, h, "hidden_size", "hidden_size");
    linear(y + "attention.output.dense", h, h, "hidden_size", "hidden_size");
    norm(y + "attention.output.LayerNorm");
    linear(y + "intermediate.dense", i, h, "intermediate_size", "hidden_size");
    linear(y + "output.dense", h, i, "hidden_size", "intermediate_size");
    norm(y + "output.LayerNorm");
  }
  if (c.next_sentence) linear("bert.pooler.dense", h, h, "hidden_size", "hidden_size");
  add("cls.predictions.bias", {c.vocab_size}, "[vocab_size]");  // a module's own parameters come first
  linear("cls.predictions.transform.dense", h, h, "hidden_size", "hidden_size");
  norm("cls.predictions.transform.LayerNorm");
  if (c.next_sentence) linear("cls.seq_relationship", 2, h, "2", "hidden_size");
  return all;
}

StateDict from_hf_bert(const StateDict& hf, const BertConfig& config, const std::string& file,
                       const std::string& config_file) {
  const std::vector<HfBertTensor> specs = hf_bert_tensors(config);
  std::map<std::string, std::size_t, std::less<>> index;
  for (std::size_t i = 0; i < specs.size(); ++i) index[specs[i].name] = i;
  const auto config_values = fmt::format("vocab_size {}, hidden_size {}, num_hidden_layers {}, intermediate_size {}",
                                         config.vocab_size, config.hidden, config.layers, config.intermediate);
  std::vector<const StateTensor*> found(specs.size(), nullptr);
  const StateTensor* decoder = nullptr;
  const StateTensor* decoder_bias = nullptr;
  for (const StateTensor& t : hf.tensors) {
    if (t.name == "cls.predictions.decoder.weight" || t.name == "cls.predictions.decoder.bias") {
      (t.name.ends_with("weight") ? decoder : decoder_bias) = &t;
      continue;
    }
    if (!config.next_sentence && next_sentence_head(t.name)) continue;
    const std::string name = loaded_name(t.name);
    const auto it = index.find(name);
    if (it == index.end() || t.is_mask) {
      const bool bare = !t.name.starts_with("bert.") && !t.name.starts_with("cls.");
      fail("{}: unexpected tensor '{}' {}: not part of the BERT that {} describes ({}{}){}", file, t.name,
           hf_shape_text(t.shape), config_file, config_values,
           config.next_sentence ? ", next-sentence head on" : ", next-sentence head off",
           bare ? "; sparsetrain starts from BertForPreTraining or BertForMaskedLM weights (names 'bert.' and 'cls.'), "
                  "not a BertModel without the pre-training heads"
                : "");
    }
    const HfBertTensor& spec = specs[it->second];
    hf_take_tensor(t, found[it->second], spec.name, spec.shape, spec.dims, file, config_file, config_values);
  }
  StateDict out;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const HfBertTensor& spec = specs[i];
    if (found[i] == nullptr) {
      const bool nsp = next_sentence_head(spec.name);
      fail("{}: no tensor '{}', {} = {}, which the BERT of {} has ({}){}", file, spec.name, spec.dims,
           hf_shape_text(spec.shape), config_file, config_values,
           nsp ? "; the file has no next-sentence head: set model.disable_nsp: true to train masked LM only" : "");
    }
    out.add({spec.name, spec.shape, false, found[i]->values, {}});
  }
  // Files that store the tied decoder anyway must store it tied.
  const auto require_tied = [&](const StateTensor* stored, const std::string& to, const char* what) {
    const StateTensor& tied = *out.find(to);
    if (stored != nullptr && (stored->shape != tied.shape || stored->values != tied.values))
      fail("{}: tensor '{}' differs from '{}': {}, which sparsetrain's BERT (and BERT) requires", file, stored->name,
           to, what);
  };
  require_tied(decoder, "bert.embeddings.word_embeddings.weight", "the decoder is not tied to the word embedding");
  require_tied(decoder_bias, "cls.predictions.bias", "the decoder's bias is not cls.predictions.bias");
  return out;
}

}  // namespace sparsetrain
