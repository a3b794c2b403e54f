#!/usr/bin/env python3
"""Parity of `mlbert system-check` with the official system_desc_checker (mlperf_logging, pinned).

Every fixture system description (mlperf_logs, mlperf_logs_early, systems) and a synthetic one
under every training ruleset the official tools know (0.6.0 to 6.1.0), then mutated copies: each
required field removed, status values old and new, wrong case, non-string values, extra fields,
malformed JSON and non-object files. The official checker raising a Python exception counts as an
invalid verdict only for the files built to make it raise (malformed JSON, null, a non-string
value in a field it joins into its CSV row); an exception on
any other file, or a ruleset whose verdicts are all alike, fails the comparison instead of agreeing.

Exit 0 pass, 1 fail, 77 skip (oracle not installed).
"""
import glob
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile

try:
    from mlperf_logging.system_desc_checker import system_desc_checker
except ImportError as e:
    print(f"SKIPPED: mlperf_logging is not importable: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import logging_audit_synthetic as synth  # noqa: E402

MLBERT = os.environ.get("MLBERT_BIN", "mlbert")
SHARED = os.environ.get("MLBERT_SHARED_DIR", "")
RULESETS = ["0.6.0", "0.7.0", "1.0.0", "1.1.0", "2.0.0", "2.1.0", "3.0.0", "3.1.0", "4.0.0", "4.1.0", "5.0.0",
            "5.1.0", "6.0.0", "6.1.0"]
# The variants that stop the official checker with an exception: JSONDecodeError, TypeError on None,
# and str.join over a CSV field that is not a string.
RAISING = {"truncated", "empty", "null", "numbers_not_strings", "framework_null"}
logging.disable(logging.CRITICAL)
failures = []


def official_valid(path, ruleset):
    """(valid, the exception the official checker raised or None)."""
    try:
        return system_desc_checker.check_system_desc(path, "training", ruleset)[0], None
    except Exception as e:  # json.JSONDecodeError and friends: the official tool stops, i.e. not valid
        return False, e


def mlbert_valid(paths, ruleset):
    proc = subprocess.run([MLBERT, "system-check", "--json", "--ruleset", ruleset, *paths],
                          capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"mlbert system-check exited {proc.returncode}: {proc.stderr}")
    return {r["file"]: r["valid"] for r in json.loads(proc.stdout)}


def main():
    root = tempfile.mkdtemp(prefix="mlbert_system_parity_")
    try:
        sources = []
        if os.path.isdir(os.path.join(SHARED, "fixtures")):
            sources += sorted(glob.glob(os.path.join(SHARED, "fixtures", "systems", "*.json")))
            for logs in ("mlperf_logs", "mlperf_logs_early"):
                sources += sorted(glob.glob(os.path.join(SHARED, "fixtures", logs, "*", "*", "*", "system.json")))
        else:
            print("note: ../shared fixtures absent; synthetic descriptions only")
        synthetic = os.path.join(root, "synthetic.json")
        synth.write(synthetic, json.dumps(synth.system_json("sys", "closed", "4.1.0"), indent=4))
        sources.append(synthetic)

        files = list(sources)
        base = json.load(open(synthetic))
        n = 0

        raising = set()

        def variant(name, content):
            nonlocal n
            path = os.path.join(root, f"{n:03d}_{name}.json")
            n += 1
            if name in RAISING:
                raising.add(path)
            synth.write(path, content if isinstance(content, str) else json.dumps(content, indent=2))
            files.append(path)

        for field in list(base):
            variant(f"without_{field}", {k: v for k, v in base.items() if k != field})
        for status in ["Available on-premise", "Available cloud", "Research, Development, or Internal (RDI)",
                       "Preview", "available on-premise", "onprem", "cloud", "research", "preview", "", 4, None]:
            variant(f"status_{status}", dict(base, status=status))
        variant("numbers_not_strings", dict(base, number_of_nodes=1, accelerators_per_node=8))
        variant("number_of_nodes_int", dict(base, number_of_nodes=1))
        variant("framework_null", dict(base, framework=None))
        variant("cooling_number", dict(base, cooling=0))
        variant("division_Closed", dict(base, division="Closed"))
        variant("software_as_text", dict(base, other_software_stack="CUDA 12.2"))
        variant("extra_fields", dict(base, private_id="x", power_notes="none"))
        variant("missing_two_and_bad_status", {k: v for k, v in dict(base, status="onprem").items()
                                                if k not in ("cooling", "framework")})
        variant("truncated", json.dumps(base)[:200])
        variant("empty", "")
        variant("list", "[1, 2, 3]")
        variant("null", "null")

        compared = 0
        for ruleset in RULESETS:
            ours = mlbert_valid(files, ruleset)
            verdicts = set()
            for path in files:
                theirs, raised = official_valid(path, ruleset)
                compared += 1
                if (raised is not None) != (path in raising):
                    failures.append(f"{ruleset} {os.path.basename(path)}: the official checker "
                                    f"{'raised ' + repr(raised) if raised else 'did not raise'}, "
                                    f"which the case was not built for: nothing to compare")
                    continue
                verdicts.add(theirs)
                if ours.get(path) != theirs:
                    failures.append(f"{ruleset} {os.path.basename(path)}: mlbert {ours.get(path)} vs official {theirs}")
            if verdicts != {True, False}:
                failures.append(f"{ruleset}: the official verdicts are all {verdicts}: a one-sided comparison")
        print(f"compared {compared} (file, ruleset) verdicts over {len(files)} files")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if failures:
        print(f"{len(failures)} mismatches:")
        for f in failures[:60]:
            print("  " + f)
        return 1
    print("PASS: mlbert system-check agrees with the official system_desc_checker")
    return 0


if __name__ == "__main__":
    sys.exit(main())
