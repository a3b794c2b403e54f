#!/usr/bin/env python3
"""Parity of `mlbert rcp` with the official mlperf_logging rcp_checker (the pinned PyPI package).

1. Every BERT RCP of every ruleset: olympic mean, stdev, minimum acceptable mean, max speedup and
   whether pruning keeps it.
2. A grid of batch sizes from 8 to 20,000 per ruleset: which reference a submission at that size
   meets (exact, interpolated, smallest, none) and that reference's statistics; mlbert must answer
   for every size of the grid.
3. Verdicts on result directories: the fixture systems (mlperf_logs and mlperf_logs_early, if
   ../shared is present) and synthetic directories built here for every branch of the check (pass,
   scaled pass, fail, interpolation, missing, smaller than every RCP, non-converged runs, bypass,
   full pass, train_samples mode).
4. 0.7.0, the BERT round before RCPs: the official checker refuses it, mlbert says it has none.

Exit 0 pass, 1 fail, 77 skip (oracle not installed).
"""
import json
import logging
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    from mlperf_logging.rcp_checker import rcp_checker
except ImportError as e:  # the oracle is not installed in this interpreter
    print(f"SKIPPED: mlperf_logging is not importable: {e}")
    sys.exit(77)

MLBERT = os.environ.get("MLBERT_BIN", "mlbert")
SHARED = os.environ.get("MLBERT_SHARED_DIR", "")
RULESETS = ["1.0.0", "1.1.0", "2.0.0", "2.1.0", "3.0.0", "3.1.0", "4.0.0", "4.1.0", "5.0.0", "5.1.0"]
MIN_MEAN_RTOL = 1e-4  # the acceptance bound; we also report the worst observed
logging.disable(logging.CRITICAL)

failures = []
worst = {"min_mean": 0.0, "mean": 0.0, "stdev": 0.0}


def rel(a, b):
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


def expect_close(what, field, ours, theirs, rtol):
    r = rel(ours, theirs)
    if field in worst:
        worst[field] = max(worst[field], r)
    if not r <= rtol:
        failures.append(f"{what}: {field} mlbert {ours!r} vs official {theirs!r} (rel {r:.3g})")


def mlbert_json(args):
    proc = subprocess.run([MLBERT, "rcp", "--json", *args], capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"mlbert rcp {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return json.loads(proc.stdout)


def compare_point(what, ours, theirs):
    expect_close(what, "mean", ours["mean"], float(theirs["RCP Mean"]), 1e-12)
    expect_close(what, "stdev", ours["stdev"], float(theirs["RCP Stdev"]), 1e-9)
    expect_close(what, "min_mean", ours["min_mean"], float(theirs["Min Epochs"]), MIN_MEAN_RTOL)
    expect_close(what, "max_speedup", ours["max_speedup"], float(theirs["Max Speedup"]), MIN_MEAN_RTOL)


def official_lookup(checker, bs):
    """Which reference check_directory would judge a submission at `bs` against."""
    record = checker._find_rcp(bs, "pruned_rcps")
    if record is not None:
        return "exact", record
    low = checker._find_top_min_rcp(bs, "pruned_rcps")
    high = checker._find_bottom_max_rcp(bs, "pruned_rcps")
    if low is not None and high is not None:
        return "interpolated", checker._create_interp_rcp(bs, low, high)[1]
    if high is not None:
        return "smallest", checker._find_min_rcp("pruned_rcps")
    return "none", None


def check_tables():
    grid = list(range(8, 20001, 56)) + [768, 1024, 2048, 5120, 6000, 10000, 14000, 16385]
    for ruleset in RULESETS:
        checker = rcp_checker.RCP_Checker("training", ruleset, "bert", False)
        out = mlbert_json(["--ruleset", ruleset, "--table"] +
                          [a for bs in grid for a in ("--batch-size", str(bs))])
        ours = {p["name"]: p for p in out["points"]}
        if set(ours) != set(checker.rcp_data):
            failures.append(f"{ruleset}: RCP names differ: {sorted(ours)} vs {sorted(checker.rcp_data)}")
            continue
        for name, record in checker.rcp_data.items():
            what = f"{ruleset} {name}"
            compare_point(what, ours[name], record)
            if ours[name]["batch_size"] != record["BS"]:
                failures.append(f"{what}: batch size {ours[name]['batch_size']} vs {record['BS']}")
            if ours[name]["pruned"] != (name not in checker.pruned_rcp_data):
                failures.append(f"{what}: pruned {ours[name]['pruned']} vs official "
                                f"{name not in checker.pruned_rcp_data}")
        answered = [int(lookup["batch_size"]) for lookup in out["lookups"]]
        if answered != grid:
            missing = sorted(set(grid) - set(answered))
            failures.append(f"{ruleset}: mlbert answered {len(answered)} of the {len(grid)} grid batch sizes "
                            f"(missing {missing[:10]}), or in another order")
        for lookup in out["lookups"]:
            bs = int(lookup["batch_size"])
            how, record = official_lookup(checker, bs)
            what = f"{ruleset} batch size {bs}"
            if lookup["how"] != how:
                failures.append(f"{what}: mlbert finds '{lookup['how']}', official '{how}'")
            elif record is not None:
                compare_point(what, lookup["point"], record)


# ---- synthetic result directories ----------------------------------------------------------------

def mllog(key, value, time_ms, **metadata):
    meta = {"file": "run_pretraining.py", "lineno": 100}
    meta.update(metadata)
    return ":::MLLOG " + json.dumps({"namespace": "", "time_ms": time_ms, "event_type": "POINT_IN_TIME",
                                     "key": key, "value": value, "metadata": meta}) + "\n"


def write_run(path, bs, samples, status="success", train_samples=None):
    t = 1_600_000_000_000
    lines = ["some launcher noise\n",
             mllog("submission_benchmark", "bert", t),
             mllog("global_batch_size", bs, t + 1),
             mllog("eval_accuracy", 0.5, t + 2, epoch_num=samples / 2),
             mllog("eval_accuracy", 0.721, t + 3, epoch_num=samples)]
    if train_samples is not None:
        lines.append(mllog("train_samples", train_samples, t + 4))
    lines.append(mllog("run_stop", None, t + 5, status=status))
    with open(path, "w") as f:
        f.writelines(lines)


def make_dir(root, name, bs, samples, statuses=None, train_samples=None):
    d = os.path.join(root, name)
    os.makedirs(d)
    for i, s in enumerate(samples):
        status = statuses[i] if statuses else "success"
        write_run(os.path.join(d, f"result_{i}.txt"), bs, s, status,
                  None if train_samples is None else train_samples[i])
    return d


def spread(center, width=0.02, n=10):
    return [round(center * (1 + width * (i - (n - 1) / 2) / n)) for i in range(n)]


def open_division(d):
    """True when every log of `d` says submission_division "open"."""
    divisions = set()
    for name in os.listdir(d):
        if name.startswith("result_"):
            with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                found = re.search(r'"key": "submission_division", "value": "(\w+)"', f.read())
            divisions.add(found.group(1) if found else None)
    return divisions == {"open"}


def compare_dir(what, d, ruleset, bypass=False, full=False, train_samples=False):
    # The official checker writes scaling.json into the directory it checks: give each tool its own copy.
    official_dir, ours_dir = d + ".official", d + ".mlbert"
    shutil.copytree(d, official_dir)
    shutil.copytree(d, ours_dir)
    passed, msg, norm = rcp_checker.check_directory(
        official_dir, "training", ruleset, False, train_samples, rcp_pass="full_rcps" if full else "pruned_rcps",
        rcp_bypass=bypass, set_scaling=True)
    # --any-division: the official checker judges open-division folders too.
    args = [ours_dir, "--ruleset", ruleset, "--set-scaling", "--any-division"]
    if bypass:
        args.append("--rcp-bypass")
    if full:
        args += ["--rcp-pass", "full"]
    if train_samples:
        args.append("--bert-train-samples")
    ours = mlbert_json(args)["results"][0]
    if open_division(d):
        # RCPs apply to closed results only: without --any-division mlbert says so and passes.
        plain = mlbert_json([d, "--ruleset", ruleset])["results"][0]
        if (plain["passed"], plain.get("verdict")) != (True, "not applicable"):
            failures.append(f"{what}: an open-division folder: mlbert rcp must say not applicable, "
                            f"got {plain}")
    if (ours["passed"], ours["message"]) != (passed, msg):
        failures.append(f"{what}: mlbert ({ours['passed']}, {ours['message']!r}) vs official ({passed}, {msg!r})")
    expect_close(what, "scaling_factor", ours["scaling_factor"], float(norm), 1e-12)
    scaling = [os.path.join(x, "scaling.json") for x in (official_dir, ours_dir)]
    present = [os.path.exists(p) for p in scaling]
    if present[0] != present[1]:
        failures.append(f"{what}: scaling.json written by official {present[0]}, by mlbert {present[1]}")
    elif present[0]:
        theirs = json.load(open(scaling[0]))["scaling_factor"]
        mine = json.load(open(scaling[1]))["scaling_factor"]
        expect_close(what, "scaling.json", mine, theirs, 1e-15)
    shutil.rmtree(official_dir)
    shutil.rmtree(ours_dir)
    return passed


def check_directories():
    root = tempfile.mkdtemp(prefix="mlbert_rcp_parity_")
    try:
        cases = []
        for ruleset in ["1.0.0", "1.1.0", "2.0.0", "2.1.0", "4.0.0", "4.1.0", "5.0.0"]:
            checker = rcp_checker.RCP_Checker("training", ruleset, "bert", False)
            pruned = sorted(checker.pruned_rcp_data.values(), key=lambda r: r["BS"])
            full = sorted(checker.rcp_data.values(), key=lambda r: r["BS"])
            largest, smallest = pruned[-1], pruned[0]
            mid = pruned[len(pruned) // 2]
            between = (pruned[1]["BS"] + pruned[2]["BS"]) // 2
            low_mean, high_mean = pruned[1]["RCP Mean"], pruned[2]["RCP Mean"]
            cases += [
                (ruleset, "exact-slow", mid["BS"], spread(mid["RCP Mean"] * 1.05), {}),
                (ruleset, "exact-scaled", mid["BS"], spread(mid["RCP Mean"] * 0.995), {}),
                (ruleset, "exact-fast", mid["BS"], spread(mid["RCP Mean"] * 0.80), {}),
                (ruleset, "exact-fast-bypass", mid["BS"], spread(mid["RCP Mean"] * 0.80), {"bypass": True}),
                (ruleset, "interp-pass", between, spread((low_mean + high_mean) / 2 * 1.01), {}),
                (ruleset, "interp-fail", between, spread((low_mean + high_mean) / 2 * 0.7), {}),
                (ruleset, "above-largest", largest["BS"] + 512, spread(largest["RCP Mean"]), {}),
                (ruleset, "above-largest-bypass", largest["BS"] + 512, spread(largest["RCP Mean"]), {"bypass": True}),
                (ruleset, "below-smallest-slow", max(8, smallest["BS"] // 2), spread(smallest["RCP Mean"] * 1.1), {}),
                (ruleset, "below-smallest-fast", max(8, smallest["BS"] // 2), spread(smallest["RCP Mean"] * 0.5), {}),
                (ruleset, "one-aborted", mid["BS"], spread(mid["RCP Mean"] * 1.02),
                 {"statuses": ["success"] * 9 + ["aborted"]}),
                (ruleset, "two-aborted", mid["BS"], spread(mid["RCP Mean"] * 1.02),
                 {"statuses": ["aborted"] + ["success"] * 8 + ["aborted"]}),
                (ruleset, "train-samples", mid["BS"], spread(mid["RCP Mean"] * 0.5),
                 {"train_samples": spread(mid["RCP Mean"] * 1.01), "train_mode": True}),
            ]
            pruned_away = [r for r in full if r["BS"] not in {p["BS"] for p in pruned}]
            for r in pruned_away[:2]:
                cases.append((ruleset, f"pruned-{r['BS']}", r["BS"], spread(r["RCP Mean"] * 0.99), {}))
                cases.append((ruleset, f"pruned-{r['BS']}-full", r["BS"], spread(r["RCP Mean"] * 0.99),
                              {"full": True}))
        for i, (ruleset, name, bs, samples, opts) in enumerate(cases):
            d = make_dir(root, f"{i}_{ruleset}_{name}", bs, samples, opts.get("statuses"),
                         opts.get("train_samples"))
            compare_dir(f"{ruleset} {name}", d, ruleset, bypass=opts.get("bypass", False),
                        full=opts.get("full", False), train_samples=opts.get("train_mode", False))

        fixtures = os.path.join(SHARED, "fixtures", "mlperf_logs")
        if os.path.isdir(fixtures):
            for sub, ruleset in [("../mlperf_logs_early/v1.0/NVIDIA/dgxa100_ngc21.05_pytorch", "1.0.0"),
                                 ("../mlperf_logs_early/v1.0/Supermicro/as-2124gq-nart+", "1.0.0"),
                                 ("v1.1/NVIDIA/dgxa100_n8_ngc21.09_pytorch", "1.1.0"),
                                 ("v1.1/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch", "1.1.0"),
                                 ("v1.1/Graphcore/ipu-pod16-POPART-open", "1.1.0"),
                                 ("v2.0/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch", "2.0.0"),
                                 ("v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch", "3.0.0"),
                                 ("v4.0/NVIDIA/h200_ngc23.09_pytorch", "4.0.0")]:
                d = os.path.join(root, sub.replace("../", "").replace("/", "_"))
                os.makedirs(d)
                for f in os.listdir(os.path.join(fixtures, sub)):
                    if f.startswith("result_"):
                        shutil.copy(os.path.join(fixtures, sub, f), d)
                for train_samples in (False, True):
                    compare_dir(f"fixture {sub} train_samples={train_samples}", d, ruleset,
                                train_samples=train_samples)
        else:
            print(f"note: {fixtures} absent; fixture directories not compared")
        return len(cases)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def check_no_rcp_round():
    """0.7.0: the official RCP_Checker raises (RCPs began with 1.0.0); mlbert answers, exit 0, that the
    round had none."""
    try:
        rcp_checker.RCP_Checker("training", "0.7.0", "bert", False)
        failures.append("0.7.0: the official RCP checker accepted the ruleset; the premise of the test is gone")
    except Exception:
        pass
    proc = subprocess.run([MLBERT, "rcp", "--json", "--ruleset", "0.7.0", "--table"], capture_output=True, text=True)
    if proc.returncode != 0:
        failures.append(f"0.7.0: mlbert rcp exited {proc.returncode}: {proc.stderr.strip()}")
        return
    out = json.loads(proc.stdout)
    if out.get("rcps") is not False or "has no RCPs" not in out.get("message", ""):
        failures.append(f"0.7.0: mlbert rcp says {out}, not that the ruleset has no RCPs")


def main():
    check_no_rcp_round()
    check_tables()
    n = check_directories()
    print(f"compared {len(RULESETS)} rulesets' RCP tables and batch-size grids and {n} synthetic "
          f"directories; worst relative differences: " +
          ", ".join(f"{k} {v:.3g}" for k, v in worst.items()))
    if failures:
        print(f"{len(failures)} mismatches:")
        for f in failures[:50]:
            print("  " + f)
        return 1
    print("PASS: mlbert rcp agrees with the official rcp_checker")
    return 0


if __name__ == "__main__":
    sys.exit(main())
