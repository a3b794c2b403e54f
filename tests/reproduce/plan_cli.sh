#!/usr/bin/env bash
# `mlbert reproduce plan` from the command line: every published fixture folder gives a whole plan
# with its Slurm job (exit 0; the job passes bash -n and shellcheck) or a refusal that says why
# (exit 3, plan.json and README.md, no system.json); bad input exits 2 naming the file and field
# and leaves no plan folder behind.
#   plan_cli.sh MLBERT SHARED_DIR WORK_DIR
set -u
mlbert="$1"
fixtures="$2/fixtures"
work="$3"
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"
mkdir -p "$work" || fail "cannot create $work"

n=0
while IFS= read -r desc; do
  dir=$(dirname "$desc")
  out="$work/plan_$n"
  n=$((n + 1))
  err=$("$mlbert" reproduce plan "$dir" --out "$out" --data /lustre/data/train \
    --eval-data /lustre/data/eval.hdf5 --results "$work/results" --engine pyxis \
    --image nvcr.io#mlbert:1 2>&1 >/dev/null)
  rc=$?
  case $rc in
    0) for f in system.json plan.json README.md; do
         [ -s "$out/$f" ] || fail "$dir: exit 0 but no $f"
       done
       jq -e '.reproducible == true and (.fields | all(.source != ""))' "$out/plan.json" >/dev/null ||
         fail "$dir: plan.json is not a reproducible plan with a source for every field"
       bash -n "$out/job.sh" || fail "$dir: bash -n rejects its job.sh"
       if command -v shellcheck >/dev/null; then
         shellcheck "$out/job.sh" || fail "$dir: shellcheck rejects its job.sh"
       fi ;;
    3) [ ! -e "$out/system.json" ] || fail "$dir: refused but wrote system.json"
       jq -e '.reproducible == false and (.refusal | length > 0)' "$out/plan.json" >/dev/null ||
         fail "$dir: refused without a reason in plan.json"
       grep -q "not reproducible: ." <<<"$err" || fail "$dir: refusal does not say why: $err" ;;
    *) fail "$dir: exit $rc: $err" ;;
  esac
done < <(find "$fixtures/mlperf_logs" "$fixtures/mlperf_logs_early" -name system.json | sort)
[ "$n" -ge 10 ] || fail "only $n published folders found under $fixtures"

# Bad input: exit 2, the file and field named, no plan folder.
bad="$work/bad"
mkdir -p "$bad/empty" "$bad/other"
sed 's/"value": "bert"/"value": "resnet"/' \
  "$fixtures/mlperf_logs/v1.1/NVIDIA/dgxa100_n8_ngc21.09_pytorch/result_0.txt" >"$bad/other/result_0.txt"
cp "$fixtures/mlperf_logs/v1.1/NVIDIA/dgxa100_n8_ngc21.09_pytorch/system.json" "$bad/other/"
expect_error() {  # DIR WHAT...
  local dir="$1"; shift
  local out="$work/bad_plan"
  local err
  err=$("$mlbert" reproduce plan "$dir" --out "$out" 2>&1)
  local rc=$?
  [ $rc -eq 2 ] || fail "$dir: exit $rc, not 2: $err"
  for what in "$@"; do grep -qF -- "$what" <<<"$err" || fail "$dir: error does not name $what: $err"; done
  [ ! -e "$out" ] || fail "$dir: a plan folder was left behind"
  local staged
  for staged in "$work"/.*partial*; do
    [ -e "$staged" ] && fail "$dir: a staging folder was left behind: $staged"
  done
  return 0
}
expect_error "$bad/empty" "result_*.txt" "none"
expect_error "$bad/other" "result_0.txt:" "submission_benchmark"
echo "$n published folders planned or refused with a reason; bad input refused"
