#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang, ASan and UBSan into build-fuzz/, runs each once
# on its long regression inputs (fuzz/regression/<target>) and then for SECONDS (default 60) on a
# scratch copy of its seed corpus (fuzz/corpus/<target>, never grown). Prints one line per target and exits non-zero when any target finds a crash, leak,
# timeout, allocation over the limit or sanitizer report; the reproducer and the log stay in the
# scratch directory (printed), e.g. build-fuzz/runs/<target>/crash-<sha1>.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      e.g. scripts/fuzz.sh 600 idx
#
# SPARSETRAIN_FUZZ_FLAGS adds libFuzzer flags, e.g. -len_control=0 to try long inputs from the
# start (libFuzzer otherwise lets input lengths grow slowly); SPARSETRAIN_FUZZ_JOBS sets the build's
# parallel jobs (default: all cores).
#
# `scripts/setup.sh --fuzz` installs clang and its libFuzzer and OpenMP runtimes besides the usual
# dependencies. docs/reliability.md describes the targets.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors yaml_config idx gpt2_bpe text_corpus event_file hf_config)
build_dir=${SPARSETRAIN_FUZZ_BUILD_DIR:-build-fuzz}

# Limits: inputs up to 64 KiB; one input may run 10 s and allocate 256 MB in one piece; the process
# stays under 2 GB. A file that makes a reader allocate more than its size can justify fails here.
fuzz_flags=(-max_len=65536 -timeout=10 -malloc_limit_mb=256 -rss_limit_mb=2048 -print_final_stats=1)
read -r -a extra_flags <<<"${SPARSETRAIN_FUZZ_FLAGS:-}"
fuzz_flags+=("${extra_flags[@]}")

scripts/setup.sh --fuzz

# -O1 -g: fast enough to fuzz, with asserts on and stack traces that name lines.
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DSPARSETRAIN_BUILD_FUZZERS=ON -DSPARSETRAIN_BUILD_TESTS=OFF \
  -DSPARSETRAIN_BUILD_EXAMPLES=OFF -DSPARSETRAIN_BUILD_BENCH=OFF >/dev/null
cmake --build "$build_dir" --target fuzzers -j "${SPARSETRAIN_FUZZ_JOBS:-$(nproc)}"

# detect_leaks is libFuzzer's default; the options make every sanitizer report fatal.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Worker threads (OpenMP) sleep when idle, as in the tests.
export OMP_WAIT_POLICY=passive

failed=0
for t in "${targets[@]}"; do
  exe="$build_dir/fuzz/fuzz_$t"
  [ -x "$exe" ] || { echo "fuzz: no target '$t' (fuzz/fuzz_$t.cpp)" >&2; exit 2; }
  run="$build_dir/runs/$t"
  rm -rf "$run"
  mkdir -p "$run/corpus" "$run/tmp"
  cp fuzz/corpus/"$t"/* "$run/corpus/"
  dict=()
  [ -f "fuzz/dict/$t.dict" ] && dict=(-dict="fuzz/dict/$t.dict")
  start=$(date +%s)
  rc=0
  # Inputs that once failed but are too long to seed (they would set libFuzzer's length limit and
  # slow the whole run): each runs once, under the same limits, before the fuzzing.
  regressions=()
  [ -d "fuzz/regression/$t" ] && regressions=(fuzz/regression/"$t"/*)
  if [ ${#regressions[@]} -gt 0 ]; then
    TMPDIR="$PWD/$run/tmp" "$exe" "${fuzz_flags[@]}" -artifact_prefix="$run/" "${regressions[@]}" \
      >"$run/log" 2>&1 || rc=$?
  fi
  if [ "$rc" -eq 0 ]; then
    TMPDIR="$PWD/$run/tmp" "$exe" "${fuzz_flags[@]}" "${dict[@]}" -max_total_time="$seconds" \
      -artifact_prefix="$run/" "$run/corpus" >>"$run/log" 2>&1 || rc=$?
  fi
  elapsed=$(( $(date +%s) - start ))
  # The final stats, or after a failure the last status line (#<executions> ...).
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$run/log" | tail -n 1)
  [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$run/log" | tail -n 1)
  if [ "$rc" -eq 0 ]; then
    result=ok
  else
    failed=1
    result="FAILED (exit $rc): $(grep -m 1 -E '^==[0-9]+==ERROR|^SUMMARY|FUZZ_CHECK|runtime error|terminate called' "$run/log" || true)"
    artifacts=$(ls "$run" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' || true)
    result="$result; log $run/log${artifacts:+; input $run/$artifacts}"
  fi
  printf 'fuzz %-12s %10s executions %5s s  %s\n' "$t" "${execs:-?}" "$elapsed" "$result"
done
exit "$failed"
