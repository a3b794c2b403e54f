# What the infrastructure tests share: the repository and binary paths, and the rule for a missing
# package. Such a test skips (exit 77, ctest's "Skipped", with the reason on a SKIPPED: line) when
# a package it needs is not installed, except under MLBERT_REQUIRE_INFRA=1 (CI installs the
# packages, so there a missing one is a failure, never a silent skip).
# shellcheck shell=bash

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The host's mlbert (ctest passes the built binary).
mlbert=${MLBERT_BIN:-$repo/build/bin/mlbert}

fail() {
  echo "FAILED: $*" >&2
  exit 1
}

missing_prerequisite() {
  [[ ${MLBERT_REQUIRE_INFRA:-} != 1 ]] || fail "$1, and MLBERT_REQUIRE_INFRA=1"
  echo "SKIPPED: $1"
  exit 77
}

# Every command named must be on PATH.
require_tools() {
  local tool missing=()
  for tool in "$@"; do
    command -v "$tool" > /dev/null || missing+=("$tool")
  done
  ((${#missing[@]} == 0)) \
    || missing_prerequisite "${missing[*]} not installed (install with: scripts/deps.sh install-infra)"
}

# Daemons, debootstrap and podman's system store need root.
require_root() {
  [[ $(id -u) -eq 0 ]] || missing_prerequisite "not root: the test starts daemons and uses podman's system store"
}

require_mlbert() {
  [[ -x $mlbert ]] || fail "$mlbert is not built"
}

# Seconds since the test started, for its log.
test_started=$(date +%s)
step() { echo "[$(( $(date +%s) - test_started )) s] $*"; }
