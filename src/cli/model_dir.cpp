#include "cli/model_dir.h"

#include <fmt/format.h>

#include <filesystem>
#include <vector>

#include "cli/train_command.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/train/checkpoint.h"

namespace sparsetrain {

namespace fs = std::filesystem;

void require_model_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) fail("--model_dir {}: no such directory", dir);
  if (!fs::is_directory(dir, ec)) fail("--model_dir {}: not a directory; expected a model directory", dir);
}

std::string newest_complete_checkpoint(const std::string& dir, const std::string& purpose) {
  require_model_dir(dir);
  const std::vector<int64_t> done = complete_checkpoints(dir);
  if (done.empty()) fail("{}: no complete checkpoint to {}", dir, purpose);
  return checkpoint_model_path(dir, done.back());
}

TrainedModelFiles trained_model_files(const std::string& model_dir, const std::string& params,
                                      const std::string& checkpoint_path, const std::string& command,
                                      const std::string& purpose) {
  TrainedModelFiles files{params, checkpoint_path};
  if (!model_dir.empty()) {
    if (files.params.empty()) files.params = (fs::path(model_dir) / "params.yaml").string();
    if (files.model_path.empty()) files.model_path = newest_complete_checkpoint(model_dir, purpose);
  }
  if (files.params.empty() || files.model_path.empty())
    throw CommandLineError(fmt::format("{}: give --model_dir, or --params with --checkpoint_path", command));
  return files;
}

}  // namespace sparsetrain
