#!/usr/bin/env bash
# Makes a plain Debian base image in the local podman store from debootstrap, for machines that
# can reach Debian's package mirror but no container registry: the CPU image's FROM
# (Dockerfile's BASE_BUILD and BASE_RUNTIME) names it.
#
# Cached by name: when the image exists nothing is done, so callers run this before every build.
# Two callers at once make it once (a lock per image name).
#
#   scripts/container/base_image.sh [--suite SUITE] [--mirror URL] [--name IMAGE] [--force]
#     --suite   Debian release (default bookworm)
#     --mirror  package mirror (default http://deb.debian.org/debian); it is also the image's
#               apt source, so builds from the image install packages from it
#     --name    image name (default localhost/debian-SUITE-minbase)
#     --force   remake the image even when it exists
#
# Prints the image name as its last line on stdout. Exit status: 0 the image exists; 1 debootstrap
# or the import failed; 2 bad arguments; 3 podman or debootstrap is missing, or not run as root
# (debootstrap needs root).
set -euo pipefail

suite=bookworm
mirror=http://deb.debian.org/debian
name=""
force=0
usage() { sed -n '9,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while (($#)); do
  case "$1" in
    --suite) suite=${2:?--suite needs a value}; shift 2 ;;
    --mirror) mirror=${2:?--mirror needs a value}; shift 2 ;;
    --name) name=${2:?--name needs a value}; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) usage ;;
    *) echo "base_image.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
name=${name:-localhost/debian-$suite-minbase}

missing=()
for tool in podman debootstrap flock; do
  command -v "$tool" > /dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
  echo "base_image.sh: ${missing[*]} not found; install with: scripts/deps.sh install-infra" >&2
  exit 3
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "base_image.sh: debootstrap needs root" >&2
  exit 3
fi

lock_dir=${TMPDIR:-/tmp}
exec {lock}> "$lock_dir/mlbert-base-image-${name//[^A-Za-z0-9._-]/_}.lock"
flock "$lock"

if ((force == 0)) && podman image exists "$name"; then
  echo "$name"
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/var/tmp}/mlbert-debootstrap.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs
started=$(date +%s)
echo "base_image.sh: debootstrap --variant=minbase $suite from $mirror" >&2
if ! debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" > "$work/debootstrap.log" 2>&1; then
  echo "base_image.sh: debootstrap failed; the end of its log:" >&2
  tail -n 30 "$work/debootstrap.log" >&2
  exit 1
fi
# The downloaded packages and indexes are not part of the system; a build runs apt-get update.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
if ! tar -C "$rootfs" --numeric-owner -c . | podman import \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["/bin/bash"]' \
      --change "LABEL org.opencontainers.image.title=\"Debian $suite minbase (debootstrap)\"" \
      --change "LABEL org.opencontainers.image.source=\"$mirror\"" \
      --quiet - "$name" > /dev/null; then
  echo "base_image.sh: podman import of $rootfs as $name failed" >&2
  exit 1
fi
echo "base_image.sh: made $name in $(( $(date +%s) - started )) s" >&2
echo "$name"
