// Hugging Face config.json, as `model.init_from: hf:DIR` reads it: the input is the config.json
// of a directory that also holds a model.safetensors (read_hf_gpt2_config looks for the weights
// before it reads the config). A config it accepts is one sparsetrain's GPT computes: it passes
// GptConfig::validate, and written back as a config.json it reads as the same config.
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/hf/gpt2_config.h"
#include "sparsetrain/hf/pretrained_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size > sparsetrain::fuzz::kMaxInputBytes) return -1;
  static const sparsetrain::fuzz::ScratchDir scratch;
  [[maybe_unused]] static const std::string weights = scratch.write("model.safetensors", "");
  scratch.write("config.json", sparsetrain::fuzz::as_text(data, size));
  sparsetrain::GptConfig config;
  try {
    config = sparsetrain::read_hf_gpt2_config(scratch.path().string());
  } catch (const sparsetrain::Error&) {
    return 0;
  }
  config.validate();  // an Error here escapes: a finding
  const sparsetrain::GptConfig again =
      sparsetrain::hf_gpt2_config_from_json(sparsetrain::hf_gpt2_config_json(config, std::nullopt), "written");
  FUZZ_CHECK(again.vocab_size == config.vocab_size && again.context == config.context &&
             again.layers == config.layers && again.heads == config.heads && again.embed == config.embed &&
             again.layer_norm_eps == config.layer_norm_eps && again.init_std == config.init_std);
  return 0;
}
