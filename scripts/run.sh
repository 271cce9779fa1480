#!/usr/bin/env bash
# Quick start, part 1: set up, build, and run the main job: the linear-layer kernel benchmark's
# default grid (dense oneDNN vs sparse, forward + both backward passes). Arguments go to
# `sparsetrain bench linear` (see docs/cli.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/src/cli/sparsetrain bench linear "$@"
