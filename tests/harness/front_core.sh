#!/usr/bin/env bash
# `mlbert` (the front end) and `mlbert-core`: the same commands in the same help groups with the
# same descriptions, the forwarded ones reach mlbert-core with their arguments and exit status, and
# a missing mlbert-core is a clear error.
#   front_core.sh BIN_DIR
set -u
bin="$1"
fail() { echo "FAIL: $*"; exit 1; }
commands() { "$1" --help | sed -n '/^audit: /,$p'; }

diff <(commands "$bin/mlbert") <(commands "$bin/mlbert-core") ||
  fail "mlbert --help and mlbert-core --help list different commands, groups or descriptions"
[ "$(commands "$bin/mlbert" | grep -c '^  [a-z]')" -ge 11 ] || fail "fewer than 11 commands"

out=$("$bin/mlbert" train --help 2>&1) || fail "mlbert train --help exited $?"
grep -q -- '--system' <<<"$out" || fail "mlbert train --help did not print train's options: $out"

"$bin/mlbert" launch --system no_such_system --systems-dir /nonexistent --dry-run >/dev/null 2>&1
[ $? -eq 2 ] || fail "a failing forwarded subcommand did not keep its exit status 2"

out=$(MLBERT_CORE=/nonexistent/mlbert-core "$bin/mlbert" data inspect x 2>&1)
[ $? -eq 2 ] || fail "a missing mlbert-core did not exit 2"
grep -q 'mlbert-core' <<<"$out" || fail "a missing mlbert-core was not named: $out"

out=$(MLBERT_CORE=/nonexistent/mlbert-core "$bin/mlbert" check --help 2>&1) ||
  fail "mlbert check needed mlbert-core: $out"
echo "front end and mlbert-core agree"
