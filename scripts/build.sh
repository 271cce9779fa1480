#!/usr/bin/env bash
# Configures and builds sparsetrain (Release, tuned for this CPU) into build/.
# Extra arguments go to CMake's configure step, e.g. -DSPARSETRAIN_SANITIZE_ADDRESS=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${SPARSETRAIN_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DSPARSETRAIN_NATIVE=ON "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
