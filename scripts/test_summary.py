#!/usr/bin/env python3
"""The closing lines of `make test`, from ctest's JUnit report (ctest --output-junit).

Prints each skipped test under its reason (the test's "SKIPPED: ..." line), each failed or not-run
test, then one line "tests: N passed, N failed, N skipped". A test ctest could not run (missing
executable, failed fixture) counts as failed, never as skipped. With --offline, says loudly that
the parity tests against the official tools did not run.

  test_summary.py JUNIT_XML [--offline]
"""
import sys
import xml.etree.ElementTree as ET


def skip_reason(case):
    out = case.findtext("system-out") or ""
    for line in out.splitlines():
        if line.startswith("SKIPPED:"):
            return line[len("SKIPPED:"):].strip()
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    return lines[-1] if lines else "no reason printed"


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    offline = "--offline" in sys.argv[2:]
    try:
        cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
    except (OSError, ET.ParseError) as e:
        print(f"tests: no ctest report ({e}): 0 passed, 1 failed")
        return 1
    passed, failed, skipped = [], [], {}
    for case in cases:
        name, status = case.get("name"), case.get("status")
        skip = case.find("skipped")
        if status == "run":
            passed.append(name)
        elif status == "disabled":
            skipped.setdefault("disabled in its CMakeLists", []).append(name)
        elif status == "notrun" and skip is not None and skip.get("message", "").startswith("SKIP_"):
            skipped.setdefault(skip_reason(case), []).append(name)
        else:
            why = skip.get("message") if skip is not None else "failed"
            failed.append(f"{name} ({why or 'failed'})")
    n_skipped = sum(len(v) for v in skipped.values())
    for reason, names in sorted(skipped.items(), key=lambda kv: -len(kv[1])):
        print(f"skipped ({len(names)}): {reason}")
        for name in names:
            print(f"    {name}")
    for name in failed:
        print(f"FAILED: {name}")
    if offline:
        parity = [n for reason, names in skipped.items() if "MLBERT_PYTHON" in reason for n in names]
        bar = "!" * 78
        print(bar)
        print(f"OFFLINE: {len(parity)} parity tests against the official tools and reference")
        print("implementations (mlperf_logging, HF tokenizers, create_pretraining_data, TensorFlow,")
        print("PyTorch) did NOT run. Run `make test` on a machine that reaches PyPI to run them.")
        print(bar)
    print(f"tests: {len(passed)} passed, {len(failed)} failed, {n_skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
