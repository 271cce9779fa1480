#!/usr/bin/env bash
# CI: uses an installed sparsetrain as a user would. Installs the build directory (default build/,
# built by scripts/build.sh) into a temporary prefix, builds examples/ on its own against the
# installed CMake package (find_package(sparsetrain)) and runs every example, then runs the
# installed command from outside the checkout: two training steps that read both text data
# packages (the Brown corpus, the GPT-2 BPE files), which it can only find in the installation.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${SPARSETRAIN_BUILD_DIR:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build_dir" --prefix "$prefix" >/dev/null
cmake -S examples -B "$tmp/examples" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/examples" -j "$(nproc)"
for example in "$tmp"/examples/example_*; do
  echo "== $(basename "$example") (installed package)"
  "$example"
done

echo "== installed sparsetrain, run from $tmp"
cd "$tmp"
cat >tiny.yaml <<'YAML'
model: {name: gpt, n_positions: 16, n_layer: 1, n_head: 1, n_embd: 16}
train_input: {data: brown, tokenizer: gpt2, batch_size: 2}
optimizer: {optimizer_type: adamw, learning_rate: 0.001}
runconfig: {max_steps: 2, log_steps: 1}
YAML
"$prefix/bin/sparsetrain" --version
env -u SPARSETRAIN_DATA_DIR "$prefix/bin/sparsetrain" train --params tiny.yaml --model_dir run --no-progress
test -f run/checkpoint_2.safetensors
echo "install check: OK"
