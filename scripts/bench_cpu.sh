#!/usr/bin/env bash
# Reruns every CPU-side benchmark of BENCHMARKS.md: the tables "Audit speed", "Data pipeline",
# "CPU step", "Load balance" and "Simulator" (speed and the fixture predictions). The GPU tables
# come from scripts/device_check.sh, the reliability table from its ctest and fuzz commands.
#
# Design choice: each benchmark runs with the command its BENCHMARKS.md row names (--quick: the
# smallest settings, to check that every command still runs), its output kept whole in
# OUT_DIR/<name>.txt and its last lines echoed; a benchmark that cannot run here (no Python
# oracle, no ../shared fixtures) is named as not run, never left out silently, and makes the exit
# status 1 like a failing one.
#
#   scripts/bench_cpu.sh [--quick] [--build DIR] [--python PY] [--out DIR] [--only REGEX]
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

QUICK=0 BUILD=$ROOT/build PY=${MLBERT_PYTHON:-$ROOT/build-venv/bin/python} OUT_DIR="" ONLY=.
while (($#)); do
  case $1 in
    --quick) QUICK=1; shift ;;
    --build) BUILD=$(realpath -m "$2"); shift 2 ;;
    --python) PY=$2; shift 2 ;;
    --out) OUT_DIR=$(realpath -m "$2"); shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    *) sed -n '12p' "$0" >&2; exit 2 ;;
  esac
done
OUT_DIR=${OUT_DIR:-$BUILD/bench-cpu}
SHARED=$ROOT/../shared
BIN=$BUILD/bin
mkdir -p "$OUT_DIR"

TARGETS=(mlbert mlbert-core mlbert-shard-reader bench_check logging_audit_bench report_bench
  data_bench shard_read_bench bert_bench harness_bench_overlap harness_bench_straggler
  harness_bench_data_path simulate_bench)
echo "bench_cpu: building ${TARGETS[*]} in $BUILD"
cmake --build "$BUILD" -j "${MLBERT_JOBS:-2}" --target "${TARGETS[@]}" >"$OUT_DIR/build.log" 2>&1 ||
  { tail -20 "$OUT_DIR/build.log"; echo "bench_cpu: build failed ($OUT_DIR/build.log)"; exit 1; }

# quick VALUE / full VALUE: the setting of this mode.
pick() { ((QUICK)) && echo "$1" || echo "$2"; }
FAILED=() NOT_RUN=()
# bench NAME TABLE NEEDS -- COMMAND...: run one benchmark into OUT_DIR/NAME.txt.
bench() {
  local name=$1 table=$2 needs=$3
  shift 4
  [[ $name =~ $ONLY ]] || return 0
  case $needs in
    *python*) [[ -x $PY ]] || { NOT_RUN+=("$name (no Python oracle at $PY)"); echo "== $name: NOT RUN (no $PY)"; return; } ;;&
    *shared*) [[ -d $SHARED/fixtures ]] || { NOT_RUN+=("$name (no $SHARED/fixtures)"); echo "== $name: NOT RUN (no fixtures)"; return; } ;;
  esac
  echo "== $name (BENCHMARKS.md \"$table\"): $*"
  local start=$SECONDS rc=0
  "$@" >"$OUT_DIR/$name.txt" 2>&1 || rc=$?
  if ((rc == 0)); then
    tail -n 6 "$OUT_DIR/$name.txt"
    echo "== $name: done in $((SECONDS - start)) s, output in $OUT_DIR/$name.txt"
  else
    tail -n 20 "$OUT_DIR/$name.txt"
    echo "== $name: FAILED (exit $rc), output in $OUT_DIR/$name.txt"
    FAILED+=("$name")
  fi
}

export MLBERT_SHARD_READER=$BIN/mlbert-shard-reader
bench audit_check "Audit speed" python,shared -- \
  "$BIN/bench_check" --python "$PY" --reps "$(pick 1 5)" --big-gib "$(pick 0 1)"
bench audit_commands "Audit speed" python,shared -- \
  "$PY" bench/mlperf_logging/audit_bench.py --mlbert "$BIN/mlbert" --lib "$BIN/logging_audit_bench" \
  --shared "$SHARED" --repeat "$(pick 1 9)"
bench audit_report "Audit speed" shared -- \
  "$BIN/report_bench" "$BIN/mlbert" "$SHARED/fixtures/mlperf_logs" "$(pick 1 9)"
bench data_prep "Data pipeline" python -- \
  "$BIN/data_bench" --python "$PY" --mb "$(pick 1 8)" --ref-mb "$(pick 0.25 1)" --threads "$(pick 1 1,2)"
bench shard_reads "Data pipeline" none -- \
  "$BIN/shard_read_bench" --rows "$(pick 2000 20000)" --reps "$(pick 20 300)"
bench data_path "Data pipeline" none -- \
  "$BIN/harness_bench_data_path" --dir "${TMPDIR:-/tmp}/mlbert_dp_bench_$(pick quick full)" \
  --rows-per-shard "$(pick 20 500)" --steps "$(pick 20 1000)"
for threads in $(pick 1 "1 2"); do
  bench "cpu_step_${threads}t" "CPU step" python -- \
    "$BIN/bert_bench" --python "$PY" --steps "$(pick 1 5)" --threads "$threads"
done
bench overlap "CPU step" none -- \
  env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 \
  -x OMP_NUM_THREADS=1 "$BIN/harness_bench_overlap" --steps "$(pick 2 12)"
bench load_balance "Load balance" none -- \
  "$BIN/harness_bench_straggler" --rows "$(pick 2000000 156726829)" --steps "$(pick 5 200)"
bench simulate_speed "Simulator" shared -- "$BIN/simulate_bench" "$SHARED"
# The fixture rows of the "Simulator" table: each published folder's olympic mean, published
# against predicted, with the profile taken; a folder mlbert does not model says why.
predict_fixtures() {
  local dir out
  for dir in "$SHARED"/fixtures/mlperf_logs_early/*/*/*/ "$SHARED"/fixtures/mlperf_logs/*/*/*/; do
    [[ -f $dir/system.json ]] || continue
    echo "--- ${dir#"$SHARED"/fixtures/}"
    out=$("$BIN/mlbert" simulate --results "$dir" 2>&1) || { echo "$out" | tail -n 1; continue; }
    grep -E '^(profile:|olympic mean)' <<<"$out"
  done
  for dir in samsung_dgxa100_128x8 dgxa100_128x8; do
    echo "--- --system $dir"
    "$BIN/mlbert" simulate --system "$dir" | grep -E '^(profile:|predicted time)' || return 1
  done
}
bench simulate_predictions "Simulator" shared -- predict_fixtures

echo
echo "bench_cpu: $(pick quick full) mode; outputs in $OUT_DIR"
((${#NOT_RUN[@]})) && printf 'bench_cpu: NOT RUN: %s\n' "${NOT_RUN[@]}"
((${#FAILED[@]})) && printf 'bench_cpu: FAILED: %s\n' "${FAILED[@]}"
((${#FAILED[@]} + ${#NOT_RUN[@]} == 0))
