#!/usr/bin/env bash
# The CPU image, built with podman from the repository's Dockerfile on the local Debian base
# (scripts/container/build_image.sh --flavor cpu), carries the commit in its OCI labels and in
# `mlbert --version`, has mlbert, mlbert-core and mlbert-shard-reader on PATH and no compiler or
# development package, and runs `mlbert demo --runs 1` with the results folder mounted from the
# host: the log lands on the host, where the host's `mlbert check` accepts it. The image and its
# container are removed afterwards, also when the test fails (the cached base image stays).
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

step "mlbert demo --runs 1 in the image"
mkdir "$work/results"
run -v "$work/results:/results" "$tag" mlbert demo --runs 1 --results /results > "$work/demo.log" 2>&1 \
  || { tail -n 40 "$work/demo.log"; fail "mlbert demo failed in the container (last lines above)"; }
step "demo done"
log=$work/results/cpu_demo/bert/result_0.txt
[[ -f $log ]] || fail "the demo's log is not on the host at $log"
grep -q '"key": "run_stop".*"status": "success"' "$log" || fail "$log: the run did not reach the target"
"$mlbert" check "$log" || fail "the host's mlbert check rejected $log"
step "passed"
