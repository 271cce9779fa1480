// Hugging Face config.json, as `model.init_from: hf:DIR` reads it for a GPT-2 and for a BERT: the
// input is the config.json of a directory that also holds a model.safetensors (the readers look
// for the weights before they read the config). A config a reader accepts is one sparsetrain's
// model computes: it passes the model config's validate(), and written back as a config.json it
// reads as the same config.
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/hf/bert_config.h"
#include "sparsetrain/hf/gpt2_config.h"
#include "sparsetrain/hf/pretrained_dir.h"

namespace {

void check_gpt2(const std::string& dir) {
  sparsetrain::GptConfig config;
  try {
    config = sparsetrain::read_hf_gpt2_config(dir);
  } catch (const sparsetrain::Error&) {
    return;
  }
  config.validate();  // an Error here escapes: a finding
  const sparsetrain::GptConfig again =
      sparsetrain::hf_gpt2_config_from_json(sparsetrain::hf_gpt2_config_json(config, std::nullopt), "written");
  FUZZ_CHECK(again.vocab_size == config.vocab_size && again.context == config.context &&
             again.layers == config.layers && again.heads == config.heads && again.embed == config.embed &&
             again.layer_norm_eps == config.layer_norm_eps && again.init_std == config.init_std);
}

void check_bert(const std::string& dir) {
  sparsetrain::BertConfig config;
  try {
    config = sparsetrain::read_hf_bert_config(dir);
  } catch (const sparsetrain::Error&) {
    return;
  }
  config.validate();
  const sparsetrain::BertConfig again =
      sparsetrain::hf_bert_config_from_json(sparsetrain::hf_bert_config_json(config, 0), "written");
  FUZZ_CHECK(again.vocab_size == config.vocab_size && again.hidden == config.hidden && again.layers == config.layers &&
             again.heads == config.heads && again.intermediate == config.intermediate &&
             again.max_positions == config.max_positions && again.type_vocab_size == config.type_vocab_size &&
             again.act == config.act && again.hidden_dropout == config.hidden_dropout &&
             again.attention_dropout == config.attention_dropout && again.layer_norm_eps == config.layer_norm_eps &&
             again.init_std == config.init_std);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size > sparsetrain::fuzz::kMaxInputBytes) return -1;
  static const sparsetrain::fuzz::ScratchDir scratch;
  [[maybe_unused]] static const std::string weights = scratch.write("model.safetensors", "");
  scratch.write("config.json", sparsetrain::fuzz::as_text(data, size));
  check_gpt2(scratch.path().string());
  check_bert(scratch.path().string());
  return 0;
}
