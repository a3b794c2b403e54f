#!/usr/bin/env bash
# `mlbert report REPRODUCED --compare PUBLISHED`: one page with the comparison section (verdict,
# scores, runs, phase times, differing fields) and both folders side by side; a --compare folder
# that cannot be compared is one error line, exit 2, and no page.
#   report_compare.sh MLBERT SHARED_DIR WORK_DIR
set -u
mlbert="$1"
logs="$2/fixtures/mlperf_logs"
work="$3"
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"
mkdir -p "$work/empty" || fail "cannot create $work"
h200="$logs/v4.0/NVIDIA/h200_ngc23.09_pytorch"
samsung20="$logs/v2.0/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch"
samsung11="$logs/v1.1/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch"

"$mlbert" report "$h200" --compare "$h200" --out "$work/same.html" >"$work/same.out" 2>&1 ||
  fail "report --compare of a folder with itself: $(cat "$work/same.out")"
page="$work/same.html"
grep -q 'id="comparison"' "$page" || fail "no comparison section in $page"
grep -q '<span class="badge pass">reproduced</span>' "$page" || fail "no 'reproduced' verdict in $page"
grep -q '<td>init</td><td>41.2 s</td><td>41.2 s</td><td>1.000</td>' "$page" ||
  fail "the init phase's medians are not in $page"
grep -q '<td>training</td><td>299.2 s</td><td>299.2 s</td><td>1.000</td>' "$page" ||
  fail "the training phase's medians are not in $page"
[[ $(grep -c 'data-system="1"' "$page") -gt 0 ]] || fail "the published folder is not beside the reproduced one"

"$mlbert" report "$samsung20" --compare "$samsung11" --ruleset 2.0.0 --out "$work/faster.html" \
  >"$work/faster.out" 2>&1 || fail "report --compare of two rounds: $(cat "$work/faster.out")"
grep -Eq '<span class="badge fail">not reproduced: time to train 0[.][0-9]+x the published' \
  "$work/faster.html" || fail "the failing verdict is not in $work/faster.html"
grep -Eq '<td>score</td><td>[0-9.]+ min</td><td>[0-9.]+ min</td><td>0[.][0-9]{3}</td>' \
  "$work/faster.html" || fail "the scores and their ratio are not in $work/faster.html"

"$mlbert" report "$h200" --compare "$work/empty" --out "$work/bad.html" >"$work/bad.out" 2>&1
status=$?
[[ $status == 2 ]] || fail "a --compare folder without logs exited $status, not 2"
[[ $(grep -c '' "$work/bad.out") == 1 ]] || fail "not one error line: $(cat "$work/bad.out")"
grep -q "$work/empty" "$work/bad.out" || fail "the error does not name the folder: $(cat "$work/bad.out")"
[[ ! -e "$work/bad.html" ]] || fail "a page was written for a folder that cannot be compared"
echo "report --compare: 3 cases passed"
