#!/usr/bin/env bash
# Builds every libFuzzer target (fuzz_*, clang -fsanitize=fuzzer,address,undefined) in build-fuzz
# and runs them, FUZZ_JOBS at a time (default: one per core):
#   scripts/fuzz.sh [SECONDS]       each target for SECONDS (default 20; what CI runs)
#   scripts/fuzz.sh --campaign N [SECONDS]
#                                   each target until N executions (or SECONDS, when given, if that
#                                   comes first); the table then shows how many it reached
#   scripts/fuzz.sh --build-only    builds the targets and their seeds, runs nothing
# FUZZ_TARGETS (an extended regex) picks targets, e.g. FUZZ_TARGETS='shard|vocab'. FUZZ_WORKERS
# (default 1) runs that many processes per target on one corpus: on a many-core machine a slow
# target's campaign then takes 1/FUZZ_WORKERS of the time (FUZZ_JOBS x FUZZ_WORKERS processes).
# Seeds: tests/fuzz/seeds/<target>/ (committed: small inputs and regression reproducers) and
# build-fuzz/fuzz-seeds/<target>/ (written by make_fuzz_seeds from the project's own writers and
# ../shared's real files). The corpus grows in build-fuzz/corpus/<target>/ across runs. A crash, a
# sanitizer report, a hang (-timeout) or running out of memory fails the run; the reproducer is
# left in build-fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=time seconds=20 runs=0
if [[ ${1:-} == --build-only ]]; then
  mode=build
elif [[ ${1:-} == --campaign ]]; then
  mode=campaign runs=${2:?usage: scripts/fuzz.sh --campaign EXECUTIONS [SECONDS]} seconds=${3:-0}
elif [[ -n ${1:-} ]]; then
  seconds=$1
fi
build=build-fuzz
# OSS-Fuzz's optimization (-O1, line tables): compiles in ~60% of the time of -O2 -g, and the
# sanitizers' reports keep file and line. NDEBUG as in the product build.
opt="-O1 -gline-tables-only -DNDEBUG"
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DMLBERT_FUZZ=ON -DMLBERT_CUDA=OFF \
  -DMLBERT_BENCH=OFF -DBUILD_TESTING=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="$opt" \
  -DCMAKE_C_FLAGS_DEBUG="$opt" > "$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
mapfile -t targets < <(ninja -C "$build" -t targets all |
  sed -n 's/^\(fuzz_[A-Za-z0-9_]*\): .*/\1/p' | sort -u | grep -E "${FUZZ_TARGETS:-.}" || true)
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "fuzz: no fuzz_* target was configured (MLBERT_FUZZ=ON in $build); see $build.configure.log"
  exit 1
fi
cmake --build "$build" --target "${targets[@]}" make_fuzz_seeds
"$build/bin/make_fuzz_seeds" "$build/fuzz-seeds"
[[ $mode == build ]] && exit 0


# The targets that parse files (shards, vocab.txt, configs, result trees) write each input to a
# scratch file under TMPDIR (tests/fuzz/fuzz_scratch.h). On a disk filesystem every write starts
# block I/O (a config target measured 1,000 exec/s on ext4, 6,300 on tmpfs): keep the scratch files
# in /dev/shm when it is a writable memory filesystem, unless TMPDIR is set.
if [[ -z ${TMPDIR:-} && -d /dev/shm && -w /dev/shm ]] &&
  [[ $(stat -f -c %T /dev/shm 2>/dev/null) == tmpfs ]]; then
  export TMPDIR=/dev/shm
fi
echo "fuzz: scratch files under ${TMPDIR:-/tmp}"

# One target: FUZZ_WORKERS processes (default 1) sharing its corpus (libFuzzer reloads what the
# others add), in a campaign splitting the executions between them; then its row of the table in
# $build/fuzz-$t.row, or exit non-zero at the first failing worker (the others are stopped).
run_target() {
  local t=$1 corpus="$build/corpus/$1" artifacts="$build/artifacts/$1"
  mkdir -p "$corpus" "$artifacts"
  local seeds=() d
  for d in "tests/fuzz/seeds/$t" "$build/fuzz-seeds/$t"; do [[ -d $d ]] && seeds+=("$d"); done
  local workers=${FUZZ_WORKERS:-1}
  local flags=(-timeout=60 -print_final_stats=1 -artifact_prefix="$artifacts/")
  [[ $mode == campaign ]] && flags+=(-runs="$(( (runs + workers - 1) / workers ))")
  [[ $seconds -gt 0 ]] && flags+=(-max_total_time="$seconds")
  local start status=0 w log logs=() pids=()
  start=$(date +%s)
  for ((w = 1; w <= workers; w++)); do
    log="$build/fuzz-$t.log"
    [[ $workers -gt 1 ]] && log="$build/fuzz-$t.w$w.log"
    logs+=("$log")
    "$build/bin/$t" "${flags[@]}" "$corpus" "${seeds[@]}" > "$log" 2>&1 &
    pids+=($!)
  done
  local rc
  for ((w = 1; w <= workers; w++)); do
    rc=0
    wait -n || rc=$?
    if [[ $rc -ne 0 && $status -eq 0 ]]; then
      status=$rc
      kill "${pids[@]}" 2> /dev/null || true
    fi
  done
  # A worker that was stopped (SIGINT, or killed for another's failure) or failed leaves its
  # scratch folder (tests/fuzz/fuzz_scratch.h); a failure's input is in $artifacts already.
  local pid
  for pid in "${pids[@]}"; do rm -rf "${TMPDIR:-/tmp}/mlbert_fuzz_$pid"; done
  local elapsed=$(( $(date +%s) - start ))
  echo "fuzz: $t ended (exit status $status, ${elapsed}s); the last lines of ${logs[0]}:"
  tail -n 12 "${logs[0]}"
  if [[ $status -ne 0 ]]; then
    # The report itself (sanitizer or libFuzzer), which the last lines above do not reach, of each
    # worker that wrote a reproducer. A log may also hold reports of contained children (the
    # reads of fuzz_data_shard), which did not end the run: the report starts at the first one
    # after libFuzzer's last status line ("#N ..."), or, for an input of the starting corpus, at
    # the first that the worker's own process wrote ("==PID==").
    local i first
    for ((i = 0; i < ${#logs[@]}; i++)); do
      log=${logs[i]}
      grep -q 'Test unit written to' "$log" || continue
      first=$(awk -v own="==${pids[i]}==" '
        /^#[0-9]+/ { status = 1; start = 0 }
        /==[0-9]*== ?ERROR|ERROR: libFuzzer|runtime error:/ {
          if (!start) start = NR
          if (!mine && index($0, own) == 1) mine = NR
        }
        END { print status && start ? start : mine ? mine : start ? start : 1 }' "$log")
      echo "fuzz: the report in $log:"
      tail -n +"$first" "$log" | head -n 80
    done
    echo "fuzz: $t FAILED (exit status $status); reproducer and logs: $artifacts/, ${logs[*]}"
    return 1
  fi
  # Executions and rates add up over the workers; coverage is the best worker's.
  local execs=0 rate=0 cov=0 ft=0 e r c f
  for log in "${logs[@]}"; do
    e=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    r=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    read -r c f < <(grep -E '^#[0-9]+.*(DONE|cov:)' "$log" | tail -n 1 |
      sed -n 's/.*cov: \([0-9]*\) ft: \([0-9]*\).*/\1 \2/p') || true
    execs=$((execs + ${e:-0})) rate=$((rate + ${r:-0}))
    if [[ ${c:-0} -gt $cov ]]; then cov=$c; fi
    if [[ ${f:-0} -gt $ft ]]; then ft=$f; fi
  done
  printf '%-22s %12s %8s %7s %7s %7s %6ss\n' "$t" "$execs" "$rate" \
    "$(find "$corpus" -type f | wc -l)" "$cov" "$ft" "$elapsed" > "$build/fuzz-$t.row"
}

# FUZZ_JOBS targets at a time (default: one per core); the first failure fails the run once the
# targets already running have ended.
jobs=${FUZZ_JOBS:-$(nproc)}
failed=0 running=0
for t in "${targets[@]}"; do
  rm -f "$build/fuzz-$t.row"
  if [[ $mode == campaign ]]; then
    echo "fuzz: $t for $runs executions$([[ $seconds -gt 0 ]] && echo " or ${seconds}s")"
  else
    echo "fuzz: $t for ${seconds}s"
  fi
  run_target "$t" &
  running=$((running + 1))
  if [[ $running -ge $jobs ]]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  [[ $failed -eq 0 ]] || break
done
while [[ $running -gt 0 ]]; do
  wait -n || failed=1
  running=$((running - 1))
done
[[ $failed -eq 0 ]] || exit 1
echo
printf '%-22s %12s %8s %7s %7s %7s %7s\n' target executions exec/s corpus cov ft time
for t in "${targets[@]}"; do cat "$build/fuzz-$t.row"; done
echo "fuzz: ${#targets[@]} target(s) without a crash"
