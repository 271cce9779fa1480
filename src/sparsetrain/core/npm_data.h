#pragma once
// Where the npm-installed data packages are (scripts/setup.sh installs them into
// data/npm/node_modules). Shared by everything that reads files from those packages.
#include <filesystem>
#include <string>

namespace sparsetrain {

// The directory of npm package `package`, looked up in this order:
//   1. $SPARSETRAIN_DATA_DIR/<package> when SPARSETRAIN_DATA_DIR is set and not empty (then only
//      there: an explicit setting never falls back to the search below);
//   2. data/npm/node_modules/<package> under the current directory;
//   3. share/sparsetrain/npm/<package> beside the running executable's directory (an installed
//      <prefix>/bin/sparsetrain finds <prefix>/share/sparsetrain/npm, where `cmake --install`
//      puts the data);
//   4. data/npm/node_modules/<package> under each ancestor of the running executable's directory
//      (so build/src/cli/sparsetrain and build/tests/unit/test_* find the checkout's data).
// Throws Error naming the places searched and telling to run scripts/setup.sh when none has it.
std::filesystem::path find_npm_package_dir(const std::string& package);

}  // namespace sparsetrain
