#!/usr/bin/env bash
# Quick start, part 1: set up, build, and run the main job: train the default GPT on the Brown
# corpus with RigL at 90% sparsity (configs/gpt_brown_rigl90.yaml, a few minutes on 2 cores), then
# print where the results are, a sample of generated text, and the training speed against the
# same model trained dense for a few steps. Arguments go to `sparsetrain train` (docs/training.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
bin=build/src/cli/sparsetrain
run_dir=runs/gpt_brown_rigl90
"$bin" --mode train_and_eval --params configs/gpt_brown_rigl90.yaml --model_dir "$run_dir" "$@"
echo
echo "== sample (sparsetrain generate --model_dir $run_dir) =="
"$bin" generate --model_dir "$run_dir" --prompt "The " --tokens 300 --seed 1
echo
echo "== speed: the same model dense, 40 steps =="
dense_dir=$(mktemp -d)
trap 'rm -rf "$dense_dir"' EXIT
"$bin" train --params configs/gpt_brown_dense.yaml --model_dir "$dense_dir" --max_steps 40 --no-progress \
  | grep '^step' | tail -1
last_rate() { grep '"split":"train"' "$1/metrics.jsonl" | tail -1 | grep -o '"tokens_per_s":[0-9.e+-]*' | cut -d: -f2; }
sparse=$(last_rate "$run_dir")
dense=$(last_rate "$dense_dir")
awk -v s="$sparse" -v d="$dense" 'BEGIN { printf "tokens/s: sparse (RigL 90%%) %.0f, dense %.0f: %.2fx\n", s, d, s / d }'
echo "results: $run_dir (metrics.jsonl, checkpoints, params.yaml)"
