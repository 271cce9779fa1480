#include "cli/inspect_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string_view>

#include "cli/model_dir.h"
#include "sparsetrain/io/nan_form.h"
#include "sparsetrain/io/safetensors.h"
#include "sparsetrain/nn/sparse_tensors.h"

namespace sparsetrain {

int run_inspect_command(const InspectOptions& o) {
  // A model directory stands for its newest complete checkpoint, as in `generate`.
  const std::string path =
      std::filesystem::is_directory(o.path) ? newest_complete_checkpoint(o.path, "inspect") : o.path;
  const SafetensorsFile file = read_safetensors(path);
  fmt::print("{}: {} tensors\n", path, file.tensors.tensors.size());
  for (const auto& [key, value] : file.metadata)
    fmt::print("  metadata {} = {}\n", key, value.size() > 60 ? value.substr(0, 57) + "..." : value);
  // A pruned weight is marked by its `<name>_mask` tensor, or, in a file in Cerebras' NaN form
  // (which has no masks), by NaN in the weight itself: both list the same sparsity. In a file
  // with masks, NaN is a value gone wrong and is listed as such.
  const bool nan_marks_pruning = first_mask(file.tensors) == nullptr;
  int64_t total = 0, sparse_total = 0, sparse_kept = 0;
  // Columns as wide as their longest entry (BERT's names run past 50 characters).
  const auto shape_of = [](const StateTensor& t) { return fmt::format("[{}]", fmt::join(t.shape, ", ")); };
  std::size_t name_width = std::string_view("tensor").size(), shape_width = 14;
  for (const StateTensor& t : file.tensors.tensors)
    if (!t.is_mask) {
      name_width = std::max(name_width, t.name.size());
      shape_width = std::max(shape_width, shape_of(t).size());
    }
  fmt::print("  {:<{}} {:<5} {:<{}} {:>10} {:>9}  {}\n", "tensor", name_width, "dtype", "shape", shape_width,
             "elements", "sparsity", "pruned by");
  for (const StateTensor& t : file.tensors.tensors) {
    if (t.is_mask) continue;
    const auto n = static_cast<int64_t>(t.values.size());
    total += n;
    const StateTensor* mask = mask_of(file.tensors, t);
    const int64_t nan = std::count_if(t.values.begin(), t.values.end(), [](float v) { return std::isnan(v); });
    std::string sparsity = "dense", marker;
    if (mask != nullptr || (nan_marks_pruning && nan > 0)) {
      const int64_t kept = mask != nullptr ? kept_count(*mask) : n - nan;
      sparse_total += n;
      sparse_kept += kept;
      sparsity = fmt::format("{:.4f}", sparsity_of(kept, n));
      marker = mask != nullptr ? "mask" : "NaN";
    }
    if (!nan_marks_pruning && nan > 0) marker += fmt::format("{}({} NaN, not pruning)", marker.empty() ? "" : " ", nan);
    std::string line = fmt::format("  {:<{}} {:<5} {:<{}} {:>10} {:>9}  {}", t.name, name_width, "F32", shape_of(t),
                                   shape_width, n, sparsity, marker);
    line.erase(line.find_last_not_of(' ') + 1);
    fmt::print("{}\n", line);
  }
  fmt::print("  total {} values; {} in sparse tensors, {} of them kept (sparsity {:.4f})\n", total, sparse_total,
             sparse_kept, sparsity_of(sparse_kept, sparse_total));
  if (!o.export_nan.empty()) {
    write_safetensors(o.export_nan, to_nan_form(file.tensors), file.metadata);
    fmt::print("wrote {} (Cerebras NaN form: NaN marks a pruned weight)\n", o.export_nan);
  }
  if (!o.import_nan.empty()) {
    write_safetensors(o.import_nan, from_nan_form(file.tensors), file.metadata);
    fmt::print("wrote {} (zeros at pruned positions and <name>_mask tensors)\n", o.import_nan);
  }
  return 0;
}

}  // namespace sparsetrain
