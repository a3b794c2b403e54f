#!/usr/bin/env bash
# simulate --sweep's progress on standard error, off a terminal: a line per --progress-every
# SECONDS (0: per value), none for a sweep shorter than the interval or with --quiet, and standard
# output the same bytes whatever stderr gets.
#   sweep_progress.sh MLBERT SYSTEMS_DIR
set -u
mlbert=$1 systems=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*"; echo "--- stderr"; head -c 3000 err.txt 2>/dev/null; exit 1; }
sweep=(simulate --system dgxa100_1x8 --systems-dir "$systems" --sweep gbs=256,448,896)
run() {
  timeout -k 1 120 "$mlbert" "$@" >out.txt 2>err.txt </dev/null
  status=$?
  echo "ran: mlbert $* -> exit $status"
  [[ $status -eq 0 ]] || fail "exit status $status"
}

run "${sweep[@]}" --quiet --progress-every 0
cp out.txt quiet.txt
[[ -s err.txt ]] && fail "--quiet printed progress"

run "${sweep[@]}" --progress-every 0
cmp -s out.txt quiet.txt || fail "the progress changed standard output"
for done in 1 2 3; do
  grep -Eq "^mlbert simulate: --sweep gbs: $done of 3 values done [(]$((done * 100 / 3))%[)], [0-9]+ s; last gbs=[0-9]+$" err.txt ||
    fail "no progress line for value $done of 3"
done
[[ $(grep -c '' err.txt) -eq 3 ]] || fail "expected 3 progress lines"

# An interval longer than the sweep: nothing on stderr.
run "${sweep[@]}" --progress-every 1000
cmp -s out.txt quiet.txt || fail "standard output differs"
[[ -s err.txt ]] && fail "a sweep shorter than the interval printed progress"

# --json: standard output stays one JSON document while the progress goes to stderr.
run "${sweep[@]}" --json --progress-every 0
python3 -c 'import json,sys; json.load(open("out.txt"))' || fail "--json output is not JSON"
[[ $(grep -c 'values done' err.txt) -eq 3 ]] || fail "--json: expected 3 progress lines on stderr"
echo ok
