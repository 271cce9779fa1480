#include "sparsetrain/train/run_environment.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <sstream>
#include <vector>

#include "sparsetrain/core/build_info.h"
#include "sparsetrain/core/cpu_model.h"
#include "sparsetrain/core/isa.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/kernels/dense_isa.h"
#include "sparsetrain/train/metrics.h"

namespace sparsetrain {

namespace fs = std::filesystem;
using json = nlohmann::json;

json run_environment() {
  const BuildInfo& build = build_info();
  const std::string kernel_isa(isa_name(effective_isa()));
  const std::string onednn_isa = dense_isa();
  json e;
  e["sparsetrain"] = build.version;
  e["compiler"] = build.compiler;
  e["build_type"] = build.build_type;
  e["build_flags"] = build.flags;
  e["native"] = build.native;
  e["cpu"] = describe(cpu_model());
  e["kernel_isa"] = kernel_isa;
  e["onednn"] = onednn_version();
  e["onednn_isa"] = onednn_isa;
  e["threads"] = num_threads();
  e["portable"] = !build.native && kernel_isa == kPortableIsa && onednn_isa == kPortableIsa;
  return e;
}

namespace {

// The last complete line of an earlier start, or null.
json previous_start(const fs::path& file) {
  if (!fs::exists(file)) return nullptr;
  std::istringstream in(read_file(file.string()));
  json last;
  for (std::string line; std::getline(in, line) && !in.eof();) {
    json row = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_object()) last = std::move(row);
  }
  return last;
}

}  // namespace

void record_environment(const std::string& dir, int64_t start_step, const std::string& mode, int ranks) {
  const fs::path file = fs::path(dir) / "run_environment.jsonl";
  json line = run_environment();
  line["ranks"] = ranks;
  line["step"] = start_step;
  line["mode"] = mode;
  if (start_step > 0 && mode != "eval") {
    const json before = previous_start(file);
    std::vector<std::string> changes;
    if (before.is_object())
      for (const auto& [key, value] : line.items())
        if (key != "step" && key != "mode" && before.contains(key) && before[key] != value)
          changes.push_back(fmt::format("{} {} -> {}", key, before[key].dump(), value.dump()));
    if (!changes.empty())
      fmt::print(
          "this run continues with another environment than its start at step {} (docs/reliability.md: it is no "
          "longer bit-identical to a run that did not stop): {}\n",
          before["step"].dump(), fmt::join(changes, "; "));
  }
  MetricsLog(file.string(), -1).write(line);
}

}  // namespace sparsetrain
