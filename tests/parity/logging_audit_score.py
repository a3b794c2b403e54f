#!/usr/bin/env python3
"""Parity of `mlbert score` with the official result summarizer (mlperf_logging, pinned).

Scores every fixture system (mlperf_logs and mlperf_logs_early, checked against their SCORES.tsv)
and a set of synthetic and mutated result directories: compliant runs in every BERT ruleset (0.7.0
to 5.0.0) and both divisions, 5.1.0 (no BERT: no run counts), one and two failing runs, 0.7.0's
lower target, an open-division run that did not converge, too few files, a repeated run_start,
empty and truncated logs, scaling.json. The official figures come from the summarizer's own
per-directory function (_compute_strong_score_standalone, with its per-run times): the score must
be the identical float or absent in both, and every run must be counted or dropped by both, with
the identical minutes -- so "no score" agrees only when both tools dropped the same runs.

Exit 0 pass, 1 fail, 77 skip (oracle not installed).
"""
import contextlib
import io
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile

try:
    from mlperf_logging.result_summarizer import result_summarizer
except ImportError as e:
    print(f"SKIPPED: mlperf_logging is not importable: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import logging_audit_synthetic as synth  # noqa: E402

MLBERT = os.environ.get("MLBERT_BIN", "mlbert")
SHARED = os.environ.get("MLBERT_SHARED_DIR", "")
logging.disable(logging.CRITICAL)
failures = []


outcomes = {"scored": 0, "no score": 0}


def official_score(folder, ruleset):
    """(score, {result file name: minutes} of the runs the summarizer counted)."""
    with contextlib.redirect_stdout(io.StringIO()):
        counted, _, score, _, _ = result_summarizer._compute_strong_score_standalone(
            "bert", os.path.basename(folder), False, folder, "training", ruleset, return_full_scores=True)
    return score, {os.path.basename(f): minutes for f, minutes in counted.items()}


def mlbert_run(folder, ruleset):
    proc = subprocess.run([MLBERT, "score", "--json", "--ruleset", ruleset, folder], capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"mlbert score {folder} exited {proc.returncode}: {proc.stderr}")
    return json.loads(proc.stdout)[0]


def mlbert_score(folder, ruleset):
    return mlbert_run(folder, ruleset)["score"]


def compare(what, folder, ruleset):
    theirs, their_runs = official_score(folder, ruleset)
    result = mlbert_run(folder, ruleset)
    ours = result["score"]
    our_runs = {os.path.basename(r["file"]): r["minutes"] for r in result["runs"] if r["compliant"]}
    files = sorted(f for f in os.listdir(folder) if f.startswith("result_") and f.endswith(".txt"))
    if sorted(os.path.basename(r["file"]) for r in result["runs"]) != files:
        failures.append(f"{what}: mlbert scored runs {[r['file'] for r in result['runs']]}, the folder holds {files}")
    if (theirs is None) != (ours is None) or (theirs is not None and float(theirs) != ours):
        failures.append(f"{what}: mlbert {ours!r} vs official {theirs!r}")
    if their_runs != our_runs:
        failures.append(f"{what}: runs counted by mlbert {our_runs} vs official {their_runs}")
    outcomes["scored" if theirs is not None else "no score"] += 1
    return theirs


def edit(path, fn):
    with open(path, encoding="latin-1") as f:
        text = f.read()
    with open(path, "w", encoding="latin-1") as f:
        f.write(fn(text))


def synthetic_cases(root):
    n = 0

    def case(name, ruleset, runs, mutate=None):
        nonlocal n
        folder = os.path.join(root, f"{n:03d}_{name}_{ruleset}")
        n += 1
        synth.write_results(folder, runs)
        if mutate:
            mutate(folder)
        compare(f"synthetic {name} ({ruleset})", folder, ruleset)

    # The official checker takes ~0.1 s per log: every ruleset once, the mutations on two of them.
    for ruleset in ["0.7.0", "1.0.0", "1.1.0", "2.0.0", "2.1.0", "3.0.0", "3.1.0", "4.0.0", "4.1.0", "5.0.0"]:
        case("good-closed", ruleset, synth.ten_good_runs(ruleset, "closed"))
    for ruleset in ["0.7.0", "1.1.0", "5.0.0"]:
        case("good-open", ruleset, synth.ten_good_runs(ruleset, "open"))
    # 5.1.0 has no BERT: every run fails compliance, so there is no score.
    case("good-closed-5.0.0-logs", "5.1.0", synth.ten_good_runs("5.0.0", "closed"))
    # 0.7.0's closed target is 0.712: a run at 0.715 counts there, not in 1.0.0.
    for ruleset in ["0.7.0", "1.0.0"]:
        runs = synth.ten_good_runs(ruleset, "closed")
        low = [dict(r) for r in runs]
        low[3]["final_accuracy"] = 0.715
        case("one-at-0.715", ruleset, low)
        lower = [dict(r) for r in low]
        lower[8]["final_accuracy"] = 0.705
        case("and-one-at-0.705", ruleset, lower)
    for ruleset in ["2.1.0", "4.1.0"]:
        runs = synth.ten_good_runs(ruleset, "closed")
        one = [dict(r) for r in runs]
        one[2]["final_accuracy"] = 0.70
        case("one-below-target", ruleset, one)
        two = [dict(r) for r in one]
        two[5]["final_accuracy"] = 0.5
        case("two-below-target", ruleset, two)
        slowest = [dict(r) for r in runs]
        slowest[3]["status"] = "aborted"
        slowest[3]["final_accuracy"] = 0.6
        case("closed-aborted", ruleset, slowest)
        open_runs = synth.ten_good_runs(ruleset, "open")
        open_runs[4].update(status="aborted", final_accuracy=0.6, run_minutes=3.0)
        case("open-aborted-counts", ruleset, open_runs)
        if ruleset != "4.1.0":
            continue
        case("five-files", ruleset, runs[:5])
        case("three-files", ruleset, runs[:3])
        case("two-files", ruleset, runs[:2])
        case("one-file", ruleset, runs[:1])
        case("two-files-one-bad", ruleset, [runs[0], dict(runs[1], final_accuracy=0.1)])
        case("scaling", ruleset, runs,
             lambda f: synth.write(os.path.join(f, "scaling.json"), json.dumps({"scaling_factor": 1.0734})))
        case("empty-log", ruleset, runs, lambda f: synth.write(os.path.join(f, "result_7.txt"), ""))
        case("truncated-logs", ruleset, runs, lambda f: [
            edit(os.path.join(f, name), lambda t: t[: len(t) * 2 // 3]) for name in ("result_1.txt", "result_8.txt")])
        # A second run_start with the same value: a warning for the checker; the summarizer then
        # times from the later one.
        case("repeated-run-start", ruleset, runs, lambda f: edit(
            os.path.join(f, "result_0.txt"),
            lambda t: t.replace('"key": "block_stop"',
                                '"key": "run_start", "value": null, "metadata": {"file": "x.py", "lineno": 1}}\n'
                                ':::MLLOG {"namespace": "", "time_ms": 1700000300000, "event_type": "INTERVAL_END", '
                                '"key": "block_stop"', 1)))
        case("noise-and-crlf", ruleset, runs, lambda f: edit(
            os.path.join(f, "result_9.txt"), lambda t: t.replace("\n", " trailing\r\n").replace(":::MLLOG", "[1,0]<stdout>: :::MLLOG")))
    return n


def fixture_cases(root):
    fixtures = os.path.join(SHARED, "fixtures", "mlperf_logs")
    if not os.path.isdir(fixtures):
        print(f"note: {fixtures} absent; fixture systems not compared")
        return 0
    n = 0
    for folder_name in ("mlperf_logs", "mlperf_logs_early"):
        top = os.path.join(SHARED, "fixtures", folder_name)
        with open(os.path.join(top, "SCORES.tsv")) as f:
            rows = [line.rstrip("\n").split("\t") for line in f if line.strip() and not line.startswith("#")]
        for system, expected in rows:
            ruleset = system.split("/")[0][1:] + ".0"
            folder = os.path.join(top, system)
            theirs = compare(f"fixture {system}", folder, ruleset)
            n += 1
            ours = mlbert_score(folder, ruleset)
            if (expected == "NONE") != (ours is None) or (ours is not None and repr(ours) != expected):
                failures.append(f"fixture {system}: mlbert {ours!r} vs SCORES.tsv {expected}")
            if (expected == "NONE") != (theirs is None):
                failures.append(f"fixture {system}: the installed summarizer gives {theirs!r}, SCORES.tsv {expected}")
    # Mutated copies of a real system: lose one more run, then add scaling.
    base = os.path.join(fixtures, "v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch")
    copy = os.path.join(root, "v3.0_mutated")
    shutil.copytree(base, copy)
    for name in os.listdir(copy):
        os.chmod(os.path.join(copy, name), 0o644)
    compare("fixture v3.0 copy", copy, "3.0.0")
    edit(os.path.join(copy, "result_6.txt"), lambda t: t.replace('"status": "success"', '"status": "aborted"'))
    compare("fixture v3.0 with a second failing run", copy, "3.0.0")
    os.remove(os.path.join(copy, "result_4.txt"))
    compare("fixture v3.0 with the failing run removed", copy, "3.0.0")
    synth.write(os.path.join(copy, "scaling.json"), json.dumps({"scaling_factor": 1.02}))
    compare("fixture v3.0 scaled", copy, "3.0.0")
    return n + 4


def main():
    root = tempfile.mkdtemp(prefix="mlbert_score_parity_")
    try:
        n = synthetic_cases(root) + fixture_cases(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"compared {n} result directories: {outcomes['scored']} with a score, {outcomes['no score']} without")
    if outcomes["scored"] < 10 or outcomes["no score"] < 5:
        failures.append(f"one-sided corpus: {outcomes}")
    if failures:
        print(f"{len(failures)} mismatches:")
        for f in failures:
            print("  " + f)
        return 1
    print("PASS: mlbert score agrees with the official result summarizer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
