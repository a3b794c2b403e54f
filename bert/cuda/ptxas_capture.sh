#!/bin/sh
# CUDA compiler launcher for mlbert_bert_cuda: runs the compile command given as arguments and
# saves the ptxas resource report (-Xptxas -v: registers, shared memory, stack frame, spills per
# kernel and architecture) to <report_dir>/<object name>.ptxas.txt, where the unit test
# `bert_cuda_unit` checks the attention and LayerNorm kernels for spills. The report lines are kept
# out of the build log; every other diagnostic passes through unchanged.
# Usage (set by bert/cuda/CMakeLists.txt): ptxas_capture.sh <report_dir> <compiler> <args...>
report_dir=$1
shift
object=""
previous=""
for arg in "$@"; do
  [ "$previous" = "-o" ] && object=$arg
  previous=$arg
done
log=$(mktemp "${TMPDIR:-/tmp}/mlbert-ptxas.XXXXXX") || exit 1
"$@" 2>"$log"
status=$?
if [ -n "$object" ]; then
  mkdir -p "$report_dir"
  grep -E '^ptxas info|bytes stack frame' "$log" >"$report_dir/$(basename "$object").ptxas.txt"
fi
grep -v -E '^ptxas info|bytes stack frame' "$log" >&2
rm -f "$log"
exit $status
