#!/usr/bin/env bash
# Quick start, part 2: set up, build, and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir "${SPARSETRAIN_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
