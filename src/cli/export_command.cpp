#include "cli/export_command.h"

#include <fmt/format.h>

#include <utility>

#include "cli/memory_check.h"
#include "cli/model_dir.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/hf/pretrained_dir.h"
#include "sparsetrain/train/checkpoint.h"
#include "sparsetrain/train/setup.h"

namespace sparsetrain {

int run_export_command(const ExportOptions& o) {
  const auto [params, model_path] = trained_model_files(o.model_dir, o.params, o.checkpoint_path, "export", "export");
  TrainConfig config = load_train_config_file(params);
  if (!config.is_gpt() && !config.is_bert())
    fail("{}: export --format hf needs a gpt or bert model; this config trains an mlp", params);
  check_memory(config);
  // The model built as the run built it (masks included), then the checkpoint loaded strictly
  // into it, so the export holds exactly what the run trained.
  Setup s = make_setup(std::move(config), 0, /*load_data=*/false);
  load_checkpoint(model_path, *s.model, nullptr);
  if (const auto* bert = dynamic_cast<const Bert*>(s.model.get())) {
    write_hf_bert_dir(o.out, s.model->state_dict(), bert->config(), *s.tokenizer);
    fmt::print("wrote {} (Hugging Face {}, from {})\n", o.out,
               bert->config().next_sentence ? "BertForPreTraining" : "BertForMaskedLM", model_path);
    return 0;
  }
  write_hf_gpt2_dir(o.out, s.model->state_dict(), dynamic_cast<const Gpt&>(*s.model).config(), *s.tokenizer);
  fmt::print("wrote {} (Hugging Face GPT-2, from {})\n", o.out, model_path);
  return 0;
}

}  // namespace sparsetrain
