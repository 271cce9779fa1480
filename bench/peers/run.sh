#!/usr/bin/env bash
# Puts sparsetrain's end-to-end training throughput beside PyTorch's on the benchmark GPT
# (configs/bench_gpt_csr90.yaml: 6 layers, width 512, 8 heads, context 256, vocabulary 8192,
# batch 8, AdamW): `sparsetrain bench train` (dense, and 90% sparse) and the same model in plain
# PyTorch (bench/peers/torch_gpt.py) in float32 and in bfloat16 autocast, all with the same thread
# count, in one run. Prints one table (tokens/s, and the ratio to PyTorch bf16 autocast) and writes
# every measurement to one JSON file. Results: docs/benchmarks.md, "bf16 mixed precision".
#
#   bench/peers/run.sh [OPTIONS] [OUT.json]        (default runs/peers/peers.json)
#
#   --threads N                   threads of every case (default 2)
#   --steps N, --warmup N         timed and untimed steps of each process (default 5 and 2)
#   --rounds N                    the cases run in turn this many times; the table has medians
#                                 over rounds (default 1)
#   --bcsr16                      also configs/bench_gpt_bcsr16_90.yaml (16x16 blocks)
#   --precision-sparsetrain P     sparsetrain's precision (default fp32); anything else is passed
#                                 to `bench train --precision P` and named in the table's rows
#   --torch-env VAR=VALUE         set for the PyTorch processes only (repeatable), e.g.
#                                 LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp: the
#                                 OpenMP build of OpenBLAS (libopenblas0-openmp), which shares
#                                 torch's threads instead of adding its own (docs/benchmarks.md)
#
# Needs the built command ($SPARSETRAIN_BUILD_DIR, default build/: scripts/build.sh) with the
# text data, and PyTorch from Debian (scripts/setup.sh --peers). $PYTHON picks the interpreter;
# otherwise the first of python3 and /usr/bin/python3 that imports torch.
set -euo pipefail
cd "$(dirname "$0")/../.."

threads=2
steps=5
warmup=2
rounds=1
bcsr16=0
precision=fp32
torch_env=()
out=runs/peers/peers.json
positive() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "bench/peers/run.sh: $1 needs a number >= 1, got '$2'" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) positive "$1" "${2:-}"; threads=$2; shift ;;
    --steps) positive "$1" "${2:-}"; steps=$2; shift ;;
    --warmup) [[ "${2:-}" =~ ^[0-9]+$ ]] || { echo "bench/peers/run.sh: --warmup needs a number >= 0" >&2; exit 2; }
              warmup=$2; shift ;;
    --rounds) positive "$1" "${2:-}"; rounds=$2; shift ;;
    --bcsr16) bcsr16=1 ;;
    --precision-sparsetrain) precision=${2:?--precision-sparsetrain needs a precision}; shift ;;
    --torch-env) [[ "${2:-}" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || { echo "bench/peers/run.sh: --torch-env needs VAR=VALUE" >&2; exit 2; }
                 torch_env+=("$2"); shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "bench/peers/run.sh: unknown option '$1' (--threads, --steps, --warmup, --rounds, --bcsr16, --precision-sparsetrain, --torch-env, OUT.json)" >&2
        exit 2 ;;
    *) out=$1 ;;
  esac
  shift
done

bin=${SPARSETRAIN_BUILD_DIR:-build}/src/cli/sparsetrain
if [ ! -x "$bin" ]; then
  echo "bench/peers/run.sh: no $bin; build it with scripts/build.sh" >&2
  exit 2
fi
python=
for candidate in "${PYTHON:-}" python3 /usr/bin/python3; do
  if [ -n "$candidate" ] && "$candidate" -c 'import torch' 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "bench/peers/run.sh: PyTorch is not installed; install it with: scripts/setup.sh --peers" >&2
  echo "  (that is: sudo apt-get install python3-torch libopenblas0-pthread)" >&2
  exit 2
fi
# Without OpenBLAS, Debian's torch runs float32 GEMMs on the reference BLAS, ~50 times slower.
if command -v dpkg-query >/dev/null &&
  ! dpkg-query -W -f='${Status}' libopenblas0-pthread 2>/dev/null | grep -q "install ok installed"; then
  echo "bench/peers/run.sh: warning: libopenblas0-pthread is not installed, so PyTorch's fp32 GEMMs run on" >&2
  echo "  the reference BLAS; install it with: scripts/setup.sh --peers" >&2
fi

configs=("CSR 90%=configs/bench_gpt_csr90.yaml")
[ "$bcsr16" -eq 0 ] || configs+=("BCSR16 90%=configs/bench_gpt_bcsr16_90.yaml")
bench_args=(--threads "$threads" --steps "$steps" --warmup "$warmup" --json)
# Only a precision other than the default is passed, so that this also runs binaries whose
# `bench train` has no --precision option.
[ "$precision" = fp32 ] || bench_args+=(--precision "$precision")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
combine_args=()
for ((round = 1; round <= rounds; ++round)); do
  for entry in "${configs[@]}"; do
    label=${entry%%=*}
    config=${entry#*=}
    file="$tmp/sparsetrain-$round-${config##*/}.json"
    echo "round $round/$rounds: sparsetrain bench train --params $config ${bench_args[*]}" >&2
    "$bin" bench train --params "$config" "${bench_args[@]}" >"$file"
    combine_args+=(--sparsetrain "$label" "$file")
  done
  for torch_precision in fp32 bf16; do
    echo "round $round/$rounds: ${torch_env[*]}${torch_env[*]:+ }torch_gpt.py --precision $torch_precision --threads $threads" >&2
    env "${torch_env[@]}" "$python" bench/peers/torch_gpt.py --precision "$torch_precision" --threads "$threads" --steps "$steps" \
      --warmup "$warmup" --json >>"$tmp/torch.jsonl"
  done
done

mkdir -p "$(dirname "$out")"
"$python" bench/peers/combine.py --out "$out" --threads "$threads" --precision-sparsetrain "$precision" \
  --sparsetrain-version "$("$bin" --version)" --torch "$tmp/torch.jsonl" "${combine_args[@]}"
