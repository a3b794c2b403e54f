#!/usr/bin/env bash
# `make test`'s test step: every ctest entry, then scripts/test_summary.py's closing lines (skips
# with their reasons, failures, and "tests: N passed, N failed, N skipped"). Exits non-zero when
# any test failed or could not run.
#   scripts/run_tests.sh BUILD_DIR JOBS [--offline]
set -uo pipefail
build=$1 jobs=$2
shift 2
report=ctest-junit.xml  # ctest writes it relative to the build directory
rm -f "$build/$report"
ctest --test-dir "$build" --output-on-failure -j "$jobs" --output-junit "$report"
status=$?
python3 "$(dirname "$0")/test_summary.py" "$build/$report" "$@"
summary=$?
exit $(( status != 0 ? status : summary ))
