#!/usr/bin/env bash
# Puts sparsetrain's end-to-end training throughput beside PyTorch's on the benchmark GPT
# (configs/bench_gpt_csr90.yaml: 6 layers, width 512, 8 heads, context 256, vocabulary 8192,
# batch 8, AdamW): `sparsetrain bench train` (dense, and 90% sparse) and the same model in plain
# PyTorch (bench/peers/torch_gpt.py) in float32 and in bfloat16 autocast, all with the same thread
# count, in one run. Prints one table (tokens/s, and the ratios to PyTorch fp32 and bf16 autocast;
# a note when PyTorch has no native bf16 matmul on this CPU, where its users run fp32) and writes
# every measurement to one JSON file. Results: docs/benchmarks.md, "bf16 mixed precision".
#
# With --ddp N the same run also trains data-parallel on N processes of 1 thread each, the global
# batch (8) split among them: `mpirun -np N --oversubscribe --bind-to none sparsetrain bench train
# --threads 1 --json` on the same configs (rank 0 prints the result), and torch_gpt.py --ddp N
# --threads 1 (DistributedDataParallel over gloo, torch's default 25 MB buckets) in fp32 and in
# bf16 autocast. Their rows say "(N ranks x 1 thread)" / "(N x 1)"; the table gains the ratio to
# PyTorch DDP fp32 and bf16, and a summary of sparsetrain sparse against PyTorch DDP (target:
# >= 3x). Results: docs/benchmarks.md, "PyTorch DDP (data parallel)".
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
#   --with-fp32                   with another precision: also each sparse config's bench train in
#                                 fp32 (rows without the precision's suffix)
#   --target KEY=SPEEDUP          judge the run (repeatable): dense, csr or bcsr16 against PyTorch
#                                 bf16 autocast; bf16-over-fp32 (needs --with-fp32): each sparse
#                                 case against itself in fp32. The summary says met, or short by how much
#   --torch-env VAR=VALUE         set for the PyTorch processes only (repeatable), e.g.
#                                 LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp: the
#                                 OpenMP build of OpenBLAS (libopenblas0-openmp), which shares
#                                 torch's threads instead of adding its own (docs/benchmarks.md)
#   --ddp N                       also the data-parallel cases on N processes x 1 thread (default
#                                 off); sparsetrain's need `mpirun` (Open MPI: openmpi-bin) and a
#                                 build whose `bench train` runs data-parallel under it, and are
#                                 skipped with a message without mpirun
#   --mpirun-arg ARG              one more argument for mpirun (repeatable), e.g. --mpirun-arg=--mca
#                                 --mpirun-arg=btl_vader_single_copy_mechanism --mpirun-arg=none in
#                                 containers where Open MPI's shared-memory copies fail
#
# Needs the built command ($SPARSETRAIN_BUILD_DIR, default build/: scripts/build.sh) with the
# text data, and PyTorch from Debian (scripts/setup.sh --peers). $PYTHON picks the interpreter;
# otherwise the first of python3 and /usr/bin/python3 that imports torch. --ddp's sparsetrain
# cases need Open MPI's mpirun (sudo apt-get install openmpi-bin); as root, run.sh exports
# OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1, without which mpirun refuses.
set -euo pipefail
cd "$(dirname "$0")/../.."

threads=2
steps=5
warmup=2
rounds=1
bcsr16=0
precision=fp32
torch_env=()
ddp=0
mpirun_args=()
with_fp32=0
targets=()
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
    --with-fp32) with_fp32=1 ;;
    --target) [[ "${2:-}" == *=* ]] || { echo "bench/peers/run.sh: --target needs KEY=SPEEDUP, e.g. csr=4" >&2; exit 2; }
              targets+=(--target "$2"); shift ;;
    --precision-sparsetrain) precision=${2:?--precision-sparsetrain needs a precision}; shift ;;
    --torch-env) [[ "${2:-}" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || { echo "bench/peers/run.sh: --torch-env needs VAR=VALUE" >&2; exit 2; }
                 torch_env+=("$2"); shift ;;
    --ddp) positive "$1" "${2:-}"; ddp=$2; shift ;;
    --mpirun-arg) [ $# -ge 2 ] || { echo "bench/peers/run.sh: --mpirun-arg needs an argument" >&2; exit 2; }
                  mpirun_args+=("$2"); shift ;;
    --mpirun-arg=*) mpirun_args+=("${1#--mpirun-arg=}") ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "bench/peers/run.sh: unknown option '$1' (--threads, --steps, --warmup, --rounds, --bcsr16, --precision-sparsetrain, --with-fp32, --target, --torch-env, --ddp, --mpirun-arg, OUT.json)" >&2
        exit 2 ;;
    *) out=$1 ;;
  esac
  shift
done

if [ "$with_fp32" -eq 1 ] && [ "$precision" = fp32 ]; then
  echo "bench/peers/run.sh: --with-fp32 adds fp32 runs beside another precision; this run is fp32 already" >&2
  echo "  (add --precision-sparsetrain bf16)" >&2
  exit 2
fi
# Targets are checked here, not after minutes of runs (combine.py checks the speedups).
keys="dense csr"
[ "$bcsr16" -eq 0 ] || keys+=" bcsr16"
[ "$with_fp32" -eq 0 ] || keys+=" bf16-over-fp32"
for ((i = 1; i < ${#targets[@]}; i += 2)); do
  key=${targets[i]%%=*}
  if [[ " $keys " != *" $key "* ]]; then
    echo "bench/peers/run.sh: --target ${targets[i]}: this run's targets are $keys (bcsr16 needs --bcsr16;" >&2
    echo "  bf16-over-fp32 needs --precision-sparsetrain bf16 --with-fp32)" >&2
    exit 2
  fi
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

# The data-parallel cases: N processes of ddp_threads threads each.
ddp_threads=1
mpi=0
if [ "$ddp" -gt 0 ]; then
  if command -v mpirun >/dev/null; then
    mpi=1
    # Open MPI refuses to start as root without both.
    if [ "$(id -u)" -eq 0 ]; then
      export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    mpirun_cmd=(mpirun -np "$ddp" --oversubscribe --bind-to none "${mpirun_args[@]}" "$(realpath "$bin")")
    ddp_bench_args=(--threads "$ddp_threads" --steps "$steps" --warmup "$warmup" --json)
    [ "$precision" = fp32 ] || ddp_bench_args+=(--precision "$precision")
  else
    echo "bench/peers/run.sh: --ddp $ddp: no mpirun, so sparsetrain's data-parallel cases are skipped (only" >&2
    echo "  PyTorch DDP runs); install Open MPI with: sudo apt-get install openmpi-bin libopenmpi-dev" >&2
  fi
fi

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
    [ "$with_fp32" -eq 1 ] || continue
    fp32_args=(--threads "$threads" --steps "$steps" --warmup "$warmup" --json)
    file="$tmp/sparsetrain-fp32-$round-${config##*/}.json"
    echo "round $round/$rounds: sparsetrain bench train --params $config ${fp32_args[*]}" >&2
    "$bin" bench train --params "$config" "${fp32_args[@]}" >"$file"
    combine_args+=(--sparsetrain-fp32 "$label" "$file")
  done
  for torch_precision in fp32 bf16; do
    echo "round $round/$rounds: ${torch_env[*]}${torch_env[*]:+ }torch_gpt.py --precision $torch_precision --threads $threads" >&2
    env "${torch_env[@]}" "$python" bench/peers/torch_gpt.py --precision "$torch_precision" --threads "$threads" --steps "$steps" \
      --warmup "$warmup" --json >>"$tmp/torch.jsonl"
  done
  [ "$ddp" -gt 0 ] || continue
  for entry in "${configs[@]}"; do
    [ "$mpi" -eq 1 ] || break
    label=${entry%%=*}
    config=${entry#*=}
    file="$tmp/sparsetrain-ddp-$round-${config##*/}.json"
    echo "round $round/$rounds: ${mpirun_cmd[*]} bench train --params $config ${ddp_bench_args[*]}" >&2
    if ! "${mpirun_cmd[@]}" bench train --params "$config" "${ddp_bench_args[@]}" >"$file" </dev/null; then
      echo "bench/peers/run.sh: sparsetrain bench train failed under mpirun; its data-parallel rows are left out" >&2
      mpi=0
      break
    fi
    # Rank 0 alone prints the result. One result per rank means this build's bench train ran N
    # independent copies (no data-parallel support), whose figures must not stand in the table.
    results=$(grep -c '^{' "$file" || true)
    if [ "$results" -ne 1 ]; then
      echo "bench/peers/run.sh: sparsetrain bench train under mpirun -np $ddp printed $results results, not one" >&2
      echo "  from rank 0 (does this build's bench train run data-parallel under mpirun?); its data-parallel rows" >&2
      echo "  are left out" >&2
      mpi=0
      break
    fi
    combine_args+=(--sparsetrain-ddp "$label" "$file")
  done
  for torch_precision in fp32 bf16; do
    echo "round $round/$rounds: ${torch_env[*]}${torch_env[*]:+ }torch_gpt.py --ddp $ddp --precision $torch_precision --threads $ddp_threads" >&2
    env "${torch_env[@]}" "$python" bench/peers/torch_gpt.py --ddp "$ddp" --precision "$torch_precision" \
      --threads "$ddp_threads" --steps "$steps" --warmup "$warmup" --json >>"$tmp/torch.jsonl"
  done
done

mkdir -p "$(dirname "$out")"
"$python" bench/peers/combine.py --out "$out" --threads "$threads" --precision-sparsetrain "$precision" \
  --ddp "$ddp" --ddp-threads "$ddp_threads" \
  --sparsetrain-version "$("$bin" --version)" --torch "$tmp/torch.jsonl" "${targets[@]}" "${combine_args[@]}"
