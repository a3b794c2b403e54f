#!/usr/bin/env bash
# version_test.sh MLBERT SOURCE_DIR WORK_DIR: `mlbert --version` names the commit it was built from
# (when the sources are a git checkout), the CUDA backend, and exactly the rulesets the log toolkit
# knows (those `mlbert check --ruleset` accepts); cmake/BuildInfo.cmake finds the commit in a
# `git archive` tarball without .git, and says "unknown" when there is neither.
set -u
bin=$1 src=$2 work=$3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" || fail "cannot make $work"

version=$("$bin" --version) || fail "mlbert --version exited $?"
echo "$version"
line1=$(sed -n 1p <<<"$version") line2=$(sed -n 2p <<<"$version") line3=$(sed -n 3p <<<"$version")
[[ $line2 =~ ^CUDA\ backend:\ (built\ in,\ for\ sm_[0-9]+|not\ built\ in) ]] || fail "line 2: $line2"

# The rulesets: those of `check --ruleset TEXT:{...}`, oldest first.
accepted=$("$bin" check --help | sed -n 's/.*--ruleset TEXT:{\([^}]*\)}.*/\1/p' | tr ',' '\n' | sort -V | paste -sd, | sed 's/,/, /g')
[[ -n $accepted ]] || fail "no ruleset list in mlbert check --help"
[[ $line3 == "rulesets: $accepted (newest with BERT: "* ]] || fail "line 3 '$line3', toolkit has '$accepted'"

if head=$(git -C "$src" rev-parse HEAD 2>/dev/null); then
  [[ $line1 == *"(commit $head"* ]] || fail "line 1 '$line1' does not name HEAD $head"
  # From a tarball made by `git archive`: no .git, the commit in cmake/commit.txt.
  mkdir -p "$work/archive" && git -C "$src" archive HEAD cmake | tar -x -C "$work/archive" ||
    fail "git archive failed"
  cmake -DSOURCE_DIR="$work/archive" -DOUTPUT="$work/archive.cc" -DVERSION=0.0.0 -DCUDA=OFF \
    -P "$src/cmake/BuildInfo.cmake" || fail "BuildInfo.cmake failed on the archive"
  grep -q "\"$head (from the source archive)\"" "$work/archive.cc" ||
    fail "the archive's build info lacks $head: $(grep commit -i "$work/archive.cc" || cat "$work/archive.cc")"
else
  echo "note: $src is not a git checkout; the commit comparison and the archive case did not run"
fi
# Neither git nor a filled-in commit.txt.
mkdir -p "$work/plain/cmake" && printf '$Format:%%H$\n' >"$work/plain/cmake/commit.txt"
cmake -DSOURCE_DIR="$work/plain" -DOUTPUT="$work/plain.cc" -DVERSION=0.0.0 -DCUDA=OFF \
  -P "$src/cmake/BuildInfo.cmake" || fail "BuildInfo.cmake failed without git"
grep -q '"unknown (no git checkout' "$work/plain.cc" || fail "no 'unknown' commit: $(cat "$work/plain.cc")"
echo "ok"
