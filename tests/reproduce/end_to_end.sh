#!/usr/bin/env bash
# A result reproduced end to end: `mlbert demo --runs 3` publishes a result, `reproduce plan`
# turns it into a system file and a Slurm job, the job runs under a one-node Slurm cluster
# (scripts/slurm) with its preflight and 3 checked runs, and `reproduce compare` says
# "reproduced". The plan with its learning rate changed, run once more (one run, under mpirun),
# is named by compare as differing and fails it.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=../infra/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../infra/lib.sh"
require_tools slurmctld slurmd munged mungekey sbatch srun sinfo runuser jq
require_root
require_mlbert

work=$(mktemp -d /tmp/mlbert-reproduce-e2e.XXXXXX)
chmod 755 "$work"  # munged runs as the munge user, inside it
cluster=$work/cluster
cleanup() {
  local status=$?
  if ((status != 0)); then
    for f in "$work"/reproduced/cpu_demo/slurm-*.out "$work"/reproduced/cpu_demo/job_summary.txt \
      "$cluster"/log/slurmctld.log; do
      [[ -f $f ]] && { echo "---- $f (last 40 lines)"; tail -n 40 "$f"; }
    done
  fi
  "$repo/scripts/slurm/cluster_down.sh" "$cluster" > /dev/null 2>&1 || true
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

step "mlbert demo --runs 3: the result to reproduce"
"$mlbert" demo --runs 3 --seed 11 --results "$work/published" --systems-dir "$repo/systems" \
  > "$work/demo.out" 2>&1 || { tail -n 30 "$work/demo.out"; fail "mlbert demo failed"; }
published=$work/published/cpu_demo/bert
data=$work/published/demo_data/cpu_demo

step "reproduce plan, with its Slurm job"
"$mlbert" reproduce plan "$published" --out "$work/plan" \
  --system-description "$repo/systems/cpu_demo.json" --data "$data/train" \
  --eval-data "$data/eval.hdf5" --results "$work/reproduced" --runs 3 --scheduler slurm \
  --allow-run-as-root --oversubscribe --best-effort
bash -n "$work/plan/job.sh"

step "cluster up"
"$repo/scripts/slurm/cluster_up.sh" "$cluster" --timeout 60 > /dev/null
# shellcheck source=/dev/null
. "$cluster/slurm.env"
step "sbatch --wait the job (preflight, 3 runs)"
sbatch --wait --partition "$MLBERT_SLURM_PARTITION" "$work/plan/job.sh" > /dev/null ||
  fail "the reproduction job failed (exit status $?)"
summary=$work/reproduced/cpu_demo/job_summary.txt
grep -q "preflight: rank 0: data: PASS" "$work"/reproduced/cpu_demo/slurm-*.out ||
  fail "the job's preflight did not check the data"
for i in 0 1 2; do
  grep -q "run $i: mlbert check passed" "$summary" || fail "run $i was not checked: $(cat "$summary")"
done
grep -q "aborted: none; check failed: none" "$summary" || fail "$(cat "$summary")"

step "reproduce compare"
"$mlbert" reproduce compare "$work/reproduced/cpu_demo/bert" "$published" --ruleset 4.1.0 \
  --tolerance 200% > "$work/compare.out" || { cat "$work/compare.out"; fail "compare: not reproduced"; }
[[ $(tail -n 1 "$work/compare.out") == reproduced ]] || fail "$(cat "$work/compare.out")"

step "the plan with another learning rate, one run under mpirun"
"$mlbert" reproduce plan "$published" --out "$work/plan_lr" \
  --system-description "$repo/systems/cpu_demo.json" --data "$data/train" \
  --eval-data "$data/eval.hdf5" --results "$work/changed" --runs 1 --scheduler mpirun \
  --allow-run-as-root --oversubscribe --best-effort > /dev/null
jq '.run.optimizer.learning_rate = 0.003' "$work/plan_lr/system.json" > "$work/lr.json"
mv "$work/lr.json" "$work/plan_lr/system.json"
bash "$work/plan_lr/job.sh" > "$work/changed.out" 2>&1 || true
set +e
"$mlbert" reproduce compare "$work/changed/cpu_demo/bert" "$published" --ruleset 4.1.0 \
  --tolerance 200% > "$work/compare_lr.out"
status=$?
set -e
[[ $status == 1 ]] || fail "compare with a changed learning rate exited $status, not 1"
grep -q "^not reproduced: opt_base_learning_rate differs" "$work/compare_lr.out" ||
  fail "compare did not name the learning rate: $(cat "$work/compare_lr.out")"
step "reproduced, and the changed learning rate named"
