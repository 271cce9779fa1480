#!/usr/bin/env bash
# Checks that a portable-mode run gives the bits docs/reliability.md#portable-mode records: builds
# the portable binary (build-portable/, no -march=native), trains the default GPT config for 60
# steps with `--portable --threads 2`, and compares the SHA-256 of both checkpoint files with the
# recorded ones. Prints the CPU and whether they match; exits 0 when they do, 1 when they differ.
#
#   experiments/portable_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
expected_model=dd177f3548718531561fd7586230a65b984d136eeaf08474bbe6ae86b555b377
expected_state=fc07d06a5cab6a41fdc2adf8bad381ead1024155deeec35cc2095ec0c197379c

bin=build-portable/src/cli/sparsetrain
SPARSETRAIN_BUILD_DIR=build-portable SPARSETRAIN_BUILD_TARGETS=sparsetrain_bin \
  scripts/build.sh -DSPARSETRAIN_NATIVE=OFF
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" --portable train --params configs/gpt_brown_rigl90.yaml --model_dir "$dir/run" --max_steps 60 \
  --threads 2 --no-progress >"$dir/log" 2>&1 || { cat "$dir/log" >&2; exit 2; }
model=$(sha256sum "$dir/run/checkpoint_60.safetensors" | cut -d' ' -f1)
state=$(sha256sum "$dir/run/checkpoint_60.state.safetensors" | cut -d' ' -f1)
"$bin" --portable --version
if [ "$model" = "$expected_model" ] && [ "$state" = "$expected_state" ]; then
  echo "portable check: the checkpoints match the recorded hashes"
else
  echo "portable check: the checkpoints DIFFER from the recorded hashes"
  echo "  checkpoint_60.safetensors        $model (recorded $expected_model)"
  echo "  checkpoint_60.state.safetensors  $state (recorded $expected_state)"
  exit 1
fi
