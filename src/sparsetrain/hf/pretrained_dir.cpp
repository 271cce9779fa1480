#include "sparsetrain/hf/pretrained_dir.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/json_text.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/data/mlm_examples.h"
#include "sparsetrain/hf/bert_config.h"
#include "sparsetrain/hf/bert_tensors.h"
#include "sparsetrain/hf/gpt2_config.h"
#include "sparsetrain/hf/gpt2_tensors.h"
#include "sparsetrain/hf/tokenizer_files.h"
#include "sparsetrain/io/atomic_file.h"
#include "sparsetrain/io/safetensors.h"

namespace sparsetrain {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// The export's directory, new or empty, with its weights and (for a sparse model) masks.
void write_hf_weights(const std::string& out, const StateDict& weights, const StateDict& masks) {
  create_output_directory(out, "--out");
  if (!fs::is_empty(out))
    fail("--out {}: the directory holds files; give a new or empty directory for the export", out);
  const fs::path dir(out);
  // transformers refuses safetensors whose metadata lacks format: pt.
  write_safetensors((dir / "model.safetensors").string(), weights, {{"format", "pt"}});
  if (!masks.tensors.empty()) write_safetensors((dir / "masks.safetensors").string(), masks, {{"format", "pt"}});
}

}  // namespace

void write_hf_gpt2_dir(const std::string& out, const StateDict& state, const GptConfig& config,
                       const Tokenizer& tokenizer) {
  write_hf_weights(out, to_hf_gpt2(state, config), to_hf_gpt2(state, config, /*masks=*/true));
  write_file_atomically((fs::path(out) / "config.json").string(),
                        hf_gpt2_config_json(config, tokenizer.end_of_text()).dump(2) + "\n");
  write_hf_tokenizer_files(out, tokenizer, config.context);
}

void write_hf_bert_dir(const std::string& out, const StateDict& state, const BertConfig& config,
                       const Tokenizer& tokenizer) {
  StateDict weights, masks;
  for (const StateTensor& t : state.tensors) (t.is_mask ? masks : weights).add(t);
  write_hf_weights(out, weights, masks);
  write_file_atomically((fs::path(out) / "config.json").string(),
                        hf_bert_config_json(config, bert_special_tokens(tokenizer).pad).dump(2) + "\n");
  write_hf_tokenizer_files(out, tokenizer, config.max_positions);
}

namespace {

std::string config_path(const std::string& dir) { return (fs::path(dir) / "config.json").string(); }

// The parsed config.json of the model directory `dir`, once the directory is known to hold the
// weights sparsetrain reads (one model.safetensors); `auto_class` is transformers' class whose
// save_pretrained the pickle's message suggests.
json read_hf_config_json(const std::string& dir, const char* auto_class) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    fail("hf:{}: {}", dir,
         fs::exists(dir, ec) ? "not a directory; expected a Hugging Face model directory" : "no such directory");
  const fs::path d(dir);
  if (!fs::exists(d / "model.safetensors", ec)) {
    if (fs::exists(d / "pytorch_model.bin", ec))
      fail(
          "hf:{}: has its weights only as pytorch_model.bin, a Python pickle, which sparsetrain does not read (loading "
          "a pickle runs code); convert it to model.safetensors with transformers: python3 -c \"from transformers "
          "import {} as M; M.from_pretrained('{}').save_pretrained('{}', safe_serialization=True)\"",
          dir, auto_class, dir, dir);
    if (fs::exists(d / "model.safetensors.index.json", ec))
      fail(
          "hf:{}: the weights are sharded (model.safetensors.index.json); sparsetrain reads one model.safetensors: "
          "save the model again with save_pretrained(DIR, max_shard_size=\"100GB\")",
          dir);
    fail("hf:{}: no model.safetensors; expected a Hugging Face model directory (config.json and model.safetensors)",
         dir);
  }
  const std::string path = config_path(dir);
  if (!fs::exists(path, ec)) fail("hf:{}: no config.json beside model.safetensors", dir);
  try {
    return json::parse(read_file(path));
  } catch (const json::exception& e) {
    fail("{}: not valid JSON: {}", path, json_parse_problem(e));
  }
}

std::string weights_path(const std::string& dir) { return (fs::path(dir) / "model.safetensors").string(); }

}  // namespace

GptConfig read_hf_gpt2_config(const std::string& dir) {
  return hf_gpt2_config_from_json(read_hf_config_json(dir, "AutoModelForCausalLM"), config_path(dir));
}

StateDict read_hf_gpt2_weights(const std::string& dir) {
  const GptConfig config = read_hf_gpt2_config(dir);
  const std::string path = weights_path(dir);
  return from_hf_gpt2(read_safetensors(path).tensors, config, path, config_path(dir));
}

BertConfig read_hf_bert_config(const std::string& dir) {
  return hf_bert_config_from_json(read_hf_config_json(dir, "AutoModelForPreTraining"), config_path(dir));
}

StateDict read_hf_bert_weights(const std::string& dir, bool next_sentence) {
  BertConfig config = read_hf_bert_config(dir);
  config.next_sentence = next_sentence;
  const std::string path = weights_path(dir);
  // transformers before 4.31 saved the embeddings' position index table (int64) with the weights.
  return from_hf_bert(read_safetensors(path, {"bert.embeddings.position_ids"}).tensors, config, path, config_path(dir));
}

}  // namespace sparsetrain
