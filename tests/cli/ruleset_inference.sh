#!/usr/bin/env bash
# ruleset_inference.sh MLBERT WORK_DIR: `mlbert check` without --ruleset checks each log against
# the round in its path (training_results_v4.0 -> 4.0.0), else the newest ruleset with BERT and a
# warning naming it; it says what it inferred in one stderr line per command, and one per log only
# with -v.
set -u
bin=$1 work=$2
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" || fail "cannot make $work"
a=$work/training_results_v4.0/Org/results/sys_a/bert
b=$work/training_results_v4.0/Org/results/sys_b/bert
mkdir -p "$a" "$b" "$work/plain"
for d in "$a" "$b"; do
  "$bin" check --print-example --ruleset 4.0.0 >"$d/result_0.txt" 2>/dev/null || fail "--print-example 4.0.0"
done
"$bin" check --print-example >"$work/plain/result_0.txt" 2>"$work/example.err" || fail "--print-example"
grep -Eq '^mlbert check: ruleset [0-9.]+, the newest with BERT' "$work/example.err" ||
  fail "--print-example without --ruleset did not say which: $(cat "$work/example.err")"

run() {  # expected status, then the arguments of mlbert check
  local want=$1; shift
  "$bin" check "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  [[ $rc -eq $want ]] || fail "mlbert check $* exited $rc, expected $want: $(cat "$work/out" "$work/err")"
}
run 0 "$a/result_0.txt" "$b/result_0.txt"
[[ $(wc -l <"$work/err") -eq 1 ]] || fail "two logs of one round: not one line on stderr: $(cat "$work/err")"
grep -Eq '^mlbert check: ruleset 4.0.0 from the round in the path [(]--ruleset overrides' "$work/err" ||
  fail "the inferred ruleset line: $(cat "$work/err")"
grep -q '^2 of 2 logs pass (ruleset 4.0.0)$' "$work/out" || fail "summary: $(cat "$work/out")"

run 0 -v "$a/result_0.txt" "$b/result_0.txt"
[[ $(grep -c 'result_0.txt: ruleset 4.0.0 (from the round in its path)' "$work/err") -eq 2 ]] ||
  fail "-v did not name each log's ruleset: $(cat "$work/err")"

run 0 "$work/plain/result_0.txt"
grep -Eq '^mlbert check: warning: no round [(]e[.]g[.] v4[.]1[)] in the path of .*plain/result_0[.]txt: using ruleset [0-9.]+, the newest with BERT' "$work/err" ||
  fail "a log without a round: $(cat "$work/err")"
newest=$(sed -n 's/^mlbert check: warning: .*: using ruleset \([0-9.]*\),.*/\1/p' "$work/err")
"$bin" --version | grep -q "(newest with BERT: $newest)" || fail "check's newest ($newest) is not --version's"

# Logs of a round and logs without one: still one line, with both counts.
run 0 "$a/result_0.txt" "$work/plain/result_0.txt"
grep -Eq "^mlbert check: ruleset 4.0.0 [(]1 log[)] from the round in the path; warning: no round [(]e[.]g[.] v4[.]1[)] in the path of .*plain/result_0[.]txt: using ruleset $newest, the newest with BERT" "$work/err" ||
  fail "mixed logs: $(cat "$work/err")"
echo "ok"
