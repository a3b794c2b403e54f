#!/usr/bin/env bash
# CI's part of the device check, without a GPU: packs the device bundle from the CI build (the
# same executables `make test` built and tested) and verifies it (scripts/device_check.sh
# --prepare: every library resolves inside the bundle or is one the device image provides; the
# host unit tests, the no-device paths and an MPI singleton of the bundled, relocated Open MPI run
# from it alone). The stage logic and the one-GPU training run on the CPU backend are ctest
# entries of `make test` (tests/bert_cuda). About a minute of CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
if ! grep -q '^MLBERT_PTXAS_REPORT_DIR:' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  echo "ci_device_check: $BUILD is not a CUDA build (no nvcc at configure time): nothing to pack"
  exit 0
fi
start=$(date +%s)
scripts/device_check.sh --prepare --build-dir "$BUILD" --jobs "$(nproc)"
echo "ci_device_check: bundle packed and verified in $(($(date +%s) - start)) s"
