#!/usr/bin/env bash
# The device check of the CUDA backend on one GPU machine (a Hopper GPU: H100, H200), prepared
# on a CPU machine so that it works the first time on a bare image that has nvcc, CMake and a
# PyTorch venv but none of the project's libraries (HDF5, Open MPI, OpenBLAS, CLI11, json, ...)
# and no package registry.
#
# Design choice: a prebuilt bundle, not a build on the GPU machine. `--prepare` builds the
# executables here (sm_90), and packs them with every shared library they and Open MPI's plugins
# load except those the device image brings (glibc, libstdc++, the driver's libcuda, CUDA 13's
# cuBLASLt, the NCCL of its PyTorch wheel), plus a relocatable Open MPI runtime (orted, MCA and
# PMIx plugins, help files) that OPAL_PREFIX points at, into build-device-bundle/bundle.tar.xz
# (git-ignored; copied with the working tree). Building there would spend minutes of GPU time
# and depend on its compiler, pkg-config and CMake; the bundle's binaries run on the device's
# newer glibc, which `--verify` and a Debian root without the dev packages check (docs/gpu.md).
#
#   scripts/device_check.sh --prepare [--build-dir DIR] [--jobs N]   here: build, bundle, verify
#   scripts/device_check.sh --verify                                 here: check the bundle again
#   scripts/device_check.sh [--stage LIST] [--seed N] [--only CASE] [--deadline S] [--build-dir DIR]
#                                                                    there: the stages below
#   scripts/device_check.sh --exec PROGRAM [ARGS...]                 there: one program of the
#                                                                    bundle in its environment
#
# Stages, each with its own time cap and log under $OUT (8 files: summary.txt and one
# log per stage); the summary table is printed whatever a stage does (scripts/device_stages.sh),
# and the exit status is non-zero when a stage failed, hung, crashed or got no time:
#   setup     the bundle's libraries resolve, GPU and driver, bert_cuda_unit (host logic, ptxas
#             report), one real op (cuda_ops_device_test), HMMA counts in the attention SASS
#   ops_bf16  bert_cuda_check --ops-only --dtype bf16: every op against the CPU reference
#   ops_fp16  the same in fp16
#   model     bert_cuda_check --model-only: BERT-large forward + backward vs the CPU, bf16 and fp16
#   bench     bert_cuda_bench --check: BERT-large step throughput, bf16/fp16 x padded/mix, and
#             the time per op family of 2 more steps against the GEMM and copy ceilings, and the
#             step as systems/h200_1x1.json trains (8 micro-batches of 32 from the length mix,
#             the optimizer once); its measurements fitted into a measured accelerator profile
#             (printed into bench.log); then each step variant of CudaOpsOptions against the
#             default in one process (bf16 padded; CUDA graphs without attention dropout, padded
#             and mix), and the bf16 padded step op by op with every fused cuBLASLt epilogue, with
#             none, and with the attention dropout bits kept by the forward and drawn twice (the
#             default: a kernel of their own)
#   train     scripts/device_train.sh: `mlbert train --backend cuda` on one GPU (MPI singleton,
#             NCCL), systems/h200_1x1_check_{bf16,fp16}.json, 60 steps each, log through mlbert check
#   torch     bench/cuda/torch_bert_step.py: the same step in PyTorch, eager and torch.compile
#   train_large  (optional: runs when time is left) 20 steps of BERT-large itself,
#             systems/h200_1x1_check_large_bf16.json, into train.log
#   loss_curve  (optional) scripts/device_loss_curve.sh: 500 steps of BERT-large in bf16 against
#             PyTorch fp32, within twice the spread of two PyTorch bf16 runs, into train.log
# --stage LIST (comma-separated) reruns some of them; --only passes a case name to the ops stages.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=scripts/device_stages.sh
source "$ROOT/scripts/device_stages.sh"

BUNDLE_DIR=$ROOT/build-device-bundle
BUNDLE=$BUNDLE_DIR/bundle.tar.xz
TARGETS=(mlbert mlbert-core mlbert-shard-reader bert_cuda_unit bert_cuda_check bert_cuda_bench
  cuda_ops_device_test bert_loss_curve)
MULTIARCH=x86_64-linux-gnu
# Libraries the device image provides (the bundle must not shadow them): glibc, the C++ runtime,
# the driver, CUDA 13's cuBLAS(Lt) and the NCCL of the PyTorch wheel.
DEVICE_LIBS='^(libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|ld-linux-x86-64|linux-vdso|libstdc\+\+|libgcc_s|libcuda|libcublasLt|libcublas|libnccl)\.so'
ALL_STAGES=setup,ops_bf16,ops_fp16,model,bench,train,torch,train_large,loss_curve

MODE=run BUILD_DIR="" JOBS=${MLBERT_JOBS:-2} STAGE_LIST=$ALL_STAGES ONLY="" DEADLINE=420
SEED=$(((RANDOM << 15 | RANDOM) % 1000000))
while (($#)); do
  case $1 in
    --prepare) MODE=prepare; shift ;;
    --verify) MODE=verify; shift ;;
    --build-dir) BUILD_DIR=$(realpath -m "$2"); shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --stage) STAGE_LIST=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --deadline) DEADLINE=$2; shift 2 ;;
    --exec) MODE="exec"; shift; break ;;
    *) sed -n '16,22p' "$0" >&2; exit 2 ;;
  esac
done

# ------------------------------------------------------------------------------------------------
# The environment the bundle runs in: its libraries first, Open MPI relocated into it, one-rank
# MPI without shared-memory or network transports, then the device's cuBLASLt and NCCL.

# The library path goes to the bundle's programs only (with_bundle), never to the device's own
# tools or its Python, which must keep their system libraries.
bundle_env() {
  local b=$1
  export BUNDLE_LIBRARY_PATH=$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export OPAL_PREFIX=$b/sysroot/usr
  export OPAL_SYSCONFDIR=$b/sysroot/etc/openmpi
  export PMIX_INSTALL_PREFIX=$b/sysroot/usr/lib/$MULTIARCH/pmix2
  export PMIX_MCA_mca_base_component_path=$PMIX_INSTALL_PREFIX/lib/pmix
  # The H200 image has a PMIx of its own: the bundled one also tried the image's zlib compression
  # plugin (undefined symbol) and then warned that it has no compression; one rank needs none.
  export PMIX_MCA_mca_base_component_show_load_errors=0 PMIX_MCA_pcompress_base_silence_warning=1
  # One rank: no shared-memory or network transport; the singleton's orted starts locally (the
  # default launcher wants ssh or rsh, which a bare image lacks).
  export OMPI_MCA_btl=self OMPI_MCA_pml=ob1 OMPI_MCA_plm=isolated
  export OMPI_MCA_btl_base_warn_component_unused=0
  export MLBERT_PTXAS_REPORT_DIR=$b/ptxas
}

# cuBLASLt (CUDA 13) and NCCL on the device: the linker's cache, the toolkit, PyTorch's wheels, else
# anywhere under /usr/local or /opt.
device_libs_env() {
  local py=$1 lib dir
  for lib in libcublasLt.so.13 libnccl.so.2; do
    ldconfig -p 2>/dev/null | grep -q "$lib" && continue
    dir=""
    for candidate in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib; do
      [[ -e $candidate/$lib ]] && dir=$candidate && break
    done
    if [[ -z $dir && -x $py ]]; then
      dir=$("$py" - "$lib" 2>/dev/null <<'EOF'
import glob, os, site, sys
for base in site.getsitepackages():
    hits = sorted(glob.glob(os.path.join(base, "nvidia", "**", sys.argv[1]), recursive=True))
    if hits:
        print(os.path.dirname(hits[0]))
        break
EOF
)
    fi
    [[ -z $dir ]] && dir=$(find /usr/local /opt -name "$lib" -printf '%h\n' -quit 2>/dev/null)
    [[ -n $dir ]] && BUNDLE_LIBRARY_PATH=$BUNDLE_LIBRARY_PATH:$dir
  done
  export BUNDLE_LIBRARY_PATH
}
with_bundle() { LD_LIBRARY_PATH=$BUNDLE_LIBRARY_PATH "$@"; }

# ------------------------------------------------------------------------------------------------
# --prepare (here): build, stage, pack, verify, and say how much must be carried.

elf_files() { find "$@" -type f \( -name '*.so*' -o -perm -u+x \) -exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print; }

prepare() {
  set -e
  if [[ -z $BUILD_DIR ]]; then
    # The developer's build when it is a CUDA build for sm_90, else one of its own.
    # (the project sets CMAKE_CUDA_ARCHITECTURES as a plain variable: it is not in the cache)
    if grep -q 'arch=compute_90,code=' "$ROOT/build/build.ninja" 2>/dev/null; then
      BUILD_DIR=$ROOT/build
    else
      BUILD_DIR=$ROOT/build-device
    fi
  fi
  if [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then
    local launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache
      -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMLBERT_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 "${launcher[@]}" >/dev/null
  fi
  grep -q '^MLBERT_PTXAS_REPORT_DIR:' "$BUILD_DIR/CMakeCache.txt" ||
    { echo "prepare: $BUILD_DIR is not a CUDA build" >&2; exit 1; }
  echo "prepare: building ${TARGETS[*]} in $BUILD_DIR (-j $JOBS)"
  cmake --build "$BUILD_DIR" --target "${TARGETS[@]}" -j "$JOBS" | tail -1

  local stage=$BUNDLE_DIR/stage
  rm -rf "$stage" && mkdir -p "$stage"/{bin,lib,ptxas,sysroot}
  for t in "${TARGETS[@]}"; do cp "$BUILD_DIR/bin/$t" "$stage/bin/"; done
  strip --strip-unneeded "$stage"/bin/*
  cp "$BUILD_DIR"/bert/cuda/ptxas/*.txt "$stage/ptxas/"
  # Open MPI's and PMIx's runtime files at their Debian paths (relative to OPAL_PREFIX and
  # PMIX_INSTALL_PREFIX there): plugins, orted, help texts, default parameters.
  local pkg path
  for pkg in libopenmpi3 openmpi-common openmpi-bin libpmix2; do
    dpkg -L "$pkg" | while read -r path; do
      [[ -f $path && ! -L $path ]] || continue
      case $path in
        /usr/lib/$MULTIARCH/openmpi/lib/openmpi3/*.so | /usr/share/openmpi/* | /etc/openmpi/* | \
          /usr/bin/orted | /usr/lib/$MULTIARCH/pmix2/lib/pmix/*.so | /usr/lib/$MULTIARCH/pmix2/share/*)
          mkdir -p "$stage/sysroot$(dirname "$path")" && cp "$path" "$stage/sysroot$path" ;;
      esac
    done
  done
  # Every shared library those ELF files load, except the device's own (DEVICE_LIBS).
  # A static executable (mlbert) loads none: ldd refuses it.
  elf_files "$stage/bin" "$stage/sysroot" | while read -r path; do ldd "$path" || true; done |
    awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u | while read -r name path; do
      [[ $name =~ $DEVICE_LIBS ]] || cp -L "$path" "$stage/lib/$name"
    done
  {
    echo "commit $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "built in $BUILD_DIR: $(grep -E '^CMAKE_BUILD_TYPE:|^CMAKE_CUDA_ARCHITECTURES:' "$BUILD_DIR/CMakeCache.txt" | tr '\n' ' ')"
    echo "on $(grep -m1 '^PRETTY_NAME=' /etc/os-release | cut -d= -f2 | tr -d '"'), $(ldd --version | head -1)"
    echo "device libraries expected: $DEVICE_LIBS"
  } >"$stage/MANIFEST"
  local t0
  t0=$(date +%s)
  tar -C "$stage" -cf - . | xz -T"$JOBS" -6 >"$BUNDLE.tmp" && mv "$BUNDLE.tmp" "$BUNDLE"
  echo "prepare: staged and packed in $(($(date +%s) - t0)) s"
  rm -rf "$stage"
  set +e
  t0=$(date +%s)
  verify || exit 1
  echo "prepare: verified in $(($(date +%s) - t0)) s"
  local bundle_bytes tree_bytes
  bundle_bytes=$(stat -c %s "$BUNDLE")
  tree_bytes=$(git -C "$ROOT" ls-files -co --exclude-standard -z | xargs -0 stat -c %s 2>/dev/null |
    awk '{s += $1} END {print s + 0}')
  awk -v b="$bundle_bytes" -v t="$tree_bytes" 'BEGIN {
    mib = 1048576; total = (b + t) / mib
    printf "prepare: the GPU machine needs the working tree and build-device-bundle/: %.1f MiB bundle + %.1f MiB tree = %.1f MiB (budget 64 MiB, %.1f MiB to spare)\n", b / mib, t / mib, total, 64 - total
    if (total > 56) { print "prepare: too close to the 64 MiB budget"; exit 1 } }' || exit 1
}

# --verify (here, after --prepare; CI runs both): unpacks the bundle and checks that every ELF in
# it finds each library in the bundle or among the device's own, then runs what needs no GPU
# from the bundle alone: the host unit tests, the no-device paths, and an MPI singleton of the
# bundled Open MPI (OPAL_PREFIX into the bundle) that fails its preflight with a clear message.
verify() {
  [[ -f $BUNDLE ]] || { echo "verify: $BUNDLE is missing (run --prepare)" >&2; return 1; }
  local b status
  b=$(mktemp -d)
  verify_in "$b"
  status=$?
  rm -rf "$b"
  return $status
}

verify_in() {
  local b=$1
  tar -C "$b" -xJf "$BUNDLE"
  local bad=0 path name resolved
  while read -r path; do
    while read -r name resolved; do
      if [[ $resolved == "not" ]]; then
        [[ $name =~ $DEVICE_LIBS ]] || { echo "verify: ${path#"$b"/} needs $name: not in the bundle"; bad=1; }
      elif [[ $resolved != "$b"/lib/* && ! $name =~ $DEVICE_LIBS ]]; then
        echo "verify: ${path#"$b"/} loads $name from $resolved, not from the bundle"
        bad=1
      fi
    done < <(LD_LIBRARY_PATH=$b/lib ldd "$path" 2>/dev/null | awk '$2 == "=>" {print $1, $3}')
  done < <(elf_files "$b/bin" "$b/sysroot" "$b/lib")
  (
    bundle_env "$b"
    set -e
    with_bundle "$b/bin/bert_cuda_unit" >"$b/unit.log" 2>&1 || { tail -20 "$b/unit.log"; exit 1; }
    with_bundle "$b/bin/cuda_ops_device_test" no-device
    with_bundle "$b/bin/mlbert" --help >/dev/null
    with_bundle "$b/bin/bert_cuda_check" --list >/dev/null
    set +e
    out=$(with_bundle "$b/bin/mlbert-core" train --system "$b/no-such-system.json" --data "$b" --eval-data "$b" 2>&1)
    status=$?
    if ((status != 2)) || [[ $out != *no-such-system.json* ]]; then
      echo "verify: the bundled Open MPI singleton: exit $status, expected 2 naming the system file:"
      echo "$out" | tail -5
      exit 1
    fi
    # A shard written and read back through the bundle's programs alone (HDF5 is read in the
    # mlbert-shard-reader process mlbert starts from its own folder).
    out=$({ with_bundle "$b/bin/mlbert" data demo-corpus --output "$b/corpus" --documents 40 \
      --eval-documents 5 --parts 1 &&
      with_bundle "$b/bin/mlbert" data prep --vocab "$b/corpus/vocab.txt" --input "$b"/corpus/part-* \
        --output "$b/shards" --max-seq-length 128 --max-predictions-per-seq 20 --progress never &&
      with_bundle "$b/bin/mlbert" data inspect "$b"/shards/*.hdf5; } 2>&1)
    status=$?
    if ((status != 0)) || [[ $out == *error* ]]; then
      echo "verify: a shard written and read back by the bundled mlbert: exit $status:"
      echo "$out" | tail -5
      exit 1
    fi
  ) || bad=1
  if ((bad)); then
    echo "verify: FAILED ($BUNDLE)"
    return 1
  fi
  echo "verify: every library of the bundle resolves inside it or is the device's own; unit tests," \
    "no-device paths and the bundled Open MPI singleton run from it alone ($(sed -n 1p "$b/MANIFEST"))"
}

case $MODE in
  prepare) prepare; exit $? ;;
  verify) verify; exit $? ;;
esac

# ------------------------------------------------------------------------------------------------
# The stages (the GPU machine).

LOGS=${OUT:-$ROOT/build-device-logs}
RUNDIR=${MLBERT_DEVICE_RUNDIR:-/tmp/mlbert-device}
mkdir -p "$LOGS" "$RUNDIR"
PY=python3
[[ -x /opt/torch/.venv/bin/python3 ]] && PY=/opt/torch/.venv/bin/python3
if [[ -n $BUILD_DIR ]]; then
  BIN=$BUILD_DIR/bin
  export MLBERT_PTXAS_REPORT_DIR=$BUILD_DIR/bert/cuda/ptxas
  export BUNDLE_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
  SOURCE="the build in $BUILD_DIR"
else
  B=$RUNDIR/bundle
  if [[ ! -f $B/MANIFEST || $BUNDLE -nt $B/MANIFEST ]]; then
    rm -rf "$B" && mkdir -p "$B"
    # tar's xz, else Python's lzma (an image may lack xz-utils; its PyTorch venv has Python).
    if command -v xz >/dev/null; then
      tar -C "$B" -xJf "$BUNDLE" 2>>"$LOGS/setup.log"
    else
      "$PY" -c 'import sys, tarfile
kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
tarfile.open(sys.argv[1]).extractall(sys.argv[2], **kw)' \
        "$BUNDLE" "$B" 2>>"$LOGS/setup.log"
    fi || echo "unpacking $BUNDLE failed" >>"$LOGS/setup.log"
    touch "$B/MANIFEST" 2>/dev/null
  fi
  BIN=$B/bin
  bundle_env "$B"
  SOURCE="the bundle ($(sed -n 1p "$B/MANIFEST" 2>/dev/null || echo "missing: run --prepare on the build machine and copy build-device-bundle/ with the tree"))"
fi
device_libs_env "$PY"
# One GPU: NCCL's bootstrap on the loopback interface (a VM may have no other), no InfiniBand.
export NCCL_DEBUG=${NCCL_DEBUG:-WARN} NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
export NCCL_IB_DISABLE=${NCCL_IB_DISABLE:-1}
if [[ $MODE == exec ]]; then
  program=$1
  shift
  [[ $program == */* ]] || program=$BIN/$program
  with_bundle "$program" "$@"
  exit $?
fi
export BIN ROOT RUNDIR SEED ONLY PY
export -f with_bundle

stages_init "$DEADLINE" "$LOGS/summary.txt" \
  "checkout $(git rev-parse --short HEAD 2>/dev/null || echo 'without .git'), seed $SEED, binaries from $SOURCE"
trap 'stages_interrupt TERM' TERM
trap 'stages_interrupt INT' INT
trap 'stages_finish; exit $?' EXIT

setup_stage() {
  set -o pipefail
  echo "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1)"
  echo "nvcc: $(nvcc --version 2>/dev/null | tail -1); nproc $(nproc); $(grep -m1 '^PRETTY_NAME=' /etc/os-release 2>/dev/null | cut -d= -f2 | tr -d '"')"
  local missing
  missing=$(for f in "$BIN"/*; do with_bundle ldd "$f" | grep 'not found' | sed "s|^|$(basename "$f"): |"; done | sort -u)
  if [[ -n $missing ]]; then
    echo "$missing"
    echo "setup: FAILED: libraries not found (library path $BUNDLE_LIBRARY_PATH)"
    return 1
  fi
  with_bundle ldd "$BIN/mlbert-core" | grep -E 'cublasLt|nccl|cudart|libcuda|libmpi\.' | sed 's/^[[:space:]]*/  loads /'
  with_bundle "$BIN/bert_cuda_unit" 2>&1 | tail -3 || { echo "setup: FAILED: bert_cuda_unit"; return 1; }
  with_bundle "$BIN/cuda_ops_device_test" device
  case $? in
    0) ;;
    77) echo "setup: FAILED: no CUDA device is visible (nvidia-smi: $(nvidia-smi -L 2>&1 | head -1))"; return 1 ;;
    *) echo "setup: FAILED: the pooler layer on the device (cuda_ops_device_test device)"; return 1 ;;
  esac
  if command -v cuobjdump >/dev/null; then
    cuobjdump -sass "$BIN/bert_cuda_check" 2>/dev/null | awk '
      /Function : / { kernel = ($0 ~ /attention_(fa2_)?(fwd|bwd)_kernel/) ? $NF : "" }
      kernel != "" && /HMMA/ { count[kernel]++ }
      END { for (k in count) printf "sass: %d HMMA in %s\n", count[k], substr(k, 1, 60) }'
  fi
  echo "setup: libraries resolve, bert_cuda_unit passes, one op runs on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
}

ops_stage() { with_bundle "$BIN/bert_cuda_check" --ops-only --dtype "$1" --seed "$SEED" ${ONLY:+--only "$ONLY"}; }
model_stage() { with_bundle "$BIN/bert_cuda_check" --model-only --dtype both --seed "$SEED"; }
# The bench's verdict is the stage's; its measurements then become a measured accelerator profile
# (`mlbert simulate calibrate --bench`), printed into the log (the logs are what a run leaves):
# the fitted rate, the prediction of each other configuration, and both JSON files.
bench_stage() {
  local status=0 accelerator
  rm -f "$RUNDIR/bench.json" "$RUNDIR/profile_measured.json"
  with_bundle "$BIN/bert_cuda_bench" --steps 10 --warmup 3 --breakdown 2 --check \
    --system "$ROOT/systems/h200_1x1.json" --json "$RUNDIR/bench.json" || status=$?
  [[ -s $RUNDIR/bench.json ]] || return $status
  accelerator=$(sed -n 's/.*"accelerator_model_name": *"\([^"]*\)".*/\1/p' "$ROOT/systems/h200_1x1.json" | head -1)
  case $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) in
    *H200*) ;;
    *) accelerator= ;;  # another GPU: the profile takes the device's own name
  esac
  if with_bundle "$BIN/mlbert" simulate calibrate --bench "$RUNDIR/bench.json" \
      ${accelerator:+--accelerator "$accelerator"} --output "$RUNDIR/profile_measured.json"; then
    echo "=== bench.json"; cat "$RUNDIR/bench.json"
    echo "=== profile_measured.json"; cat "$RUNDIR/profile_measured.json"
  else
    echo "bench: the measured profile could not be fitted (the bench's verdict stands)"
  fi
  # Each step variant against the default in one process (ratios in the VARIANT lines; not part
  # of the verdict): bf16 padded, then CUDA graphs, which need the attention dropout off until
  # the attention kernels read the dropout key from device memory, against the default without
  # it (which is also what the attention's Philox draws cost), padded and on the mix.
  with_bundle "$BIN/bert_cuda_bench" --dtype bf16 --mix padded --steps 5 --warmup 3 \
    --variants default,attn-fa2,fused-qkv,dgelu,gemm-tuned,ln-keep-bits,ln-streaming,all |
    grep -vE '^(device|baseline|peak used|dtype|attention dropout bits):'
  local mix
  for mix in padded mix; do
    with_bundle "$BIN/bert_cuda_bench" --dtype bf16 --mix $mix --steps 5 --warmup 3 \
      --dropout no-attention --variants default,cuda-graphs |
      grep -vE '^(device|baseline|peak used|dtype|attention dropout bits):'
  done
  # The same bf16 step op by op with every cuBLASLt epilogue allowed (DGELU_BGRAD too) and with
  # none: which products the fused GELU and bias-gradient epilogues speed up or slow down; then
  # the attention's dropout bits from the other two sources (the forward keeping what it draws,
  # the forward and the backward each drawing them): what the Philox draws cost where.
  local variant
  for variant in "--epilogues all" "--epilogues none" "--attention-dropout-bits forward-keeps" \
      "--attention-dropout-bits drawn-twice"; do
    echo "=== bf16 padded with $variant"
    # shellcheck disable=SC2086 # the variant is an option and its value
    with_bundle "$BIN/bert_cuda_bench" --dtype bf16 --mix padded --steps 5 --warmup 2 --breakdown 1 \
      $variant | grep -vE '^(device|baseline|peak used):'
  done
  return $status
}
train_stage() {  # systems...
  local status=0 system
  for system in "$@"; do
    with_bundle bash "$ROOT/scripts/device_train.sh" --mlbert "$BIN/mlbert" \
      --system "$ROOT/systems/$system.json" --work "$RUNDIR/train" || status=1
  done
  return $status
}
torch_stage() {
  local compile=both
  (($1 < 120)) && compile=no && echo "torch: only $1 s: eager only"
  PYTHONUNBUFFERED=1 "$PY" "$ROOT/bench/cuda/torch_bert_step.py" --steps 10 --warmup 3 --compile "$compile"
}
export -f setup_stage ops_stage model_stage bench_stage train_stage torch_stage

# Minimum seconds per stage; a stage keeps the minimums of the selected stages after it.
declare -A MIN=([setup]=10 [ops_bf16]=30 [ops_fp16]=30 [model]=30 [bench]=30 [train]=40 [torch]=60
  [train_large]=45 [loss_curve]=90)
declare -A CAP=([setup]=45 [ops_bf16]=80 [ops_fp16]=80 [model]=100 [bench]=130 [train]=110
  [torch]=170 [train_large]=75 [loss_curve]=200)
STAGES_OPTIONAL=" train_large loss_curve "
IFS=, read -r -a SELECTED <<<"$STAGE_LIST"
for s in "${SELECTED[@]}"; do
  [[ -n ${MIN[$s]:-} ]] || { echo "--stage: unknown stage '$s' (stages: $ALL_STAGES)" >&2; exit 2; }
done
reserve_after() {  # the minimums of the selected, not optional stages after $1
  local s total=0 after=0
  for s in "${SELECTED[@]}"; do
    ((after)) && [[ $STAGES_OPTIONAL != *" $s "* ]] && total=$((total + MIN[$s]))
    [[ $s == "$1" ]] && after=1
  done
  echo $total
}
rerun_of() {
  local only=""
  [[ -n ${2:-} ]] && printf -v only ' --only %q' "$2"  # case names may hold a quote
  echo "scripts/device_check.sh --stage $1 --seed $SEED$only"
}
# A failing check stage: one rerun line per failing case, from bert_cuda_check's own.
case_reruns() {
  grep -E "^rerun: .*--only '" "$2" | sed -E "s/.*--only '(.*)'$/\1/" | sort -u | head -4 |
    while read -r one; do rerun_of "$1" "$one"; done
}
# A check stage's verdict line and which GEMMs ran with fused cuBLASLt epilogues.
fused_summary() {
  local verdict fused
  verdict=$(grep -E '^bert_cuda_check: [0-9]+ of' "$1" 2>/dev/null | tail -1)
  fused=$(grep -E '^(ops|model check) \(.*cuBLASLt epilogues:' "$1" 2>/dev/null |
    sed -E 's/^(ops|model check) \(([a-z0-9]+)\): cuBLASLt epilogues:/\2:/' | paste -sd ';')
  [[ -n $verdict ]] && echo "${verdict#bert_cuda_check: }${fused:+; fused: $fused}"
}
setup_ok=1
for s in "${SELECTED[@]}"; do
  log=$LOGS/$s.log
  if ((!setup_ok)) && [[ $s != torch ]]; then
    stage_record "$s" "NOT RUN" 0 0 "setup failed (see setup.log)" "$(rerun_of "$s")"
    continue
  fi
  case $s in
    setup)
      # Only missing libraries or no visible GPU stop the GPU stages; a failing unit test or op
      # is reported and the other stages still run (they say more).
      if ! stage setup "${CAP[$s]}" "${MIN[$s]}" "$(reserve_after "$s")" "$log" '^setup:' \
        "$(rerun_of setup)" -- bash -c setup_stage; then
        grep -qE '^setup: FAILED: (libraries|no CUDA device)' "$log" && setup_ok=0
      fi ;;
    ops_bf16 | ops_fp16)
      dtype=${s#ops_}
      stage "$s" "${CAP[$s]}" "${MIN[$s]}" "$(reserve_after "$s")" "$log" '^bert_cuda_check:' \
        "$(rerun_of "$s" "$ONLY")" -- bash -c "ops_stage $dtype" ||
        stage_amend_rerun "$(case_reruns "$s" "$log")"
      stage_amend_detail "$(fused_summary "$log")" ;;
    model)
      stage model "${CAP[$s]}" "${MIN[$s]}" "$(reserve_after "$s")" "$log" '^bert_cuda_check:' \
        "$(rerun_of model)" -- bash -c model_stage
      stage_amend_detail "$(fused_summary "$log")" ;;
    bench)
      stage bench "${CAP[$s]}" "${MIN[$s]}" "$(reserve_after "$s")" "$log" '^bert_cuda_bench: check' \
        "$(rerun_of bench)" -- bash -c bench_stage
      # The verdict's configurations (the variants after it are in bench.log's VARIANT lines).
      stage_amend_detail "$(awk '/^bert_cuda_bench: check/ {exit}
        /^RESULT/ {for (i = 5; i <= NF; ++i) {split($i, kv, "="); v[kv[1]] = kv[2]}
        printf "%s%s/%s %.0f seq/s %.1f%% MFU", (n++ ? "; " : ""), $3, $4, v["seq_per_s"], 100 * v["mfu"]}' "$log" 2>/dev/null)" ;;
    train | train_large)
      systems="h200_1x1_check_bf16 h200_1x1_check_fp16"
      [[ $s == train_large ]] && systems=h200_1x1_check_large_bf16 log=$LOGS/train.log
      lines_before=0
      [[ -f $log ]] && lines_before=$(wc -l <"$log")
      stage "$s" "${CAP[$s]}" "${MIN[$s]}" "$(reserve_after "$s")" "$log" '' \
        "$(rerun_of "$s")" -- bash -c "train_stage $systems"
      stage_amend_detail "$(tail -n +$((lines_before + 1)) "$log" 2>/dev/null | grep -E '^train: (PASS|FAIL) ' |
        sed -E 's/^train: //; s/ \(whole run\).*//' | paste -sd ';')" ;;
    torch)
      left=$(($(stages_left) - $(reserve_after torch)))
      stage torch "${CAP[$s]}" "${MIN[$s]}" "$(reserve_after "$s")" "$log" '' "$(rerun_of torch)" \
        -- bash -c "torch_stage $left"
      stage_amend_detail "$(awk '/^RESULT/ {for (i = 5; i <= NF; ++i) {split($i, kv, "="); v[kv[1]] = kv[2]}
        printf "%s%s/%s %.0f seq/s", (n++ ? "; " : ""), $2, $4, v["seq_per_s"]}' "$log" 2>/dev/null)" ;;
    loss_curve)
      stage loss_curve "${CAP[$s]}" "${MIN[$s]}" "$(reserve_after "$s")" "$LOGS/train.log" '^loss_curve:' \
        "$(rerun_of loss_curve)" -- bash "$ROOT/scripts/device_loss_curve.sh" --python "$PY" \
        --work "$RUNDIR/loss_curve" -- with_bundle "$BIN/bert_loss_curve" ;;
  esac
done
