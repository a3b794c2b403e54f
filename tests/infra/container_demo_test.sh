#!/usr/bin/env bash
# The CPU image, built with podman from the repository's Dockerfile on the local Debian base
# (scripts/container/build_image.sh --flavor cpu), carries the commit in its OCI labels and in
# `mlbert --version`, has mlbert, mlbert-core and mlbert-shard-reader on PATH and no compiler or
# development package, and runs `mlbert demo --runs 3` with the results folder mounted from the
# host: the logs land on the host, where the host's `mlbert check` accepts them. That result is
# then reproduced in the image: `reproduce plan --engine podman` writes the job, the job runs its
# preflight and 3 checked runs in the container (mpirun inside it), the logs land on the host under
# results/cpu_demo/bert and pass the host's check, and `reproduce compare` says "reproduced". The
# image and its containers are removed afterwards, also when the test fails (the cached base image
# stays).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_tools podman runc debootstrap
require_root
require_mlbert
# shellcheck source=../../scripts/container/podman.env
. "$repo/scripts/container/podman.env"

tag=localhost/mlbert-infra-test:$$-$RANDOM
container=mlbert-infra-test-$$-$RANDOM
work=$(mktemp -d /tmp/mlbert-infra-container.XXXXXX)
cleanup() {
  local status=$?
  podman rm -f "$container" > /dev/null 2>&1 || true
  podman rmi -f "$tag" > /dev/null 2>&1 || true
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

# The commit the build will record, taken before it starts (a commit made meanwhile would differ).
expected_revision=$(git -C "$repo" rev-parse HEAD 2> /dev/null || echo unknown)
step "base image"
"$repo/scripts/container/base_image.sh" > /dev/null
step "podman build $tag"
"$repo/scripts/container/build_image.sh" --flavor cpu --tag "$tag" --clean > "$work/build.log" 2>&1 \
  || { tail -n 40 "$work/build.log"; fail "the CPU image did not build (last lines above)"; }
step "$(grep -o 'built .* in [0-9]* s' "$work/build.log")"

label() { podman image inspect --format "{{index .Labels \"org.opencontainers.image.$1\"}}" "$tag"; }
revision=$(label revision)
[[ $revision == "$expected_revision"* ]] \
  || fail "label org.opencontainers.image.revision is '$revision', not the commit $expected_revision"
version=$(sed -n 's/^project(mlbert VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
[[ $(label version) == "$version" ]] || fail "label org.opencontainers.image.version is '$(label version)', not $version"
[[ $(label title) == mlbert ]] || fail "label org.opencontainers.image.title is '$(label title)'"

run() { podman run --rm --name "$container" "$@"; }
version_text=$(run "$tag" mlbert --version)
grep -qF "(commit $revision)" <<< "$version_text" || fail "mlbert --version in the image says: $version_text"
grep -q 'CUDA backend: not built in' <<< "$version_text" || fail "the CPU image's mlbert has CUDA: $version_text"
# The scripts below run in the image's shell: their $ are for it.
# shellcheck disable=SC2016
{
  # Each binary resolves from PATH to the installed folder, and every library it loads is there.
  paths=$(run "$tag" bash -c 'for b in mlbert mlbert-core mlbert-shard-reader; do command -v "$b"; done')
  unresolved=$(run "$tag" bash -c 'ldd /opt/mlbert/bin/* | grep "not found"' || true)
  # Only runtime libraries: no compiler, no build tool, no -dev package.
  leftovers=$(run "$tag" bash -c 'for t in cc c++ gcc g++ cmake ninja nvcc; do command -v "$t"; done;
    dpkg-query -W -f="\${Package}\n" | grep -E -- "-dev$"' || true)
}
[[ $paths == $'/opt/mlbert/bin/mlbert\n/opt/mlbert/bin/mlbert-core\n/opt/mlbert/bin/mlbert-shard-reader' ]] \
  || fail "the binaries on the image's PATH: $paths"
[[ -z $unresolved ]] || fail "libraries missing in the image: $unresolved"
[[ -z $leftovers ]] || fail "the runtime stage has build tools or development packages: $leftovers"

step "mlbert demo --runs 3 in the image"
mkdir "$work/results"
run -v "$work/results:/results" "$tag" mlbert demo --runs 3 --results /results > "$work/demo.log" 2>&1 \
  || { tail -n 40 "$work/demo.log"; fail "mlbert demo failed in the container (last lines above)"; }
step "demo done"
for i in 0 1 2; do
  log=$work/results/cpu_demo/bert/result_$i.txt
  [[ -f $log ]] || fail "the demo's log is not on the host at $log"
  grep -q '"key": "run_stop".*"status": "success"' "$log" || fail "$log: the run did not reach the target"
  "$mlbert" check --ruleset 4.1.0 "$log" || fail "the host's mlbert check rejected $log"
done

step "reproduce plan --engine podman on the demo's result, the job run in the image"
data=$work/results/demo_data/cpu_demo
"$mlbert" reproduce plan "$work/results/cpu_demo/bert" --out "$work/plan" \
  --system-description "$repo/systems/cpu_demo.json" --data "$data/train" \
  --eval-data "$data/eval.hdf5" --results "$work/reproduced" --runs 3 --scheduler mpirun \
  --engine podman --image "$tag" --allow-run-as-root --oversubscribe --best-effort > /dev/null
grep -qF "podman run --rm --ipc=host --network=host -v $work/plan:/mlbert-system" "$work/plan/job.sh" \
  || fail "the job does not start the image with its mounts: $(cat "$work/plan/job.sh")"
bash "$work/plan/job.sh" > "$work/job.out" 2>&1 \
  || { tail -n 40 "$work/job.out"; fail "the reproduction job failed in the container (last lines above)"; }
summary=$work/reproduced/cpu_demo/job_summary.txt
grep -q "preflight: rank 0: data: PASS" "$work/job.out" || fail "the job's preflight did not check the data"
for i in 0 1 2; do
  reproduced=$work/reproduced/cpu_demo/bert/result_$i.txt
  [[ -f $reproduced ]] || fail "run $i's log is not on the host at $reproduced"
  grep -q "run $i: mlbert check passed" "$summary" || fail "run $i was not checked: $(cat "$summary")"
  "$mlbert" check --ruleset 4.1.0 "$reproduced" > /dev/null || fail "the host's mlbert check rejected $reproduced"
done
grep -q "aborted: none; check failed: none" "$summary" || fail "$(cat "$summary")"
[[ -f $work/reproduced/cpu_demo/report.html ]] || fail "the job wrote no report on the host"
"$mlbert" reproduce compare "$work/reproduced/cpu_demo/bert" "$work/results/cpu_demo/bert" \
  --ruleset 4.1.0 --tolerance 200% > "$work/compare.out" \
  || { cat "$work/compare.out"; fail "compare: not reproduced"; }
[[ $(tail -n 1 "$work/compare.out") == reproduced ]] || fail "$(cat "$work/compare.out")"
step "passed"
