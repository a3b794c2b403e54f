#!/usr/bin/env bash
# Messages that say the real reason: a run time that is no time, a path through a file.
#   messages.sh MLBERT CASE
set -u
mlbert=$1 case=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

fail() { echo "FAIL ($case): $*"; echo "--- output"; head -c 3000 out.txt 2>/dev/null; exit 1; }
run() {
  timeout -k 1 30 "$@" >out.txt 2>&1 </dev/null
  status=$?
  echo "ran: $* -> exit $status"
}
expect_status() { [[ $status -eq $1 ]] || fail "exit status $status, expected $1"; }
expect_line() { grep -Eq -- "$1" out.txt || fail "no line matches /$1/"; }

case $case in
  score-meaningless-time)
    # run_stop NaN, negative, or before run_start: the official verdict stands, the score says
    # that its number means nothing.
    "$mlbert" check --print-example --ruleset 4.1.0 >clean.txt
    for time_ms in NaN -5 1700000000000; do
      rm -rf sys && mkdir sys
      sed "/\"key\": \"run_stop\"/s/\"time_ms\": [0-9]*/\"time_ms\": $time_ms/" clean.txt >sys/result_0.txt
      cmp -s clean.txt sys/result_0.txt && fail "run_stop's time was not changed"
      run "$mlbert" score --ruleset 4.1.0 sys
      expect_line "^  note: result_0.txt: its run time [(].* min[)] is meaningless: run_stop is not a time after run_start"
    done
    ;;
  path-through-a-file)
    # A path whose folder is a file: "Not a directory", not "no such file".
    echo text >file.txt
    run "$mlbert" check --ruleset 4.1.0 file.txt/result_0.txt
    expect_status 2
    expect_line "^mlbert: error: file.txt/result_0.txt: Not a directory$"
    run "$mlbert" score --ruleset 4.1.0 file.txt/sys
    expect_status 2
    expect_line "^mlbert: error: file.txt/sys: Not a directory$"
    ;;
  *)
    fail "unknown case"
    ;;
esac
echo ok
