#!/usr/bin/env bash
# Quick start, part 1: set up, build, and run the main job: train the default GPT on the Brown
# corpus with RigL at 90% sparsity (configs/gpt_brown_rigl90.yaml, a few minutes on 2 cores), then
# print where the results are, a sample of generated text, and the training speed against the
# same model trained dense (a few steps of each, timed by `sparsetrain bench train`). Arguments go to `sparsetrain train` (docs/training.md).
# Only the sparsetrain binary is built here, not the test suite (scripts/test.sh builds and runs that).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
SPARSETRAIN_BUILD_TARGETS=sparsetrain_bin scripts/build.sh
bin=build/src/cli/sparsetrain
run_dir=runs/gpt_brown_rigl90
"$bin" --mode train_and_eval --params configs/gpt_brown_rigl90.yaml --model_dir "$run_dir" "$@"
echo
echo "== sample (sparsetrain generate --model_dir $run_dir) =="
"$bin" generate --model_dir "$run_dir" --prompt "The " --tokens 300 --seed 1
echo
echo "== speed: the same model dense and sparse (sparsetrain bench train) =="
"$bin" bench train --params configs/gpt_brown_rigl90.yaml --steps 5 --warmup 2
echo
echo "results: $run_dir (metrics.jsonl, checkpoints, params.yaml)"
echo "the command: $bin (cmake --install build --prefix ~/.local puts it at ~/.local/bin/sparsetrain)"
