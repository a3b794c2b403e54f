#!/usr/bin/env python3
"""scripts/audit_round.py on the fixture rounds of ../shared (mlperf_logs and mlperf_logs_early):
every log's compliance verdict and failed rules, every folder's score and RCP verdict, `mlbert`
against the official tools. The published rounds it was also run on are in BENCHMARKS.md.

Exit 0 pass, 1 a difference (or the script failed), 77 skip (no ../shared fixtures, or the official
package is not importable).
"""
import os
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parents[2]
shared = pathlib.Path(os.environ.get("MLBERT_SHARED_DIR", ""), "fixtures")
rounds = sorted(shared.glob("mlperf_logs*/v*.*")) if os.environ.get("MLBERT_SHARED_DIR") else []
if not rounds:
    print(f"SKIPPED: no fixture rounds under {shared} (MLBERT_SHARED_DIR unset or ../shared absent)")
    sys.exit(77)
proc = subprocess.run([sys.executable, str(root / "scripts/audit_round.py"), "--mlbert",
                       os.environ.get("MLBERT_BIN", "mlbert"), *map(str, rounds)],
                      capture_output=True, text=True)
print(proc.stdout, proc.stderr, sep="", end="")
if proc.returncode == 77:
    sys.exit(77)
summaries = re.findall(r"^(\S+) \([\d.]+\): (\d+) logs .*: (\d+) difference", proc.stdout, re.M)
if proc.returncode != 0 or len(summaries) != len(rounds):
    print(f"FAILED: audit_round.py exited {proc.returncode} with {len(summaries)} of {len(rounds)} "
          "round summaries")
    sys.exit(1)
if sum(int(logs) for _, logs, _ in summaries) < 50:
    print("FAILED: under 50 fixture logs compared: the comparison would prove little")
    sys.exit(1)
print(f"PASS: {len(rounds)} fixture rounds, mlbert and the official tools agree")
