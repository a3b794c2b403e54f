#!/usr/bin/env bash
# The job scripts `mlbert launch` writes, for every scheduler and engine: they pass `bash -n` and
# Debian's linter (shellcheck); a dry run without --data is refused, and a job whose data folder is missing stops at
# its preflight (exit 4) before the first run, leaving no log.
#   job_scripts.sh MLBERT SYSTEMS_DIR WORK_DIR
set -u
mlbert="$1"
systems="$2"
work="$3"
fail() { echo "FAIL: $*"; exit 1; }
command -v shellcheck >/dev/null || { echo "SKIPPED: shellcheck is not installed"; exit 77; }
rm -rf "$work"
mkdir -p "$work" || fail "cannot create $work"

for scheduler in mpirun slurm; do
  for engine in none pyxis apptainer docker podman; do
    [ "$scheduler/$engine" = mpirun/pyxis ] && continue
    script="$work/job_${scheduler}_${engine}.sh"
    "$mlbert" launch --system cpu_demo --systems-dir "$systems" --scheduler "$scheduler" \
      --engine "$engine" --image localhost/mlbert:cpu --runs 3 --dry-run \
      --data "$work/my data" --eval-data "$work/eval set/eval.hdf5" --results "$work/results" \
      >"$script" 2>"$work/err" || fail "$scheduler/$engine: $(cat "$work/err")"
    bash -n "$script" || fail "$scheduler/$engine: bash -n rejects $script"
    shellcheck "$script" || fail "$scheduler/$engine: shellcheck rejects $script"
  done
done

# 128 nodes under mpirun: the hostfile comes from the environment, checked before anything runs.
script="$work/job_128_nodes.sh"
"$mlbert" launch --system dgxa100_128x8 --systems-dir "$systems" --dry-run --data /data/train \
  --eval-data /data/eval.hdf5 --results "$work/results" >"$script" || fail "128 nodes: no job"
bash -n "$script" || fail "128 nodes: bash -n rejects the job"
shellcheck "$script" || fail "128 nodes: shellcheck rejects the job"
grep -q 'MLBERT_HOSTFILE:?' "$script" || fail "128 nodes: the job does not require MLBERT_HOSTFILE"

err=$("$mlbert" launch --system cpu_demo --systems-dir "$systems" --dry-run 2>&1)
[ $? -eq 2 ] || fail "a dry run without --data did not exit 2: $err"
grep -q -- "--data: missing" <<<"$err" || fail "a dry run without --data does not say so: $err"

# The preflight under the real launcher, with the data folder missing.
mkdir -p "$work/eval set"
: >"$work/eval set/eval.hdf5"
root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
"$mlbert" launch --system cpu_demo --systems-dir "$systems" --runs 2 --dry-run "${root[@]}" \
  --oversubscribe --best-effort --data "$work/no such data" \
  --eval-data "$work/eval set/eval.hdf5" --results "$work/results" >"$work/job.sh" ||
  fail "cannot write the job"
out=$(bash "$work/job.sh" 2>&1)
rc=$?
[ $rc -eq 4 ] || fail "the job with no data exited $rc, not 4: $out"
grep -q "data: FAIL .*no such data: no such folder" <<<"$out" || fail "the preflight did not name the data folder: $out"
grep -q "preflight FAILED: no run started" "$work/results/cpu_demo/job_summary.txt" ||
  fail "the summary does not say no run started"
grep -q "run 0" "$work/results/cpu_demo/job_summary.txt" && fail "a run started after a failed preflight"
[ ! -e "$work/results/cpu_demo/bert/result_0.txt" ] || fail "a log was written after a failed preflight"
echo "10 job scripts lint clean; no --data refused; a missing data folder stops the job before its first run"
