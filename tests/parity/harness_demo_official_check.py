#!/usr/bin/env python3
"""The demo's result logs under the official MLPerf compliance checker (the pinned mlperf-logging).

Usage: harness_demo_official_check.py RESULT_DIR SYSTEM_JSON

RESULT_DIR is where `mlbert demo` wrote result_*.txt (the harness_demo test runs first, as a
CTest fixture). Every log must get the official checker's SUCCESS under the system's ruleset, and
`mlbert check` (MLBERT_BIN) must give the same verdict. Exit 0 pass, 1 fail, 77 skip (no oracle).
"""
import glob
import json
import os
import subprocess
import sys
import tempfile


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 1
    result_dir, system_json = sys.argv[1], sys.argv[2]
    try:
        import mlperf_logging  # noqa: F401
    except ImportError:
        print("SKIPPED: the mlperf-logging package is not installed in", sys.executable)
        return 77
    with open(system_json) as f:
        ruleset = json.load(f)["run"]["ruleset"]
    logs = sorted(glob.glob(os.path.join(result_dir, "result_*.txt")))
    if not logs:
        print("FAIL: no result logs in", result_dir, "(did the harness_demo test run?)")
        return 1
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for log in logs:
            official = subprocess.run(
                [sys.executable, "-m", "mlperf_logging.compliance_checker", "--usage", "training",
                 "--ruleset", ruleset, "--log_output", os.path.join(tmp, "checker.log"), log],
                capture_output=True, text=True, cwd=tmp)
            official_ok = official.returncode == 0 and "SUCCESS" in official.stderr + official.stdout
            ours = subprocess.run([os.environ.get("MLBERT_BIN", "mlbert"), "check", "--ruleset",
                                   ruleset, log], capture_output=True, text=True)
            ours_ok = ours.returncode == 0
            print(f"{log}: official {'SUCCESS' if official_ok else 'FAILED'}, "
                  f"mlbert check {'SUCCESS' if ours_ok else 'FAILED'}")
            if not official_ok:
                print(official.stdout + official.stderr)
            if not ours_ok:
                print(ours.stdout + ours.stderr)
            failures += (not official_ok) + (official_ok != ours_ok)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
