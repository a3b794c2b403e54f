#!/usr/bin/env bash
# Device check of the CUDA backend (issue 5) on one GPU machine (an H200 here), under 8 minutes
# including the build. It prints a short table last; full logs go to $OUT (the device tool's
# result folder) or to build-device/logs.
#   1. build bert_cuda_unit, bert_cuda_check and bert_cuda_bench for sm_90 only; when this image
#      lacks a build dependency (HDF5, OpenBLAS, MPI, Catch2... are not part of every CUDA image),
#      use instead the bundle prepared on a CPU machine with `scripts/device_check.sh --make-bundle`
#      and carried along (build-cuda-bundle/, git-ignored; cuBLASLt comes from the device's CUDA);
#   2. bert_cuda_unit: host logic and the ptxas report (no spills in attention/LayerNorm kernels);
#   3. bert_cuda_check: every CUDA op against the CPU reference on fresh random inputs (bf16, fp16),
#      then a full BERT-large forward + backward on a small variable-length batch;
#   4. bert_cuda_bench: one BERT-large training step (forward, backward, norm, LAMB) in bf16 and
#      fp16, padded 16 x 512 and the 6/3/2/5 length mix: seq/s, MFU, with GEMM/copy baselines;
#   5. bench/cuda/torch_bert_step.py: the same step in PyTorch (BertForPreTraining, bf16 autocast,
#      SDPA; eager and torch.compile). Torch and transformers come from the device image's own
#      python3 (/opt/torch/.venv, listed in the device notes); nothing is downloaded or carried.
#
# Usage:  scripts/device_check.sh [--quick] [--bundle]   on the GPU machine (--bundle: skip the
#                                                       source build, run the carried bundle)
#         scripts/device_check.sh --make-bundle           here, to prebuild build-cuda-bundle/
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
START=$(date +%s)
BUDGET=${MLBERT_DEVICE_BUDGET_S:-465}  # keep the whole run under 8 minutes
QUICK=0
MODE=check
FORCE_BUNDLE=0
for arg in "$@"; do
  case $arg in
    --quick) QUICK=1 ;;
    --make-bundle) MODE=bundle ;;
    --bundle) FORCE_BUNDLE=1 ;;
    *) echo "usage: scripts/device_check.sh [--quick] [--bundle] | --make-bundle" >&2; exit 2 ;;
  esac
done

BUNDLE=$ROOT/build-cuda-bundle
TARGETS=(bert_cuda_unit bert_cuda_check bert_cuda_bench)

# ---- bundle mode: build the three executables for sm_90 here and pack them with the shared
# libraries a CUDA image may lack (OpenBLAS and its Fortran runtime, OpenMP, the CUDA runtime).
if [[ $MODE == bundle ]]; then
  set -e
  cmake -S . -B build-cuda-sm90 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMLBERT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
  cmake --build build-cuda-sm90 --target "${TARGETS[@]}" -j "$(nproc)"
  rm -rf "$BUNDLE" && mkdir -p "$BUNDLE/stage/bin" "$BUNDLE/stage/lib" "$BUNDLE/stage/ptxas"
  for t in "${TARGETS[@]}"; do cp build-cuda-sm90/bin/$t "$BUNDLE/stage/bin/"; done
  cp build-cuda-sm90/bert/cuda/ptxas/*.txt "$BUNDLE/stage/ptxas/"
  for t in "${TARGETS[@]}"; do ldd build-cuda-sm90/bin/$t; done | awk '/=> \//{print $1, $3}' | sort -u |
    while read -r name path; do
      case $name in
        libcuda.so*|libcublasLt.so*|libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libpthread*|libdl*|librt*) ;;
        *) cp -L "$path" "$BUNDLE/stage/lib/$name" ;;
      esac
    done
  git rev-parse HEAD >"$BUNDLE/stage/COMMIT"
  tar -C "$BUNDLE/stage" -cJf "$BUNDLE/bundle.tar.xz" . && rm -rf "$BUNDLE/stage"
  ls -la "$BUNDLE"
  echo "bundle ready: carry build-cuda-bundle (commit $(git rev-parse --short HEAD))"
  exit 0
fi

# ---- check mode (the GPU machine)
LOGS=${OUT:-$ROOT/build-device/logs}
mkdir -p "$LOGS"
SUMMARY=$LOGS/summary.txt
: >"$SUMMARY"
elapsed() { echo $(($(date +%s) - START)); }
left() { echo $((BUDGET - $(elapsed))); }
note() { echo "[$(elapsed)s] $*"; echo "$*" >>"$SUMMARY"; }
stage_timeout() {  # min(wanted, time left minus a reserve for the later stages)
  local want=$1 reserve=$2 avail
  avail=$(($(left) - reserve))
  ((avail < want)) && want=$avail
  ((want < 10)) && want=10
  echo "$want"
}

{
  echo "== device"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1
  nvcc --version 2>&1 | tail -2
  cmake --version 2>&1 | head -1
  echo "nproc $(nproc); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
} >"$LOGS/build.log" 2>&1
note "device: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"

# 1. Build (sm_90 only, the three CUDA executables and what they need), or the carried bundle.
BIN=""
PTXAS_DIR=""
BUILD_DIR=$ROOT/build-device
t0=$(date +%s)
if ((!FORCE_BUNDLE)) && timeout "$(stage_timeout 240 200)" bash -c "
    cmake -S . -B '$BUILD_DIR' -G Ninja -DCMAKE_BUILD_TYPE=Release -DMLBERT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 &&
    cmake --build '$BUILD_DIR' --target ${TARGETS[*]} -j $(nproc)" >>"$LOGS/build.log" 2>&1; then
  BIN=$BUILD_DIR/bin
  PTXAS_DIR=$BUILD_DIR/bert/cuda/ptxas
  note "build: sm_90 from source in $(($(date +%s) - t0)) s"
elif [[ -f $BUNDLE/bundle.tar.xz ]]; then
  rm -rf "$BUNDLE/run" && mkdir -p "$BUNDLE/run" && tar -C "$BUNDLE/run" -xJf "$BUNDLE/bundle.tar.xz"
  BIN=$BUNDLE/run/bin
  PTXAS_DIR=$BUNDLE/run/ptxas
  export LD_LIBRARY_PATH=$BUNDLE/run/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  if ((FORCE_BUNDLE)); then
    note "build: skipped (--bundle); using the carried bundle (commit $(cut -c1-8 "$BUNDLE/run/COMMIT"))"
  else
    note "build: from source FAILED (build.log: $(grep -m1 -E 'Could NOT find|not found|Error' "$LOGS/build.log" | cut -c1-90)); using the carried bundle (commit $(cut -c1-8 "$BUNDLE/run/COMMIT"))"
  fi
else
  note "build: FAILED and no bundle was carried; see build.log"
fi
# cuBLASLt: from the toolkit, else from the pip wheels next to PyTorch.
if ! ldconfig -p 2>/dev/null | grep -q libcublasLt.so.13; then
  lt=$(find /usr/local /opt -name 'libcublasLt.so.13*' 2>/dev/null | head -1)
  [[ -n $lt ]] && export LD_LIBRARY_PATH=$(dirname "$lt")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

if [[ -n $BIN ]]; then
  # Tensor-core instructions in the attention kernels (HMMA = mma.sync on sm_80/sm_90).
  if command -v cuobjdump >/dev/null 2>&1; then
    cuobjdump -sass "$BIN/bert_cuda_check" 2>/dev/null | awk '
      /Function : / { kernel = ($0 ~ /attention_(fwd|bwd)_kernel/) ? $NF : "" }
      kernel != "" && /HMMA/ { count[kernel]++ }
      END { for (k in count) printf "sass: %d HMMA in %s\n", count[k], substr(k, 1, 60) }' >"$LOGS/sass.txt"
    note "sass: $(wc -l <"$LOGS/sass.txt") attention kernels with HMMA; counts $(awk '{printf "%s ", $2}' "$LOGS/sass.txt")"
  fi

  # 2. Host logic and the ptxas report.
  MLBERT_PTXAS_REPORT_DIR=$PTXAS_DIR timeout 60 "$BIN/bert_cuda_unit" >"$LOGS/unit.log" 2>&1
  note "unit: $(grep -E 'All tests passed|test cases:' "$LOGS/unit.log" | tail -1)"

  # 3. Every op, then BERT-large forward + backward, against the CPU reference.
  check_args=()
  ((QUICK)) && check_args+=(--quick)
  timeout "$(stage_timeout 200 170)" "$BIN/bert_cuda_check" "${check_args[@]}" >"$LOGS/check.log" 2>&1
  status=$?
  note "check: $( (grep -E '^bert_cuda_check:' "$LOGS/check.log" || tail -1 "$LOGS/check.log") | tail -1 | cut -c1-110) (exit $status)"
  grep -E '  FAIL' "$LOGS/check.log" | head -12 | cut -c1-150 >>"$SUMMARY"

  # 4. Throughput of the training step.
  bench_args=(--steps 10 --warmup 3)
  ((QUICK)) && bench_args=(--steps 4 --warmup 2)
  timeout "$(stage_timeout 150 120)" "$BIN/bert_cuda_bench" "${bench_args[@]}" >"$LOGS/bench.log" 2>&1
  status=$?
  note "bench: exit $status ($( (grep -m1 '^baseline' "$LOGS/bench.log" || tail -1 "$LOGS/bench.log") | cut -c1-110))"
fi

# 5. PyTorch on the same GPU (the image's python3 holds torch and transformers).
PY=python3
[[ -x /opt/torch/.venv/bin/python3 ]] && PY=/opt/torch/.venv/bin/python3
torch_args=(--steps 10 --warmup 3)
((QUICK)) && torch_args=(--steps 4 --warmup 2 --compile no)
if (($(left) < 150)); then torch_args+=(--compile no); note "torch: too little time left for torch.compile"; fi
PYTHONUNBUFFERED=1 timeout "$(stage_timeout 240 0)" "$PY" bench/cuda/torch_bert_step.py "${torch_args[@]}" >"$LOGS/torch.log" 2>&1
note "torch: exit $? ($(head -1 "$LOGS/torch.log" | cut -c1-90))"

# 6. The table.
{
  echo
  echo "== throughput (BERT-large step, batch 16; MFU against the dense datasheet peak)"
  printf '%-14s %-5s %-7s %9s %8s %9s\n' impl dtype mix seq/s MFU step_ms
  grep -h '^RESULT' "$LOGS/bench.log" "$LOGS/torch.log" 2>/dev/null |
    awk '{for (i = 5; i <= NF; ++i) {split($i, kv, "="); v[kv[1]] = kv[2]}
          printf "%-14s %-5s %-7s %9.1f %7.1f%% %9.2f\n", $2, $3, $4, v["seq_per_s"], 100 * v["mfu"], v["step_ms"]}'
  echo "total $(elapsed) s; logs in $LOGS"
} >>"$SUMMARY"
echo
echo "================ device check summary ================"
cat "$SUMMARY"
