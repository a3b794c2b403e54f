#!/usr/bin/env python3
"""Parity of `mlbert package` with the official package_checker (mlperf_logging, pinned).

Builds BERT submission packages in a temp folder, from synthetic logs and (when ../shared is
present) from the published fixture logs, and compares the verdict of the official checker (its
check_training_package, read from the verdict line it logs) with `mlbert package`. Every package has the implementation folder mlbert additionally requires. Cases:
good closed/open packages in several rulesets, wrong result counts, one and two non-compliant
runs, repeated and missing seeds, the seed and RCP bypass flags (files and options), RCP failures,
bad system descriptions, power folders, stray files, several systems; 0.7.0 packages (no system
description, seed or RCP verdict; only the division is read) and 1.0.0 ones. Under 5.1.0 the
official checker skips results/<system>/bert (bert is not a 5.1.0 benchmark) and so passes a BERT
package having checked nothing; mlbert fails it with a [layout] error that says so: that one
difference is expected, and checked to be exactly that.

Exit 0 pass, 1 fail, 77 skip (oracle not installed).
"""
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
try:
    import official_package_verdict as official  # imports the official package_checker
except ImportError as e:
    print(f"SKIPPED: mlperf_logging is not importable: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import logging_audit_synthetic as synth  # noqa: E402

MLBERT = os.environ.get("MLBERT_BIN", "mlbert")
SHARED = os.environ.get("MLBERT_SHARED_DIR", "")
logging.disable(logging.CRITICAL)
warnings.simplefilter("ignore")
failures = []


def official_passes(org, ruleset, opts):
    """The official check_training_package's verdict, read from the line it logs."""
    try:
        lines = official.logged_lines(
            org, ruleset, opts.get("quiet", False), opts.get("werror", False),
            opts.get("rcp_bypass", False), opts.get("train_samples", False),
            opts.get("seed_bypass", False))
    except Exception:  # the official tool stops with a traceback: not a passing package
        return False
    verdicts = official.verdicts(lines)
    if len(verdicts) != 1:
        raise RuntimeError(f"the official package checker logged {verdicts} as its verdict for {org}")
    return official.passed(verdicts[0])


def mlbert_result(org, ruleset, opts):
    args = [MLBERT, "package", "--json", "--ruleset", ruleset, "--set-scaling", org]
    for key, flag in [("quiet", "--quiet"), ("werror", "--werror"), ("rcp_bypass", "--rcp-bypass"),
                      ("train_samples", "--rcp-bert-train-samples"), ("seed_bypass", "--seed-checker-bypass")]:
        if opts.get(key):
            args.append(flag)
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"mlbert package {org} exited {proc.returncode}: {proc.stderr}")
    return json.loads(proc.stdout)


NO_BERT_LAYOUT = "[layout] bert is not a benchmark of training ruleset"


def compare(what, org, ruleset, opts=None, expect=None):
    opts = opts or {}
    official_copy, ours_copy = org + ".official", org + ".mlbert"
    shutil.copytree(org, official_copy)
    shutil.copytree(org, ours_copy)
    theirs = official_passes(official_copy, ruleset, opts)
    ours = mlbert_result(ours_copy, ruleset, opts)
    errors = [f["text"] for f in ours["findings"] if f["level"] == "ERROR"]
    if opts.get("no_bert"):
        # Official: pass (bert skipped, nothing checked); mlbert: fail with that one layout error.
        if not (theirs and not ours["passed"] and len(errors) == 1 and errors[0].startswith(NO_BERT_LAYOUT)):
            failures.append(f"{what}: expected official pass and one mlbert error '{NO_BERT_LAYOUT} ...'; got "
                            f"official {theirs}, mlbert {ours['passed']} with {errors[:4]}")
    elif ours["passed"] != theirs:
        errors = [f"{f['where']}: {f['text']}" for f in ours["findings"] if f["level"] == "ERROR"]
        failures.append(f"{what}: mlbert {ours['passed']} vs official {theirs}; mlbert errors: {errors[:4]}")
    if expect is not None and theirs != expect:
        failures.append(f"{what}: the case was built to {'pass' if expect else 'fail'} but the official "
                        f"checker says {theirs} (test construction error)")
    for copy in (official_copy, ours_copy):
        shutil.rmtree(copy)


def edit(path, fn):
    with open(path, encoding="latin-1") as f:
        text = f.read()
    with open(path, "w", encoding="latin-1") as f:
        f.write(fn(text))


def synthetic_cases(root):
    n = 0

    def package(name, ruleset, division="closed", runs=None, system="sys1"):
        nonlocal n
        org = os.path.join(root, f"{n:03d}_{name}_{ruleset}", "mlbert")
        n += 1
        synth.write_package(org, system, division, ruleset, runs if runs is not None else synth.ten_good_runs(ruleset, division))
        return org

    # The official checker needs ~1 s per package: each rule gets one package, not a sweep.
    for ruleset in ["0.7.0", "2.0.0", "4.1.0", "5.0.0"]:
        compare(f"good closed {ruleset}", package("good", ruleset), ruleset, expect=True)
    # 1.0.0's RCPs interpolate to a slower mean at 4608 than later rounds' do.
    slow = [dict(r, samples_to_converge=r["samples_to_converge"] + 300_000) for r in synth.ten_good_runs("1.0.0", "closed")]
    compare("good closed 1.0.0", package("good", "1.0.0", runs=slow), "1.0.0", expect=True)
    compare("good open 4.0.0", package("good-open", "4.0.0", "open"), "4.0.0", expect=True)
    compare("good open 0.7.0", package("good-open", "0.7.0", "open"), "0.7.0", expect=True)
    compare("BERT package under 5.1.0", package("no-bert", "5.1.0", runs=synth.ten_good_runs("5.0.0", "closed")),
            "5.1.0", {"no_bert": True})

    # 0.7.0: no seed, RCP or system-description verdict; the division must still be readable.
    for ruleset, expect in [("0.7.0", True), ("1.0.0", False)]:
        same_seed = [dict(r, seed=7, ruleset=ruleset) for r in synth.ten_good_runs(ruleset, "closed")]
        compare(f"repeated seed closed {ruleset}", package("dup-seed", ruleset, runs=same_seed), ruleset,
                expect=expect)
        fast_runs = [dict(r, samples_to_converge=1_500_000) for r in synth.ten_good_runs(ruleset, "closed")]
        compare(f"RCP too fast {ruleset}", package("rcp-fast", ruleset, runs=fast_runs), ruleset, expect=expect)
        org = package("no-cooling", ruleset, runs=slow if ruleset == "1.0.0" else None)
        edit(os.path.join(org, "systems/sys1.json"),
             lambda t: json.dumps({k: v for k, v in json.loads(t).items() if k != "cooling"}))
        compare(f"system description without cooling {ruleset}", org, ruleset, expect=expect)
        org = package("no-division", ruleset, runs=slow if ruleset == "1.0.0" else None)
        edit(os.path.join(org, "systems/sys1.json"),
             lambda t: json.dumps({k: v for k, v in json.loads(t).items() if k != "division"}))
        compare(f"system description without division {ruleset}", org, ruleset, expect=False)
    below = [dict(r) for r in synth.ten_good_runs("0.7.0", "closed")]
    below[1]["final_accuracy"] = 0.713  # 0.7.0's closed target is 0.712
    below[6]["final_accuracy"] = 0.7125
    compare("two runs between 0.712 and 0.720, 0.7.0", package("target-070", "0.7.0", runs=below), "0.7.0",
            expect=True)
    compare("two runs between 0.712 and 0.720, 1.0.0",
            package("target-100", "1.0.0", runs=[dict(r, ruleset="1.0.0") for r in below]), "1.0.0", expect=False)

    rs = "4.1.0"
    good = synth.ten_good_runs(rs, "closed")
    compare("nine results", package("nine", rs, runs=good[:9]), rs, expect=False)
    org = package("eleven", rs)
    synth.write(os.path.join(org, "results/sys1/bert/result_10.txt"), synth.bert_log(**dict(good[0], seed=99)))
    compare("eleven results", org, rs, expect=False)
    org = package("stray-file", rs)
    synth.write(os.path.join(org, "results/sys1/bert/notes.md"), "stray\n")
    compare("stray file", org, rs, expect=True)

    one_bad = [dict(r) for r in good]
    one_bad[6]["final_accuracy"] = 0.65
    compare("one non-compliant run", package("one-bad", rs, runs=one_bad), rs, expect=True)
    two_bad = [dict(r) for r in one_bad]
    two_bad[8]["final_accuracy"] = 0.65
    compare("two non-compliant runs", package("two-bad", rs, runs=two_bad), rs, expect=False)
    org = package("truncated", rs)
    edit(os.path.join(org, "results/sys1/bert/result_2.txt"), lambda t: t[: len(t) // 2])
    # A line cut in half is a parse error, which the seed check rejects in the closed division.
    compare("one truncated log", org, rs, expect=False)

    dup = [dict(r) for r in good]
    dup[4]["seed"] = dup[1]["seed"]
    compare("repeated seed closed", package("dup-seed", rs, runs=dup), rs, expect=False)
    compare("repeated seed, seed bypass option", package("dup-seed-opt", rs, runs=dup), rs,
            {"seed_bypass": True}, expect=True)
    dup_other_line = [dict(r) for r in dup]
    dup_other_line[4]["seed_lineno"] = 43
    compare("repeated seed from another line", package("dup-seed-line", rs, runs=dup_other_line), rs, expect=True)
    dup_open = [dict(r, division="open") for r in dup]
    compare("repeated seed open", package("dup-seed-open", rs, "open", runs=dup_open), rs, expect=True)
    org = package("no-seed", rs)
    edit(os.path.join(org, "results/sys1/bert/result_3.txt"),
         lambda t: "".join(l for l in t.splitlines(True) if '"key": "seed"' not in l))
    compare("missing seed", org, rs, expect=False)
    org = package("string-seed", rs)
    edit(os.path.join(org, "results/sys1/bert/result_3.txt"),
         lambda t: t.replace('"key": "seed", "value": 1051', '"key": "seed", "value": "abc"'))
    compare("non-integer seed", org, rs, expect=False)
    for content, expect in [("seed-checker-bypass", True), ("seed-checker-bypass\n", False)]:
        org = package("dup-seed-params", rs, runs=dup)
        synth.write(os.path.join(org, "results/sys1/bert/package_checker_params"), content)
        compare(f"repeated seed, params file {content!r}", org, rs, expect=expect)
    org = package("dup-seed-system-params", rs, runs=dup)
    synth.write(os.path.join(org, "results/sys1/package_checker_params"), "seed-checker-bypass")
    compare("repeated seed, system-level params file", org, rs, expect=True)

    fast = [dict(r, samples_to_converge=2_000_000) for r in good]
    compare("RCP too fast", package("rcp-fast", rs, runs=fast), rs, expect=False)
    compare("RCP too fast, bypass option", package("rcp-fast-opt", rs, runs=fast), rs, {"rcp_bypass": True}, expect=True)
    org = package("rcp-fast-params", rs, runs=fast)
    synth.write(os.path.join(org, "results/sys1/bert/package_checker_params"), "rcp-bypass")
    compare("RCP too fast, params file", org, rs, expect=True)
    compare("RCP too fast, open division", package("rcp-fast-open", rs, "open",
                                                    runs=[dict(r, division="open") for r in fast]), rs, expect=True)
    scaled = [dict(r, samples_to_converge=2_770_000 + 1000 * i) for i, r in enumerate(good)]
    compare("RCP within speedup (scaling)", package("rcp-scaled", rs, runs=scaled), rs, expect=True)
    huge = [dict(r, global_batch_size=32768, samples_to_converge=6_000_000) for r in good]
    compare("RCP missing for the batch size", package("rcp-missing", rs, runs=huge), rs, expect=False)

    org = package("bad-status", rs)
    edit(os.path.join(org, "systems/sys1.json"), lambda t: t.replace("Available on-premise", "onprem"))
    compare("system status onprem under 4.1.0", org, rs, expect=False)
    org = package("missing-field", rs)
    edit(os.path.join(org, "systems/sys1.json"), lambda t: json.dumps({k: v for k, v in json.loads(t).items() if k != "cooling"}))
    compare("system description without cooling", org, rs, expect=False)
    org = package("extra-system", rs)
    synth.write(os.path.join(org, "systems/spare.json"), json.dumps(dict(synth.system_json("spare", "closed", rs), status="x")))
    compare("an invalid description of a system without results", org, rs, expect=False)
    org = package("werror-system", rs)
    edit(os.path.join(org, "systems/sys1.json"), lambda t: t.replace('"number_of_nodes": "1"', '"number_of_nodes": 1'))
    compare("integer node count (a warning)", org, rs, expect=True)

    org = package("two-systems-one-bad", rs)
    synth.write_package(org, "sys2", "closed", rs, dup)
    compare("two systems, one with a repeated seed", org, rs, expect=False)

    org = package("power-good", rs)
    for i in range(10):
        for name in ("node_0.txt", "node_1.txt", "sw_0.txt"):
            synth.write(os.path.join(org, f"results/sys1/bert/power/result_{i}/{name}"), "")
    compare("power folders", org, rs, expect=True)
    os.remove(os.path.join(org, "results/sys1/bert/power/result_2/node_1.txt"))
    compare("power: one run with a missing node file", org, rs, expect=True)
    shutil.rmtree(os.path.join(org, "results/sys1/bert/power/result_5"))
    compare("power: and one run without a folder", org, rs, expect=False)
    return n


def fixture_cases(root):
    fixtures = os.path.join(SHARED, "fixtures", "mlperf_logs")
    if not os.path.isdir(fixtures):
        print(f"note: {fixtures} absent; fixture packages not compared")
        return 0
    cases = [("../mlperf_logs_early/v0.7/NVIDIA/dgx2h_ngc20.06_pytorch", "0.7.0", {}, None),
             ("../mlperf_logs_early/v0.7/Google/tpu-v3-32-TF2.0", "0.7.0", {}, None),
             ("../mlperf_logs_early/v1.0/NVIDIA/dgxa100_ngc21.05_pytorch", "1.0.0", {}, None),
             ("../mlperf_logs_early/v1.0/NVIDIA/dgxa100_ngc21.05_pytorch", "1.0.0", {"train_samples": True}, None),
             ("../mlperf_logs_early/v1.0/Supermicro/as-2124gq-nart+", "1.0.0", {}, None),
             ("v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch", "3.0.0", {}, None),
             ("v4.0/NVIDIA/h200_ngc23.09_pytorch", "4.0.0", {}, None),
             ("v4.0/NVIDIA/h200_ngc23.09_pytorch", "4.0.0", {}, "Available on-premise"),
             ("v1.1/NVIDIA/dgxa100_n8_ngc21.09_pytorch", "1.1.0", {"train_samples": True}, None),
             ("v1.1/Graphcore/ipu-pod16-POPART-open", "1.1.0", {}, None),
             ("v2.0/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch", "2.0.0", {}, None)]
    for i, (system_path, ruleset, opts, status) in enumerate(cases):
        source = os.path.join(fixtures, system_path)
        system = os.path.basename(system_path)
        org = os.path.join(root, f"fixture_{i}", system_path.split("/")[-2])
        os.makedirs(os.path.join(org, "systems"))
        desc = json.load(open(os.path.join(source, "system.json")))
        if status:
            desc["status"] = status
        synth.write(os.path.join(org, "systems", system + ".json"), json.dumps(desc, indent=4))
        os.makedirs(os.path.join(org, "results", system, "bert"))
        for name in sorted(os.listdir(source)):
            if name.startswith("result_"):
                shutil.copyfile(os.path.join(source, name), os.path.join(org, "results", system, "bert", name))
        synth.write(os.path.join(org, "benchmarks/bert/implementations/pytorch/run_and_time.sh"), "#!/bin/bash\n")
        compare(f"fixture {system_path} {opts} status={status}", org, ruleset, opts)
    return len(cases)


def main():
    root = tempfile.mkdtemp(prefix="mlbert_package_parity_")
    try:
        n = synthetic_cases(root) + fixture_cases(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"compared {n} packages")
    if failures:
        print(f"{len(failures)} mismatches:")
        for f in failures:
            print("  " + f)
        return 1
    print("PASS: mlbert package agrees with the official package_checker")
    return 0


if __name__ == "__main__":
    sys.exit(main())
