#!/usr/bin/env bash
# Builds every libFuzzer target (tests/fuzz/, clang -fsanitize=fuzzer,address,undefined) in build-fuzz
# and runs each for the given number of seconds (default 60). A crash or sanitizer report fails.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=build-fuzz
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DMLBERT_FUZZ=ON -DMLBERT_CUDA=OFF \
  -DBUILD_TESTING=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; exit 1; }
mapfile -t targets < <(ninja -C "$build" -t targets all | sed -n 's/^\(fuzz_[A-Za-z0-9_]*\): .*/\1/p' | sort -u)
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "fuzz: no fuzz_* target was configured (MLBERT_FUZZ=ON in $build); see $build.configure.log"
  exit 1
fi
cmake --build "$build" --target "${targets[@]}"
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  mkdir -p "$corpus"
  seeds=()
  [[ -d "tests/fuzz/seeds/$t" ]] && seeds=("tests/fuzz/seeds/$t")
  echo "fuzz: $t for ${seconds}s"
  "$build/bin/$t" -max_total_time="$seconds" -print_final_stats=1 "$corpus" "${seeds[@]}" 2>&1 | tail -n 15
done
echo "fuzz: ${#targets[@]} target(s) ran ${seconds}s each without a crash"
