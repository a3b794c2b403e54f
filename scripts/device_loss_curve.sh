#!/usr/bin/env bash
# The loss-curve stage of the device check: BERT-large (24 x 1024) trained 500 steps in bf16 on
# the CUDA backend, against the same steps in PyTorch fp32, from the same weights and batches
# (tests/parity/bert_loss_curve.py writes them; tests/numerics/bert_loss_curve trains as mlbert
# does).
#
# Design choice: the tolerance is measured in the same run. Two PyTorch bf16 runs that are equally
# right (autocast with fp32 weights in the batch's order; bf16 weights with fp32 master weights on
# the batch reversed, so every reduction adds in another order) give, per window of steps, how far
# a correct bf16 training drifts from fp32; mlbert's bf16 run may drift at most twice as far.
#
#   scripts/device_loss_curve.sh [--steps N] [--layers N] [--work DIR] [--python PY] -- DRIVER...
#   scripts/device_loss_curve.sh --cpu-smoke [--work DIR] [--python PY] -- DRIVER...
# DRIVER... runs bert_loss_curve (the device check passes `with_bundle $BIN/bert_loss_curve`).
# --cpu-smoke: a 1-layer model for 20 steps, PyTorch and mlbert on the CPU (mlbert in fp32), so CI
# shows every step of the stage works end to end without a GPU.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SCRIPT=$ROOT/tests/parity/bert_loss_curve.py
PY=${PY:-python3} WORK=${TMPDIR:-/tmp}/mlbert-loss-curve STEPS=500 LAYERS=0 SMOKE=0
while (($#)); do
  case $1 in
    --cpu-smoke) SMOKE=1; shift ;;
    --steps) STEPS=$2; shift 2 ;;
    --layers) LAYERS=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --python) PY=$2; shift 2 ;;
    --) shift; break ;;
    *) sed -n '12,16p' "$0" >&2; exit 2 ;;
  esac
done
(($#)) || { echo "device_loss_curve: no driver command after --" >&2; exit 2; }
DRIVER=("$@")

device=cuda backend=(--backend cuda --precision bf16) shape=(--shape large --recipe lamb_large)
if ((SMOKE)); then
  device=cpu backend=(--backend cpu) shape=(--shape smoke --recipe adamw) STEPS=20
fi
rm -rf "$WORK" && mkdir -p "$WORK"
export PYTHONUNBUFFERED=1
running() { echo "running: $*"; }

running prepare
"$PY" "$SCRIPT" prepare "$WORK" "${shape[@]}" --steps "$STEPS" --layers "$LAYERS" --device "$device"
running "mlbert ${backend[*]}"
mapfile -t options <"$WORK/driver_options.txt"
"${DRIVER[@]}" --config "$WORK/config.json" --weights "$WORK/model.safetensors" \
  --batches "$WORK/batches.json" --out "$WORK/mlbert.json" "${options[@]}" "${backend[@]}"
running "torch: fp32 reference, autocast-bf16, bf16 on reversed batches"
"$PY" "$SCRIPT" torch "$WORK" --device "$device" reference:fp32 torch_autocast:autocast-bf16 \
  torch_bf16_reversed:bf16:reversed
"$PY" "$SCRIPT" compare "$WORK" --spread torch_autocast torch_bf16_reversed
if ((SMOKE)); then
  # The verdict can fail: an fp32 run without Adam's bias correction must land outside it.
  running "torch fp32 without bias correction (must fail the comparison)"
  "$PY" "$SCRIPT" torch "$WORK" --device "$device" --broken "no bias correction" broken:fp32
  if "$PY" "$SCRIPT" compare "$WORK" --candidate broken --spread torch_autocast torch_bf16_reversed; then
    echo "loss_curve: FAIL: an update without bias correction passed the comparison"
    exit 1
  fi
  echo "loss_curve: PASS: mlbert within the bf16 spread, a broken update outside it"
fi
