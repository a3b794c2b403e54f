#!/usr/bin/env bash
# The one list of Debian packages mlbert needs. Sourced by the Makefile, .ci/run and the Dockerfile.
# `scripts/deps.sh install` installs the missing ones (as root) or prints the apt-get line;
# `install-build` only the build set.
# Build: what compiling and running mlbert needs (also what the Dockerfile installs).
MLBERT_BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  nlohmann-json3-dev libcli11-dev catch2
  libhdf5-dev libopenmpi-dev openmpi-bin libopenblas-dev libutf8proc-dev libxxhash-dev libssl-dev
)
# Test: the extra tools `make test` and .ci/run use (libFuzzer via clang, Python venvs for oracles,
# headless Chromium for the `mlbert report` page tests: ~115 MB download).
MLBERT_TEST_PACKAGES=(clang libclang-rt-14-dev python3 python3-venv chromium)
MLBERT_DEBIAN_PACKAGES=("${MLBERT_BUILD_PACKAGES[@]}" "${MLBERT_TEST_PACKAGES[@]}")

mlbert_missing_packages() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  echo "${missing[@]}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  case "${1:-list}" in
    list) echo "${MLBERT_DEBIAN_PACKAGES[@]}" ;;
    install|install-build)
      if [[ $1 == install-build ]]; then wanted=("${MLBERT_BUILD_PACKAGES[@]}"); else wanted=("${MLBERT_DEBIAN_PACKAGES[@]}"); fi
      missing=$(mlbert_missing_packages "${wanted[@]}")
      if [[ -z "$missing" ]]; then exit 0; fi
      if [[ $(id -u) -eq 0 ]]; then
        echo "mlbert: installing missing Debian packages: $missing"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        # shellcheck disable=SC2086
        apt-get install -y -qq --no-install-recommends $missing
      else
        echo "mlbert: missing Debian packages; run:" >&2
        echo "  sudo apt-get install -y $missing" >&2
        exit 1
      fi
      ;;
    *) echo "usage: scripts/deps.sh [list|install|install-build]" >&2; exit 2 ;;
  esac
fi
