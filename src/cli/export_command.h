#pragma once
// `sparsetrain export --model_dir DIR --format hf --out OUT`: a trained GPT as a Hugging Face
// model directory (hf/pretrained_dir.h) that transformers' GPT2LMHeadModel.from_pretrained(OUT)
// loads: the newest complete checkpoint of DIR (or --checkpoint_path) under DIR's params.yaml
// (or --params).
#include <string>

namespace sparsetrain {

struct ExportOptions {
  std::string model_dir;
  std::string checkpoint_path;  // default: the newest complete checkpoint of model_dir
  std::string params;           // default: model_dir's params.yaml
  std::string format = "hf";
  std::string out;
};

int run_export_command(const ExportOptions& options);

}  // namespace sparsetrain
