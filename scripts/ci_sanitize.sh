#!/usr/bin/env bash
# CI: the CPU parts built with AddressSanitizer + UBSan (MLBERT_SANITIZE=ON; CUDA, benchmarks and
# fuzzers off; -O1) in build-asan, then the whole ctest suite under them: unit, CLI, multi-rank
# (mpirun) and parity tests. A sanitizer report fails the test that triggers it: ASan and UBSan
# abort at the first finding (-fno-sanitize-recover), LeakSanitizer fails the process at exit.
# Leak policy: detect_leaks=1 everywhere; tests/sanitizers/lsan.supp suppresses only leaks whose
# allocation happens inside Open MPI's or HDF5's own code, never a stack of project code alone.
# Usage: scripts/ci_sanitize.sh  (MLBERT_PYTHON: the interpreter with the parity oracles; default
# build-venv/bin/python, the venv `make test` makes, when it exists)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-asan
jobs=$(nproc)
python=${MLBERT_PYTHON:-}
[[ -z $python && -x build-venv/bin/python ]] && python=$PWD/build-venv/bin/python
cmake -S . -B "$build" -G Ninja -DMLBERT_SANITIZE=ON -DMLBERT_CUDA=OFF -DMLBERT_BENCH=OFF \
  -DMLBERT_FUZZ=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  -DCMAKE_C_FLAGS_DEBUG="-O1 -g1" ${python:+-DMLBERT_PYTHON="$python"} \
  > "$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
start=$SECONDS
cmake --build "$build" -j "$jobs"
echo "ci_sanitize: build took $((SECONDS - start)) s"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
cd "$build"
start=$SECONDS
status=0
ctest --output-on-failure -j "$jobs" || status=$?
echo "ci_sanitize: tests took $((SECONDS - start)) s"
exit $status
