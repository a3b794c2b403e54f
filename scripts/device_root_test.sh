#!/usr/bin/env bash
# Runs the prepared device bundle in a minimal Debian root without any of the project's libraries
# (no HDF5, Open MPI, OpenBLAS, ...), the nearest this machine gets to the bare GPU image: the
# checkout and the bundle are copied in, the CUDA toolkit is bind-mounted read-only (the device
# image has CUDA 13's cuBLASLt and an NCCL), and everything that needs no GPU must work from the
# bundle alone: the host unit tests, the no-device paths of every CUDA program, `mlbert train
# --backend cuda` refusing clearly, a CPU training run of the one-GPU system through the bundled
# Open MPI (MPI singleton, relocated with OPAL_PREFIX) whose log passes mlbert check, and the
# device check itself printing its summary and failing at setup for want of a GPU.
#
#   debootstrap --variant=minbase trixie /tmp/roots/trixie http://deb.debian.org/debian   (once)
#   scripts/device_root_test.sh /tmp/roots/trixie
# Needs root (chroot, mounts). Not part of CI: making the root downloads ~50 MB and takes minutes.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
TARGET=$(realpath "${1:?usage: scripts/device_root_test.sh <debootstrap root>}")
[[ -x $TARGET/bin/bash ]] || { echo "$TARGET is not a Debian root" >&2; exit 2; }
[[ -f build-device-bundle/bundle.tar.xz ]] || { echo "run scripts/device_check.sh --prepare first" >&2; exit 2; }
CUDA=$(realpath /usr/local/cuda)

work=$TARGET/work/mlbert
rm -rf "$TARGET/work" "$TARGET/tmp/mlbert-device" && mkdir -p "$work" "$TARGET/tmp/mlbert-device/bundle"
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -C "$work" -xf -
mkdir -p "$work/build-device-bundle" && cp build-device-bundle/bundle.tar.xz "$work/build-device-bundle/"
# The root may lack xz (an image may too: device_check.sh falls back to Python, which this root
# lacks as well), so the bundle is unpacked from outside, where device_check.sh would put it.
tar -C "$TARGET/tmp/mlbert-device/bundle" -xJf build-device-bundle/bundle.tar.xz
touch "$TARGET/tmp/mlbert-device/bundle/MANIFEST"

mounts=()
mount_in() {  # source target [options]
  mkdir -p "$TARGET$2"
  mount "${@:3}" "$1" "$TARGET$2" && mounts=("$TARGET$2" "${mounts[@]}")
}
cleanup() { for m in "${mounts[@]}"; do umount "$m"; done; }
trap cleanup EXIT
mount_in proc /proc -t proc
mount_in sysfs /sys -t sysfs
mount_in /dev /dev --bind
mount_in /dev/shm /dev/shm --bind
mount_in "$CUDA" "$CUDA" --bind -o ro
ln -sfn "$CUDA" "$TARGET/usr/local/cuda"

failures=0
run() {  # name expected-status expected-regex command...
  local name=$1 want=$2 regex=$3 out status
  shift 3
  out=$(chroot "$TARGET" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root /bin/bash -c "cd /work/mlbert && $*" 2>&1)
  status=$?
  if [[ $status == "$want" ]] && grep -Eq -- "$regex" <<<"$out"; then
    echo "PASS  $name (exit $status): $(grep -E -- "$regex" <<<"$out" | tail -1 | cut -c1-150)"
  else
    echo "FAIL  $name: exit $status (expected $want), output:"
    tail -15 <<<"$out" | sed 's/^/      /'
    failures=$((failures + 1))
  fi
}

echo "root: $(chroot "$TARGET" ldd --version | head -1); no libmpi, libhdf5, libopenblas there: $(
  chroot "$TARGET" sh -c 'ls /usr/lib/x86_64-linux-gnu | grep -cE "libmpi|libhdf5|libopenblas"')"
X=scripts/device_check.sh
run "host unit tests from the bundle" 0 'All tests passed' "$X --exec bert_cuda_unit"
run "CudaOps without a device" 0 'PASS: CudaOps: no CUDA device 0' "$X --exec cuda_ops_device_test no-device"
run "bert_cuda_check without a device" 77 'no CUDA device: bert_cuda_check skipped' "$X --exec bert_cuda_check"
run "bert_cuda_bench without a device" 77 'no CUDA device: bert_cuda_bench skipped' "$X --exec bert_cuda_bench --check"
run "mlbert train --backend cuda without a device" 2 'backend cuda: no CUDA device is visible' \
  "$X --exec mlbert train --system systems/h200_1x1_check_bf16.json --data systems --eval-data systems"
run "one-GPU training run on the CPU through the bundled Open MPI" 0 '^train: PASS h200_1x1_check_fp16' \
  "$X --exec /bin/bash scripts/device_train.sh --mlbert /tmp/mlbert-device/bundle/bin/mlbert" \
  "--system systems/h200_1x1_check_fp16.json --work /tmp/train --backend cpu --max-steps 1"
run "the device check summarizes and fails at setup without a GPU" 1 '^setup +FAIL' \
  "OUT=/tmp/out $X --deadline 200 --stage setup,ops_bf16,train; status=\$?; ls /tmp/out; exit \$status"
if ((failures)); then
  echo "device_root_test: $failures failure(s) in $TARGET"
  exit 1
fi
echo "device_root_test: the bundle ran in $TARGET without the project's libraries"
