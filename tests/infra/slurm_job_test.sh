#!/usr/bin/env bash
# A one-node Slurm cluster (scripts/slurm/cluster_up.sh) runs a batch job whose `srun --mpi=pmix`
# starts 2 ranks of `mlbert bind -- mlbert train` on the demo system: PMIx wires the ranks into
# one MPI job (the trainer refuses a world size other than the system's 2), 30 steps of global
# batch 16 run, rank 0's log passes `mlbert check`. Then the cluster is stopped and its folder
# removed; a trap does the same when anything fails.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_tools slurmctld slurmd munged mungekey sbatch srun sinfo runuser
require_root
require_mlbert

work=$(mktemp -d /tmp/mlbert-infra-slurm.XXXXXX)
chmod 755 "$work"  # munged runs as the munge user, inside it
cluster=$work/cluster
cleanup() {
  local status=$?
  if ((status != 0)); then
    for f in "$work"/job.out "$cluster"/log/slurmctld.log "$cluster"/log/slurmd.log; do
      [[ -f $f ]] && { echo "---- $f (last 30 lines)"; tail -n 30 "$f"; }
    done
  fi
  "$repo/scripts/slurm/cluster_down.sh" "$cluster" || true
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

step "cluster up in $cluster"
"$repo/scripts/slurm/cluster_up.sh" "$cluster" --timeout 60
# shellcheck source=/dev/null
. "$cluster/slurm.env"
step "node $MLBERT_SLURM_NODE idle, partition $MLBERT_SLURM_PARTITION"

# The demo's data (its generated corpus with the demo system's sequence length); what `mlbert
# demo` prepares itself.
data=$work/data
seq_args=(--max-seq-length 64 --max-predictions-per-seq 10)
"$mlbert" data demo-corpus --output "$data/corpus" > /dev/null
"$mlbert" data prep --vocab "$data/corpus/vocab.txt" --input "$data"/corpus/part-*.txt \
  --output "$data/train" "${seq_args[@]}" --progress never > /dev/null
"$mlbert" data prep --vocab "$data/corpus/vocab.txt" --input "$data/corpus/eval.txt" \
  --output "$data/eval_source" "${seq_args[@]}" --progress never > /dev/null
"$mlbert" data eval-set --input "$data/eval_source/eval.txt.hdf5" --output "$data/eval.hdf5" \
  --count 1000 "${seq_args[@]}" > /dev/null
cp "$data/corpus/vocab.txt" "$data/train/"
step "demo data prepared"

results=$work/results
cat > "$work/job.sh" <<JOB
#!/bin/bash
#SBATCH --job-name=mlbert-infra
#SBATCH --partition=$MLBERT_SLURM_PARTITION
#SBATCH --ntasks=2
#SBATCH --output=$work/job.out
set -uo pipefail
srun --mpi=pmix --ntasks=2 '$mlbert' --version
# --max-steps 30 ends the run before the target: mlbert train's exit status 3 says so.
srun --mpi=pmix --ntasks=2 '$mlbert' bind --system cpu_demo --systems-dir '$repo/systems' --best-effort -- \\
  '$mlbert' train --system cpu_demo --systems-dir '$repo/systems' --data '$data/train' \\
  --eval-data '$data/eval.hdf5' --results '$results' --run-index 0 --seed 7 --max-steps 30 \\
  --quiet --progress lines
status=\$?
echo "mlbert train exit status \$status"
[[ \$status == 3 ]]
JOB
step "sbatch --wait"
sbatch --wait "$work/job.sh" > /dev/null || fail "the batch job failed (exit status $?)"
step "job done"

versions=$(grep -c '^mlbert [0-9]' "$work/job.out" || true)
[[ $versions == 2 ]] || fail "srun --ntasks=2 ran mlbert --version $versions times, not 2"
log=$results/cpu_demo/bert/result_0.txt
[[ -f $log ]] || fail "no result log $log"
grep -q '"key": "train_samples", "value": 480,' "$log" \
  || fail "$log: train_samples is not 480 (30 steps of global batch 16 = 2 ranks x 8)"
grep -q '"key": "run_stop".*"status": "aborted"' "$log" || fail "$log: no run_stop with status aborted"
"$mlbert" check "$log" || fail "mlbert check rejected $log"

step "cluster down"
pids=()
for f in "$cluster"/state/slurmctld.pid "$cluster"/state/slurmd.pid "$cluster"/munge/munged.pid; do
  pids+=("$(cat "$f")")
done
"$repo/scripts/slurm/cluster_down.sh" "$cluster" || fail "cluster_down.sh failed"
for pid in "${pids[@]}"; do
  ! kill -0 "$pid" 2> /dev/null || fail "pid $pid of the cluster still runs after cluster_down.sh"
done
[[ ! -e $cluster ]] || fail "cluster_down.sh left $cluster"
step "passed"
