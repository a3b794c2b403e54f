#!/usr/bin/env bash
# The container and cluster scripts, these tests, and the Dockerfile's RUN instructions parse
# (bash -n) and pass shellcheck at every severity. The RUN instructions are checked as one POSIX
# sh script (what /bin/sh -c runs them with) that first assigns the Dockerfile's ARG and ENV
# variables; a `# shellcheck ...` comment right above a RUN is carried over with it.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_tools shellcheck

scripts=("$repo"/scripts/container/*.sh "$repo"/scripts/container/*.env "$repo"/scripts/slurm/*.sh
         "$repo"/tests/infra/*.sh)
((${#scripts[@]} >= 8)) || fail "found only ${#scripts[@]} scripts to check: ${scripts[*]}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The shell text of the Dockerfile's RUN instructions (shell form), continuation lines kept.
awk '
  function flush_directives() { printf "%s", directives; directives = "" }
  in_run { print; if (!/\\$/) in_run = 0; next }
  /^# shellcheck / { directives = directives $0 "\n"; next }
  /^[[:space:]]*(#|$)/ { directives = ""; next }
  toupper($1) == "ARG" || toupper($1) == "ENV" {
    directives = ""
    for (i = 2; i <= NF; ++i) {
      split($i, kv, "=")
      value = substr($i, length(kv[1]) + 2)
      gsub(/"/, "", value)
      printf "export %s=\"%s\"\n", kv[1], value
    }
    next
  }
  toupper($1) == "RUN" { flush_directives(); sub(/^[[:space:]]*RUN[[:space:]]+/, ""); print; if (/\\$/) in_run = 1; next }
  { directives = "" }
' "$repo/Dockerfile" > "$work/run_body.sh"
{
  echo '#!/bin/sh'
  cat "$work/run_body.sh"
} > "$work/Dockerfile-RUN.sh"
runs=$(grep -ci '^RUN ' "$repo/Dockerfile")
((runs >= 3)) || fail "the Dockerfile has $runs RUN instructions; expected the build and runtime steps"

status=0
for script in "${scripts[@]}" "$work/Dockerfile-RUN.sh"; do
  name=${script#"$repo"/}
  [[ $script == "$work/Dockerfile-RUN.sh" ]] && name="Dockerfile RUN instructions ($runs)"
  shell=bash
  [[ $script == "$work/Dockerfile-RUN.sh" ]] && shell="sh"
  if ! "$shell" -n "$script"; then
    echo "FAILED: $shell -n $name"
    status=1
  fi
  # -x follows `source` lines (their `# shellcheck source=` paths are relative to the script's
  # folder); -s names the shell of the sourced files, which have no #! line.
  if ! (cd "$(dirname "$script")" && shellcheck -x -s "$shell" "$script"); then
    echo "FAILED: shellcheck $name"
    status=1
  fi
done
((status == 0)) || exit 1
echo "sh/bash -n and shellcheck clean: ${#scripts[@]} scripts and the Dockerfile's $runs RUN instructions"
