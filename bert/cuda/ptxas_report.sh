#!/bin/sh
# Prints the ptxas resource report the build filed for every CUDA kernel (see ptxas_capture.sh):
# one row per kernel and architecture with registers, shared memory, stack frame and spill bytes.
# Usage: bert/cuda/ptxas_report.sh [build dir, default build] [kernel name filter regex]
build=${1:-build}
filter=${2:-.}
dir=$build/bert/cuda/ptxas
if [ ! -d "$dir" ]; then
  echo "no ptxas reports under $dir: build mlbert_bert_cuda first" >&2
  exit 1
fi
demangle=cat
command -v c++filt >/dev/null 2>&1 && demangle=c++filt
cat "$dir"/*.ptxas.txt | awk -F "'" '
  /Compiling entry function/ { name = $2; arch = $4; entry = 1; next }
  /bytes stack frame/ && entry { split($0, f, " "); stack = f[1]; spill_st = f[5]; spill_ld = f[9]; next }
  /Used [0-9]+ registers/ && entry {
    match($0, /Used [0-9]+ registers/); regs = substr($0, RSTART + 5, RLENGTH - 15)
    smem = 0; if (match($0, /[0-9]+ bytes smem/)) smem = substr($0, RSTART, RLENGTH - 11)
    printf "%s %s %s %s %s %s %s\n", name, arch, regs, smem, stack, spill_st, spill_ld; entry = 0 }' |
  while read -r name arch regs smem stack st ld; do
    pretty=$(echo "$name" | $demangle | sed -e 's/^void //' -e 's/(anonymous namespace):://g' -e 's/mlbert::cuda:://g' \
      -e 's/attention_detail:://' -e 's/rows:://' -e 's/(.*$//' -e 's/__nv_bfloat16/bf16/g' -e 's/__half/fp16/g')
    printf '%-6s %5s %6s %6s %6s %6s  %s\n' "$arch" "$regs" "$smem" "$stack" "$st" "$ld" "$pretty"
  done | grep -E "$filter" | sort -k7 -k1,1 |
  awk 'BEGIN { printf "%-6s %5s %6s %6s %6s %6s  %s\n", "arch", "regs", "smem", "stack", "spillS", "spillL", "kernel" } { print }'
