#!/usr/bin/env bash
# CI: the CPU parts built with AddressSanitizer + UBSan (MLBERT_SANITIZE=ON; CUDA, benchmarks and
# fuzzers off; -Og) in build-asan, then the unit, CLI and multi-rank (mpirun) tests under them. A
# sanitizer report fails the test that triggers it: ASan and UBSan abort at the first finding
# (-fno-sanitize-recover), LeakSanitizer fails the process at exit.
# Left out (printed at the start): the parity tests (minutes in the Python oracles; the C++ they
# drive is what the unit tests cover), the Chromium report tests, the demo, the device bundle's CPU
# training run, and the kill -9 / fault-injection harnesses (each a training run many times over;
# the trainer's code paths run under the sanitizers in harness_mpi), and the container, Slurm and
# end-to-end reproduction tests (they build an image or run the demo under Slurm; the project code
# they run is the demo's and the launcher's). Measured under ASan on 2 busy
# cores, all but the last two cost ~10 min more (the demo alone 7); `--all` runs them too.
# Leak policy: detect_leaks=1 everywhere; tests/sanitizers/lsan.supp suppresses only leaks whose
# allocation happens inside Open MPI's own code, never a stack of project code alone. The
# multi-rank tests run with the slow unwinder (fast_unwind_on_malloc=0), so that a leak made in an
# Open MPI plugin shows the Open MPI library that loaded it instead of "<unknown module>".
# Usage: scripts/ci_sanitize.sh [--all] [--build-only | --tests-only]  (MLBERT_PYTHON: the
# interpreter with the parity oracles; default build-venv/bin/python, the venv `make test` makes,
# when it exists). `.ci/run` builds with --build-only at low priority while `make test` runs, then
# runs --tests-only.
set -euo pipefail
cd "$(dirname "$0")/.."
excluded='parity|logging_report_browser|harness_demo|device_check: the one-GPU training run|harness_crash|harness_faults|infra_|reproduce_e2e'
phase=all
for arg in "$@"; do
  case $arg in
    --all) excluded='^$' ;;
    --build-only) phase=build ;;
    --tests-only) phase=tests ;;
    *) echo "usage: $0 [--all] [--build-only | --tests-only]" >&2; exit 2 ;;
  esac
done
build=build-asan
# -Og: a quarter less compile time than -O1 for about its speed (-O0 compiles faster still but
# runs the tests 3x slower; both measured, see BENCHMARKS.md). SANITIZE_FLAGS overrides.
opt=${SANITIZE_FLAGS:--Og -g1}
jobs=$(nproc)
python=${MLBERT_PYTHON:-}
[[ -z $python && -x build-venv/bin/python ]] && python=$PWD/build-venv/bin/python
# --tests-only keeps the configuration --build-only made (the venv may have appeared since; the
# parity tests it would add are left out anyway) and only checks that the build is up to date.
if [[ $phase != tests || ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -G Ninja -DMLBERT_SANITIZE=ON -DMLBERT_CUDA=OFF -DMLBERT_BENCH=OFF \
    -DMLBERT_FUZZ=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="$opt" \
    -DCMAKE_C_FLAGS_DEBUG="$opt" ${python:+-DMLBERT_PYTHON="$python"} \
    > "$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
fi
start=$SECONDS
cmake --build "$build" -j "$jobs"
echo "ci_sanitize: build took $((SECONDS - start)) s"
[[ $phase == build ]] && exit 0
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
# The shard reader processes print nowhere (their stdout and stderr are not the test's): their
# sanitizer reports go to one file, and any line in it fails this script.
export MLBERT_SHARD_READER_LOG="$PWD/$build/shard-reader.log"
rm -f "$MLBERT_SHARD_READER_LOG"
cd "$build"
multirank='harness_mpi|harness_demo|device_check: the one-GPU training run|harness_crash|harness_faults'
echo "ci_sanitize: left out (see the header of $0 for why):"
ctest -N -R "$excluded" | sed -n 's/^ *Test *#[0-9]*: /  /p'
start=$SECONDS
status=0
ctest --output-on-failure -j "$jobs" -E "$excluded|$multirank" || status=$?
ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" \
  ctest --output-on-failure -R "$multirank" -E "$excluded" || status=$?
echo "ci_sanitize: tests took $((SECONDS - start)) s"
# LeakSanitizer's "Unable to get registers from thread N" is a note, not a report: it could not
# suspend a thread that was exiting while the leak check stopped the process (seen once on a loaded
# 2-core VM, 2026-12-04); the check goes on, and a leak it then finds is reported as an error line.
lsan_note='^==[0-9]+==Unable to get registers from thread [0-9]+\.$'
if [[ -s $MLBERT_SHARD_READER_LOG ]]; then
  notes=$(grep -cE "$lsan_note" "$MLBERT_SHARD_READER_LOG" || true)
  ((notes)) && echo "ci_sanitize: $notes LeakSanitizer note(s) from the shard reader processes that" \
    "a thread could not be suspended (not errors)"
  if grep -qvE "$lsan_note" "$MLBERT_SHARD_READER_LOG"; then
    echo "ci_sanitize: the shard reader processes reported:"
    grep -vE "$lsan_note" "$MLBERT_SHARD_READER_LOG"
    status=1
  fi
fi
exit $status
