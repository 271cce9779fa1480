#!/usr/bin/env bash
# Runs the experiments of docs/results.md: the suite, or those named. Each experiment is a folder
# here with its configs and a `runs` list; each run trains with `sparsetrain train_and_eval` into
# runs/experiments/<experiment>/<run>. The suite is every experiment except those in extended/,
# which take longer than an hour: they run when named (extended/<experiment>) or with --quick.
# A finished run is skipped and an interrupted one resumes from its newest checkpoint, so running
# this again completes the set. Then it writes the experiment's tables (experiments/summarize.py)
# and figures (`sparsetrain plot`: loss against step, FLOPs and training seconds, sparsity per
# layer, masks) into runs/experiments/<experiment>/report/. Every run directory records the
# binary's build flags, the CPU and the ISAs its kernels and oneDNN ran (run_environment.jsonl),
# and the tables name them.
#
#   experiments/run.sh [--quick] [--portable] [--precision bf16] [--jobs N] [EXPERIMENT...]
#
#   --quick     every run stops after its `quick_steps` and evaluates on 2 batches (minutes for
#               every experiment) into runs/experiments-quick/: a smoke test of the configs and
#               the pipeline; its accuracies mean nothing.
#   --portable  numbers that carry across machines (docs/reliability.md#portable-mode): a binary
#               built without -march=native (build-portable/), run with `sparsetrain --portable`
#               (kernels and oneDNN capped at AVX2), into runs/experiments-portable/.
#   --precision bf16  every run in bf16 mixed precision (`--precision bf16`,
#               docs/training.md#mixed-precision-bf16), into runs/experiments-bf16/.
#   --jobs N    runs N trainings at once (default 1); each uses the threads its `runs` line names.
#
# A `runs` line:  <run name> <config> <seed> <threads> <quick_steps> [extra sparsetrain options]
# In the options, @<run> stands for the newest complete checkpoint of that earlier run of the same
# experiment (e.g. --checkpoint_path @pretrain_dense); such a line waits for the runs before it.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
portable=0
precision=fp32
jobs=1
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --portable) portable=1 ;;
    --precision)
      precision=${2:?--precision needs fp32 or bf16}
      shift
      [ "$precision" = fp32 ] || [ "$precision" = bf16 ] || {
        echo "experiments/run.sh: --precision is fp32 or bf16, got '$precision'" >&2
        exit 2
      }
      ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    -*) echo "experiments/run.sh: unknown option '$1' (--quick, --portable, --precision P, --jobs N)" >&2; exit 2 ;;
    *) names+=("$1") ;;
  esac
  shift
done
if [ ${#names[@]} -eq 0 ]; then
  suite=(experiments/*/runs)
  [ "$quick" -eq 1 ] && suite+=(experiments/extended/*/runs)
  for f in "${suite[@]}"; do
    f=${f#experiments/}
    names+=("${f%/runs}")
  done
fi
for name in "${names[@]}"; do
  [ -f "experiments/$name/runs" ] || {
    echo "experiments/run.sh: no experiment '$name' (expected experiments/$name/runs)" >&2
    exit 2
  }
done

if [ "$portable" -eq 1 ]; then
  bin=(build-portable/src/cli/sparsetrain --portable)
  [ -x "${bin[0]}" ] || SPARSETRAIN_BUILD_DIR=build-portable SPARSETRAIN_BUILD_TARGETS=sparsetrain_bin \
    scripts/build.sh -DSPARSETRAIN_NATIVE=OFF
else
  bin=(build/src/cli/sparsetrain)
  [ -x "${bin[0]}" ] || scripts/build.sh
fi
out_root=runs/experiments
[ "$quick" -eq 1 ] && out_root=runs/experiments-quick
[ "$portable" -eq 1 ] && out_root=$out_root-portable
precision_options=()
if [ "$precision" = bf16 ]; then
  out_root=$out_root-bf16
  precision_options=(--precision bf16)
fi

# One training; its output goes to <model_dir>.log, and when it completes its wall time in seconds
# to <model_dir>.seconds. Any other existing directory resumes.
train_one() {
  local exp=$1 run=$2 config=$3 seed=$4 threads=$5 quick_steps=$6
  shift 6
  local dir="$out_root/$exp/$run"
  if [ -f "$dir.seconds" ]; then
    echo "  $run: done"
    return 0
  fi
  local quick_options=()
  [ "$quick" -eq 1 ] && quick_options=(--max_steps "$quick_steps" --eval_batches 2)
  local options=() arg
  for arg in "$@"; do
    if [[ "$arg" == @* ]]; then
      local source="$out_root/$exp/${arg#@}" newest
      newest=$(ls "$source"/checkpoint_*.done 2>/dev/null | sed 's/.*checkpoint_\([0-9]*\)\.done/\1/' | sort -n | tail -n 1)
      if [ -z "$newest" ]; then
        echo "  $run: FAILED, $arg has no complete checkpoint in $source" >&2
        return 1
      fi
      arg="$source/checkpoint_$newest.safetensors"
    fi
    options+=("$arg")
  done
  mkdir -p "$out_root/$exp"
  local start=$SECONDS
  if "${bin[@]}" train_and_eval --params "experiments/$exp/$config" --model_dir "$dir" --seed "$seed" \
      --threads "$threads" "${quick_options[@]}" "${precision_options[@]}" "${options[@]}" >"$dir.log" 2>&1; then
    echo "$((SECONDS - start))" >"$dir.seconds"
    echo "  $run: $((SECONDS - start)) s"
  else
    echo "  $run: FAILED, see $dir.log" >&2
    return 1
  fi
}

# Waits for whichever running training ends first (not the oldest: the next run starts as soon as
# a slot is free) and drops it from pids.
wait_any() {
  local ended=""
  wait -n -p ended "${pids[@]}" || failed=1
  local running=()
  for pid in "${pids[@]}"; do [ "$pid" = "$ended" ] || running+=("$pid"); done
  pids=("${running[@]}")
}

failed=0
for exp in "${names[@]}"; do
  echo "== $exp =="
  pids=()
  while read -r run config seed threads quick_steps extra; do
    case "$run" in ''|'#'*) continue ;; esac
    if [[ "$extra" == *@* ]]; then
      for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
      pids=()
    fi
    # shellcheck disable=SC2086  # extra options split on purpose
    train_one "$exp" "$run" "$config" "$seed" "$threads" "$quick_steps" $extra &
    pids+=($!)
    if [ ${#pids[@]} -ge "$jobs" ]; then wait_any; fi
  done <"experiments/$exp/runs"
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  report="$out_root/$exp/report"
  mkdir -p "$report"
  python3 experiments/summarize.py "experiments/$exp" "$out_root/$exp" >"$report/tables.md" || failed=1
  echo "  tables: $report/tables.md"
  # Figures of one seed per group (seed 0, or runs without a seed suffix) that finished.
  plot_dirs=()
  while read -r run _; do
    case "$run" in ''|'#'*|*_s[1-9]*) continue ;; esac
    [ -f "$out_root/$exp/$run.seconds" ] && plot_dirs+=(--model_dir "$out_root/$exp/$run")
  done <"experiments/$exp/runs"
  if [ ${#plot_dirs[@]} -gt 0 ]; then
    "${bin[@]}" plot "${plot_dirs[@]}" --out "$report" >"$report/plot.log" 2>&1 || { failed=1; cat "$report/plot.log" >&2; }
    echo "  figures: $report/*.svg"
  fi
done
exit "$failed"
