#!/usr/bin/env bash
# A command-line test:
#   expect.sh [--stderr] [--lines N] [--contains REGEX] STATUS FIRST_LINE_REGEX COMMAND [ARG...]
# Runs COMMAND; passes when it exits with STATUS and the first line it prints (stderr, then stdout;
# stderr alone with --stderr) matches the extended regular expression FIRST_LINE_REGEX; with
# --lines, when it prints exactly N lines; with --contains, when some line matches REGEX. Every
# condition is checked: a right message with a wrong exit status fails, and so does the reverse.
set -u
stream=both lines="" contains=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --stderr) stream=stderr; shift ;;
    --lines) lines=$2; shift 2 ;;
    --contains) contains=$2; shift 2 ;;
    *) break ;;
  esac
done
want_status=$1 want_line=$2
shift 2
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$@" >"$out" 2>"$err" </dev/null
status=$?
if [[ $stream == both ]]; then cat "$out" >>"$err"; fi
first=$(head -n 1 "$err")
ok=1
[[ $status -eq $want_status ]] || { echo "FAIL: exit status $status, expected $want_status"; ok=0; }
grep -Eq -- "$want_line" <<<"$first" || { echo "FAIL: first line does not match /$want_line/"; ok=0; }
# grep -c '' counts a last line without a newline too (wc -l would not).
printed=$(grep -c '' "$err")
if [[ -n $lines && $printed -ne $lines ]]; then
  echo "FAIL: $printed lines printed, expected $lines"; ok=0
fi
if [[ -n $contains ]] && ! grep -Eq -- "$contains" "$err"; then
  echo "FAIL: no line matches /$contains/"; ok=0
fi
echo "command: $*"
echo "first line: $first"
[[ $ok -eq 1 ]] && echo "ok" && exit 0
echo "--- output (first 40 lines)"; head -n 40 "$err"
exit 1
