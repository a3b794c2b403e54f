#!/usr/bin/env bash
# Builds the mlbert image from the repository's Dockerfile with podman or docker, filling in what
# the Dockerfile cannot know: the commit (org.opencontainers.image.revision and `mlbert --version`),
# the project version, the source remote, and for the CPU flavor the local Debian base.
#
#   scripts/container/build_image.sh --flavor cpu|cuda --tag IMAGE [--engine podman|docker]
#                                    [--base IMAGE] [--clean]
#     --flavor  cpu: CUDA off, on the Debian base of scripts/container/base_image.sh (made when
#               absent); cuda: the Dockerfile's pinned NVIDIA CUDA images
#     --tag     the image name to build
#     --engine  podman (default when installed) or docker
#     --base    build and run on IMAGE instead of the flavor's base
#     --clean   keep no intermediate images or layer cache (tests; the final image alone remains)
#
# Prints the image name as its last line on stdout. Exit status: 0 built; 1 the build failed;
# 2 bad arguments; 3 no container engine, or the CPU base could not be made.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
flavor="" tag="" engine="" base="" clean=0
while (($#)); do
  case "$1" in
    --flavor) flavor=${2:?--flavor needs a value}; shift 2 ;;
    --tag) tag=${2:?--tag needs a value}; shift 2 ;;
    --engine) engine=${2:?--engine needs a value}; shift 2 ;;
    --base) base=${2:?--base needs a value}; shift 2 ;;
    --clean) clean=1; shift ;;
    *) echo "build_image.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ $flavor == cpu || $flavor == cuda ]] || { echo "build_image.sh: --flavor must be cpu or cuda" >&2; exit 2; }
[[ -n $tag ]] || { echo "build_image.sh: --tag IMAGE is required" >&2; exit 2; }
if [[ -z $engine ]]; then
  engine=podman
  command -v podman > /dev/null || engine=docker
fi
[[ $engine == podman || $engine == docker ]] || { echo "build_image.sh: --engine must be podman or docker" >&2; exit 2; }
command -v "$engine" > /dev/null || { echo "build_image.sh: $engine not found; install with: scripts/deps.sh install-infra" >&2; exit 3; }

args=(--file "$repo/Dockerfile" --tag "$tag")
if [[ $flavor == cpu ]]; then
  if [[ -z $base ]]; then
    [[ $engine == podman ]] || { echo "build_image.sh: the CPU flavor's local base needs podman; give --base IMAGE with docker" >&2; exit 2; }
    base=$("$repo/scripts/container/base_image.sh" | tail -n 1) || exit 3
  fi
  args+=(--build-arg MLBERT_CUDA=OFF)
fi
[[ -z $base ]] || args+=(--build-arg "BASE_BUILD=$base" --build-arg "BASE_RUNTIME=$base")

# The same words `mlbert --version` uses for a checkout (cmake/BuildInfo.cmake), as the image's
# sources carry no .git.
if revision=$(git -C "$repo" rev-parse HEAD 2> /dev/null); then
  [[ -z $(git -C "$repo" status --porcelain --untracked-files=no) ]] || revision+=" with uncommitted changes"
else
  revision=unknown
fi
version=$(sed -n 's/^project(mlbert VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
source_url=$(git -C "$repo" remote get-url origin 2> /dev/null || echo unknown)
args+=(--build-arg "REVISION=$revision" --build-arg "VERSION=${version:-unknown}" --build-arg "SOURCE=$source_url")
if ((clean)); then
  if [[ $engine == podman ]]; then args+=(--layers=false); else args+=(--no-cache --rm --force-rm); fi
fi

started=$(date +%s)
echo "build_image.sh: $engine build of $tag ($flavor${base:+, base $base})" >&2
"$engine" build "${args[@]}" "$repo" >&2 || { echo "build_image.sh: the build of $tag failed" >&2; exit 1; }
echo "build_image.sh: built $tag in $(( $(date +%s) - started )) s" >&2
echo "$tag"
