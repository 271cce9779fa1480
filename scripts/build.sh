#!/usr/bin/env bash
# Configures and builds sparsetrain (Release, tuned for this CPU) into build/.
# Extra arguments go to CMake's configure step, e.g. -DSPARSETRAIN_SANITIZE_ADDRESS=ON.
# SPARSETRAIN_BUILD_TARGETS="sparsetrain_bin" builds only those targets (default: everything,
# the tests included); the configuration stays the same, so a later full build reuses the objects.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${SPARSETRAIN_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DSPARSETRAIN_NATIVE=ON "$@" >/dev/null
targets=()
for target in ${SPARSETRAIN_BUILD_TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
