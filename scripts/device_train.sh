#!/usr/bin/env bash
# The device check's training run on one rank: `mlbert train` of a system file (the 4-layer BERT of
# BERT-large width in systems/h200_1x1_check_{bf16,fp16}.json) on the generated demo corpus, then
# `mlbert check` of its result log and one summary line (steps, seq/s, eval accuracy, loss, loss
# scale); on the GPU it first runs `mlbert preflight` (the accelerator counted, NCCL's allreduce).
# scripts/device_check.sh runs it on the GPU; ctest runs the same script with `--backend cpu
# --max-steps 1` on every CI machine, so only the CUDA ops and the preflight differ between the two.
#
# Design choice: one rank is an MPI singleton (`mlbert train` started without mpirun): Open MPI
# starts its own helper, so the run needs no launcher, and the NCCL communicator of the CUDA
# backend is built over that one-rank MPI world exactly as on a multi-GPU job.
#
# Usage: scripts/device_train.sh --mlbert BIN --system FILE --work DIR [--backend cpu|cuda]
#                                [--max-steps N] [--seed N] [--run-index N]
# Exit 0 when the run ended normally (target reached, or max steps without it: exit 3), ran the
# expected number of steps, and its log passes `mlbert check`; 1 otherwise.
set -uo pipefail

MLBERT="" SYSTEM="" WORK="" BACKEND="" MAX_STEPS="" SEED=4321 RUN_INDEX=0
while (($#)); do
  case $1 in
    --mlbert) MLBERT=$2; shift 2 ;;
    --system) SYSTEM=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --backend) BACKEND=$2; shift 2 ;;
    --max-steps) MAX_STEPS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --run-index) RUN_INDEX=$2; shift 2 ;;
    *) echo "device_train: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [[ -z $MLBERT || -z $SYSTEM || -z $WORK ]]; then
  echo "usage: scripts/device_train.sh --mlbert BIN --system FILE --work DIR [--backend cpu|cuda]" \
    "[--max-steps N] [--seed N] [--run-index N]" >&2
  exit 2
fi
[[ -f $SYSTEM ]] || { echo "device_train: $SYSTEM: no such system file" >&2; exit 2; }
json_field() {  # the first number or string value of "key" in a JSON file or line
  grep -o "\"$1\": *[^,}]*" | head -1 | sed -e 's/^[^:]*: *//' -e 's/"//g'
}
run_field() { json_field "$1" <"$SYSTEM"; }
name=$(basename "$SYSTEM" .json)
seq_len=$(run_field max_seq_length)
predictions=$(run_field max_predictions_per_seq)
eval_samples=$(run_field eval_samples)
ruleset=$(run_field ruleset)
steps_wanted=${MAX_STEPS:-$(run_field max_steps)}
mkdir -p "$WORK"

# ---- data: the demo corpus, prepped for the system's shapes (reused when the stamp matches)
data=$WORK/data-$seq_len-$predictions-$eval_samples
if [[ ! -f $data/READY ]]; then
  rm -rf "$data" && mkdir -p "$data"
  t0=$(date +%s)
  if ! {
    "$MLBERT" data demo-corpus --output "$data/corpus" --documents 2000 --eval-documents 400 \
      --parts 2 &&
      "$MLBERT" data prep --vocab "$data/corpus/vocab.txt" --input "$data"/corpus/part-* \
        --output "$data/train" --max-seq-length "$seq_len" --max-predictions-per-seq "$predictions" \
        --dupe-factor 2 --progress never &&
      "$MLBERT" data prep --vocab "$data/corpus/vocab.txt" --input "$data/corpus/eval.txt" \
        --output "$data/eval_source" --max-seq-length "$seq_len" \
        --max-predictions-per-seq "$predictions" --dupe-factor 2 --progress never &&
      "$MLBERT" data eval-set --input "$data"/eval_source/*.hdf5 --output "$data/eval.hdf5" \
        --count "$eval_samples" --max-seq-length "$seq_len" \
        --max-predictions-per-seq "$predictions"
  } >"$WORK/data.log" 2>&1; then
    echo "train: $name: FAILED preparing the data (last lines of $WORK/data.log):"
    tail -5 "$WORK/data.log"
    exit 1
  fi
  touch "$data/READY"
  echo "train: data: demo corpus prepped for seq $seq_len, $predictions predictions, $eval_samples eval samples in $(($(date +%s) - t0)) s"
fi

# ---- on the GPU, the preflight a job runs first: NCCL's allreduce timed on this GPU's memory
if [[ $BACKEND != cpu ]]; then
  if ! "$MLBERT" preflight --system "$SYSTEM" --data "$data/train" --eval-data "$data/eval.hdf5" \
    >"$WORK/preflight.log" 2>&1; then
    echo "train: $name: FAILED: mlbert preflight (last lines of $WORK/preflight.log):"
    tail -8 "$WORK/preflight.log"
    exit 1
  fi
  grep -E 'allreduce|accelerators' "$WORK/preflight.log" | sed 's/^/train: /'
fi

# ---- the run (an MPI singleton)
results=$WORK/results
log=$results/$name/bert/result_$RUN_INDEX.txt
rm -f "$log"
args=(train --system "$SYSTEM" --data "$data/train" --eval-data "$data/eval.hdf5"
  --results "$results" --run-index "$RUN_INDEX" --seed "$SEED" --quiet)
[[ -n $BACKEND ]] && args+=(--backend "$BACKEND")
[[ -n $MAX_STEPS ]] && args+=(--max-steps "$MAX_STEPS")
echo "train: $MLBERT ${args[*]}"
t0=$(date +%s)
"$MLBERT" "${args[@]}"
status=$?
seconds=$(($(date +%s) - t0))
if [[ ! -f $log ]]; then
  echo "train: $name: FAILED: exit $status after $seconds s and no result log"
  exit 1
fi

# ---- the log: mlbert check, then the figures
"$MLBERT" check --ruleset "$ruleset" --quiet "$log" >"$WORK/check.log" 2>&1
check_status=$?
summary=$(grep '"summary": "whole run"' "$log" | tail -1)
steps=$(json_field step <<<"$summary")
throughput=$(json_field throughput <<<"$summary")
final_scale=$(json_field loss_scale <<<"$summary")
accuracies=$(grep '"key": "eval_accuracy"' "$log" | sed 's/.*"value": *\([^,]*\),.*/\1/' |
  awk '{printf "%s%.4f", (NR > 1 ? " " : ""), $1}')
losses=$(grep '"key": "tracked_stats"' "$log" | grep -v '"summary"' |
  sed 's/.*"train_loss": *\([^,}]*\).*/\1/' | awk '{printf "%s%.3f", (NR > 1 ? " " : ""), $1}')
stop=$(grep '"key": "run_stop"' "$log" | json_field status)
verdict=PASS
reasons=()
if ((status != 0 && status != 3)); then verdict=FAIL; reasons+=("exit $status"); fi
if ((check_status != 0)); then verdict=FAIL; reasons+=("mlbert check failed: $(head -3 "$WORK/check.log" | tr '\n' ' ')"); fi
if [[ ${steps:-0} != "$steps_wanted" ]]; then verdict=FAIL; reasons+=("${steps:-no} steps, expected $steps_wanted"); fi
printf 'train: %s %s: %s steps in %s s, %s seq/s (whole run), eval accuracy [%s], train loss per eval [%s], final loss scale %s, run_stop %s, exit %s, mlbert check %s\n' \
  "$verdict" "$name" "${steps:-?}" "$seconds" "${throughput:-?}" "$accuracies" "$losses" \
  "${final_scale:-?}" "${stop:-missing}" "$status" "$([[ $check_status == 0 ]] && echo PASS || echo FAIL)"
if [[ $verdict == FAIL ]]; then
  printf 'train: %s\n' "${reasons[@]}"
  exit 1
fi
exit 0
