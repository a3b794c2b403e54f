#!/bin/sh
# `mlbert report` pages of the fixture logs in headless Chromium (report_browser.py checks them).
#   report_browser.sh MLBERT FIXTURES WORK_DIR single|multi|hostile|wide|compare
# single: one 10-run system with every plot; multi: four systems side by side (closed and open,
# compliant and failing, with and without throughput or eval intervals); hostile: a log and a
# system description full of markup; wide: three systems with long unbroken names, three columns
# of 400 px whose tables (hyperparameters, seeds, SHA-256s, descriptions) must wrap, not clip;
# compare: a reproduction beside the published result (--compare) with its comparison section.
# Exit 77 (skipped) without chromium or python3.
# docs/report.png is the single mode's screenshot (WORK_DIR/report_single.png).
set -u
mlbert=$1 fixtures=$2 work=$3 mode=$4
command -v chromium >/dev/null 2>&1 || { echo "SKIPPED: chromium is not installed (scripts/deps.sh install)"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIPPED: python3 is not installed"; exit 77; }
check="python3 $(dirname "$0")/report_browser.py chromium"
h200=$fixtures/v4.0/NVIDIA/h200_ngc23.09_pytorch
all="accuracy,accuracy-near-target,time-to-train,rcp,timeline"
mkdir -p "$work" || exit 1
page=$work/report_$mode.html
case $mode in
  single)
    "$mlbert" report "$h200" --out "$page" >/dev/null 2>&1 || { echo "FAIL: mlbert report exited $?"; exit 1; }
    # The top of the page: what docs/report.png shows.
    exec $check "$page" --systems 1 --screenshot "$work/report_single.png" --clip-height 1284 \
      --require "0:$all,throughput" ;;
  multi)
    "$mlbert" report "$h200" "$fixtures/v2.0/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch" \
      "$fixtures/v1.1/NVIDIA/dgxa100_n8_ngc21.09_pytorch" "$fixtures/v1.1/Graphcore/ipu-pod16-POPART-open" \
      --out "$page" >/dev/null 2>&1 || { echo "FAIL: mlbert report exited $?"; exit 1; }
    exec $check "$page" --systems 4 --screenshot "$work/report_multi.png" \
      --require "0:$all,throughput" --require "1:$all" --require "2:$all" --require "3:$all" ;;
  wide)
    rm -rf "$work/wide" && mkdir -p "$work/wide/v4.0/Org" "$work/wide/v3.0/Org" "$work/wide/v1.1/Org" || exit 1
    long=a_system_name_far_longer_than_any_column_without_a_single_place_to_break_it
    ln -s "$h200" "$work/wide/v4.0/Org/${long}_h200"
    ln -s "$fixtures/v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch" "$work/wide/v3.0/Org/${long}_h100"
    ln -s "$fixtures/v1.1/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch" "$work/wide/v1.1/Org/${long}_samsung"
    "$mlbert" report "$work/wide/v4.0/Org/${long}_h200" "$work/wide/v3.0/Org/${long}_h100" \
      "$work/wide/v1.1/Org/${long}_samsung" --out "$page" >/dev/null 2>&1 \
      || { echo "FAIL: mlbert report exited $?"; exit 1; }
    exec $check "$page" --systems 3 --screenshot "$work/report_wide.png" ;;
  compare)
    "$mlbert" report "$h200" --compare "$fixtures/v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch" \
      --ruleset 4.0.0 --out "$page" >/dev/null 2>&1 || { echo "FAIL: mlbert report exited $?"; exit 1; }
    grep -q 'id="comparison"' "$page" || { echo "FAIL: no comparison section in $page"; exit 1; }
    exec $check "$page" --systems 2 --screenshot "$work/report_compare.png" \
      --require "0:$all,throughput" --require "1:accuracy,time-to-train,rcp,timeline" ;;
  hostile)
    dir=$work/hostile/v4.1/org/sys
    rm -rf "$work/hostile" && mkdir -p "$dir" || exit 1
    "$mlbert" check --print-example --ruleset 4.1.0 > "$dir/result_0.txt" || exit 1
    # Markup in a value (the checker quotes the record), in a key and in the system description.
    cat >> "$dir/result_0.txt" <<'LOG'
:::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "submission_benchmark", "value": "</code><script>console.log('injected')</script><img src=x onerror=console.log(1)>", "metadata": {"file": "<style>body{display:none}</style>", "lineno": 1}}
:::MLLOG {"namespace": "", "time_ms": 2, "event_type": "POINT_IN_TIME", "key": "<iframe src=//example.com>", "value": 1, "metadata": {}}
LOG
    printf '{"submitter": "<script>console.log(2)</script>", "system_name": "<img src=x onerror=console.log(3)>", "framework": "</td><link rel=stylesheet href=//example.com/x.css>"}\n' > "$dir/system.json"
    "$mlbert" report "$dir" --out "$page" >/dev/null 2>&1 || { echo "FAIL: mlbert report exited $?"; exit 1; }
    exec $check "$page" --systems 1 --screenshot "$work/report_hostile.png" ;;
esac
echo "usage: report_browser.sh MLBERT FIXTURES WORK_DIR single|multi|hostile|wide|compare"; exit 2
