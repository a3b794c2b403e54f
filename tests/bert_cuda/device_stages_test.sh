#!/usr/bin/env bash
# The device check's stage logic (scripts/device_stages.sh) with fake stages that pass, fail, skip,
# crash, hang, leave too little time, and a check stopped by SIGTERM in the middle of a stage: each
# gets its row, reason and rerun line, the summary is printed in every case, and the exit status is
# non-zero exactly when a stage did not pass or skip. Needs no GPU.
#   tests/bert_cuda/device_stages_test.sh <repository root>
set -uo pipefail
ROOT=${1:?usage: device_stages_test.sh <repository root>}
LIB=$ROOT/scripts/device_stages.sh
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_line() {  # file regex what
  grep -Eq -- "$2" "$1" || fail "$3 (no line matching /$2/ in:)" || true
  grep -Eq -- "$2" "$1" || sed 's/^/    /' "$1"
}

# A check script of fake stages; $1 picks the scenario.
cat >"$WORK/check.sh" <<EOF
#!/usr/bin/env bash
source "$LIB"
trap 'stages_interrupt TERM' TERM
trap 'stages_finish; exit \$?' EXIT
stages_init "\${DEADLINE:-60}" "$WORK/summary.txt" "fake device check"
case \$1 in
  mixed)
    stage ok 10 1 0 "$WORK/ok.log" '^result:' "rerun ok" -- bash -c 'echo "result: fine"'
    stage bad 10 1 0 "$WORK/bad.log" '^verdict:' "rerun bad --seed 7" -- bash -c 'echo "verdict: 3 of 9 rows failed"; exit 3'
    stage skipped 10 1 0 "$WORK/skip.log" '' "" -- bash -c 'echo "no torch here"; exit 77'
    stage crash 10 1 0 "$WORK/crash.log" '' "rerun crash" -- bash -c 'echo "about to crash"; kill -SEGV \$\$'
    stage hang 2 1 0 "$WORK/hang.log" '' "rerun hang" -- bash -c 'echo \$\$ >"$WORK/hang.pid"; echo "running: attention (bf16)"; exec sleep 30'
    stage after 10 1 0 "$WORK/after.log" '' "" -- bash -c 'echo "still runs after the hang"'
    ;;
  passing)
    stage one 10 1 0 "$WORK/one.log" '' "" -- true
    stage two 10 1 0 "$WORK/two.log" '' "" -- bash -c 'exit 77'
    ;;
  squeeze)
    stage long 30 1 5 "$WORK/long.log" '' "" -- bash -c 'sleep 30'
    stage late 10 8 0 "$WORK/late.log" '' "rerun late" -- true
    ;;
  optional)
    STAGES_OPTIONAL=" extra "
    stage first 10 1 0 "$WORK/first.log" '' "" -- true
    stage extra 10 100 0 "$WORK/extra.log" '' "rerun extra" -- true
    ;;
  term)
    stage slow 30 1 0 "$WORK/slow.log" '' "rerun slow" -- bash -c 'echo \$\$ >"$WORK/slow.pid"; echo "started"; exec sleep 30'
    ;;
esac
EOF
chmod +x "$WORK/check.sh"

# 1. pass, fail, skip, crash, hang: one row each; the stage after the hang still runs.
start=$(date +%s)
"$WORK/check.sh" mixed >"$WORK/out.txt" 2>&1
status=$?
((status == 1)) || fail "mixed: exit $status, expected 1"
expect_line "$WORK/out.txt" '^ok +PASS .*result: fine' "mixed: the passing stage's row"
expect_line "$WORK/out.txt" '^bad +FAIL .*exit 3: verdict: 3 of 9 rows failed' "mixed: the failing stage's row"
expect_line "$WORK/out.txt" '^ +rerun: rerun bad --seed 7' "mixed: the failing stage's rerun line"
expect_line "$WORK/out.txt" '^skipped +SKIP .*no torch here' "mixed: the skipped stage's row"
expect_line "$WORK/out.txt" '^crash +CRASH .*killed by SIGSEGV \(exit 139\)' "mixed: the crash's row"
expect_line "$WORK/out.txt" '^hang +TIMEOUT .*timed out after 2 s during "attention \(bf16\)"' "mixed: the hang's row"
expect_line "$WORK/out.txt" '^after +PASS' "mixed: the stage after the hang"
expect_line "$WORK/summary.txt" '^hang +TIMEOUT' "mixed: the summary file"
grep -q 'rerun: rerun ok' "$WORK/out.txt" && fail "mixed: a rerun line for a passing stage"
(($(date +%s) - start < 20)) || fail "mixed: the 2 s hang was not stopped at its cap"
still_running() {  # pid file: the stage's process must be gone (killed here if it is not)
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  kill -KILL "$pid"
}
still_running "$WORK/hang.pid" && fail "mixed: the hung stage's process outlived its cap"

# 2. everything passes or skips: exit 0.
"$WORK/check.sh" passing >"$WORK/out.txt" 2>&1
status=$?
((status == 0)) || { fail "passing: exit $status, expected 0"; cat "$WORK/out.txt"; }
expect_line "$WORK/out.txt" 'every stage passed or was skipped' "passing: the closing line"

# 3. the deadline: the first stage is capped to leave the second its reserve; a stage that cannot
#    get its minimum is NOT RUN, which fails the check.
DEADLINE=8 "$WORK/check.sh" squeeze >"$WORK/out.txt" 2>&1
status=$?
((status == 1)) || fail "squeeze: exit $status, expected 1"
expect_line "$WORK/out.txt" '^long +TIMEOUT +[0-9]+ +[1-3] ' "squeeze: the first stage's cap (8 s - 5 s reserve)"
expect_line "$WORK/out.txt" '^late +NOT RUN .*needs 8 s' "squeeze: the starved stage"
expect_line "$WORK/out.txt" '^ +rerun: rerun late' "squeeze: the starved stage's rerun line"

# 3b. an optional stage left without time is NOT RUN but does not fail the check.
DEADLINE=20 "$WORK/check.sh" optional >"$WORK/out.txt" 2>&1
status=$?
((status == 0)) || { fail "optional: exit $status, expected 0"; cat "$WORK/out.txt"; }
expect_line "$WORK/out.txt" '^extra +NOT RUN .*needs 100 s' "optional: the optional stage's row"

# 4. SIGTERM during a stage: the stage is stopped, marked INTERRUPTED, the summary still printed.
"$WORK/check.sh" term >"$WORK/out.txt" 2>&1 &
pid=$!
for _ in $(seq 50); do grep -qx started "$WORK/slow.log" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$pid"
start=$(date +%s)
wait "$pid"
status=$?
((status != 0)) || fail "term: exit 0 after SIGTERM"
(($(date +%s) - start < 10)) || fail "term: the stopped check took too long to summarize"
expect_line "$WORK/out.txt" '^slow +INTERRUPTED .*stopped \(SIGTERM\).*started' "term: the interrupted row"
expect_line "$WORK/out.txt" 'device check summary' "term: the summary"
still_running "$WORK/slow.pid" && fail "term: the stage's process outlived the check"

if ((failures)); then
  echo "device_stages_test: $failures failure(s)"
  exit 1
fi
echo "device_stages_test: all scenarios passed (pass, fail, skip, crash, hang, deadline, optional, SIGTERM)"
