#!/usr/bin/env python3
"""Parity of mlbert's official command lines with the official mlperf_logging tools (pinned).

Each official form runs twice on its own copy of the same input: `python -m mlperf_logging.<tool>`
with this interpreter, and mlbert with the same words (`mlbert <tool> ...`, or a link named after
the tool, which dispatches on argv[0]). Compared: the exit status, the lines a script greps
(SUCCESS/FAILED; the package checker's verdict, RCP, seed and file-count lines; the summarizer's
stdout, CSV rows, JSON records and private ids; the RCP checker's PASSED/FAILED line; the system
description checker's verdict line; the repository checker's refused paths), the same lines in
the --log_output file, and the scaling.json files the package checker leaves. Inputs: the fixture
logs, packages assembled from them (among them a v1.0 package without an implementation folder,
which the official 1.0.0 checker passes and `mlbert package` must pass too), and a few broken
inputs on which the official tool stops with a Python exception (exit status 1) where mlbert must
fail with the same status.

Exit 0 pass, 1 fail, 77 skip (oracle or fixtures missing).
"""
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import mlperf_logging  # noqa: F401
except ImportError as e:
    print(f"SKIPPED: mlperf_logging is not importable: {e}")
    sys.exit(77)

MLBERT = os.path.abspath(os.environ.get("MLBERT_BIN", "mlbert"))
SHARED = os.environ.get("MLBERT_SHARED_DIR", "")
FIXTURES = os.path.join(SHARED, "fixtures", "mlperf_logs")
EARLY = os.path.join(SHARED, "fixtures", "mlperf_logs_early")
failures = []
compared = {}


def run(argv, cwd):
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, errors="replace")
    return proc.returncode, proc.stdout, proc.stderr


def both(tool, args, setup, root, link=False):
    """Runs the official tool and mlbert on fresh copies made by setup(dir); returns both results
    as (status, stdout, stderr, dir)."""
    results = []
    for who in ("official", "mlbert"):
        work = tempfile.mkdtemp(prefix=f"{who}_", dir=root)
        setup(work)
        if who == "official":
            argv = [sys.executable, "-m", f"mlperf_logging.{tool}", *args]
        elif link:
            os.symlink(MLBERT, os.path.join(work, tool))
            argv = [os.path.join(work, tool), *args]
        else:
            argv = [MLBERT, tool, *args]
        results.append((*run(argv, work), work))
    compared[tool] = compared.get(tool, 0) + 1
    return results


def grep(pattern, text):
    return [line for line in text.splitlines() if re.search(pattern, line)]


def expect_same(what, ours, theirs):
    if ours != theirs:
        failures.append(f"{what}:\n    official: {theirs!r}\n    mlbert:   {ours!r}")


def expect_status(what, official, mlbert):
    expect_same(f"{what}: exit status", mlbert[0], official[0])


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def copy_logs(source, target):
    os.makedirs(target, exist_ok=True)
    for name in sorted(os.listdir(source)):
        if name.startswith("result_"):
            shutil.copyfile(os.path.join(source, name), os.path.join(target, name))


# ---- compliance_checker --------------------------------------------------------------------------

def compliance_case(root, what, log_setup, args, link=False):
    def setup(work):
        log_setup(work)
    official, mlbert = both("compliance_checker", args + ["--log_output", "cc.log"], setup, root, link)
    expect_status(what, official, mlbert)
    verdict = r"^(INFO - SUCCESS|ERROR - FAILED)$"
    expect_same(f"{what}: verdict line", grep(verdict, mlbert[2]), grep(verdict, official[2]))
    expect_same(f"{what}: configs run", grep(r"Compliance checks:", mlbert[2]),
                grep(r"Compliance checks:", official[2]))
    expect_same(f"{what}: stdout", mlbert[1], official[1])
    theirs_log, ours_log = read(os.path.join(official[3], "cc.log")), read(os.path.join(mlbert[3], "cc.log"))
    expect_same(f"{what}: verdict line in --log_output", grep(verdict, ours_log or ""), grep(verdict, theirs_log or ""))


def compliance_cases(root):
    logs = []
    for base, rounds in ((FIXTURES, None), (EARLY, None)):
        for round_dir in sorted(os.listdir(base)):
            if not round_dir.startswith("v"):
                continue
            ruleset = round_dir[1:] + ".0"
            for org in sorted(os.listdir(os.path.join(base, round_dir))):
                for system in sorted(os.listdir(os.path.join(base, round_dir, org))):
                    folder = os.path.join(base, round_dir, org, system)
                    names = sorted(n for n in os.listdir(folder) if n.startswith("result_"))
                    for name in names[:2]:
                        logs.append((os.path.join(folder, name), ruleset))

    def fixture(path):
        return lambda work: None
    jobs = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for path, ruleset in logs:
            jobs.append(pool.submit(compliance_case, root, f"compliance_checker {path}", fixture(path),
                                    ["--usage", "training", "--ruleset", ruleset, path]))
        first = logs[0][0]
        jobs.append(pool.submit(compliance_case, root, "compliance_checker through a link, flags after LOG",
                                fixture(first), [first, "--ruleset", logs[0][1], "--werror"], True))
        jobs.append(pool.submit(compliance_case, root, "compliance_checker --quiet, --ruleset=R",
                                fixture(first), ["--quiet", f"--ruleset={logs[0][1]}", first]))
        jobs.append(pool.submit(compliance_case, root, "compliance_checker of an empty log",
                                lambda work: open(os.path.join(work, "empty.txt"), "w").close(),
                                ["--ruleset", "4.1.0", "empty.txt"]))
        jobs.append(pool.submit(compliance_case, root, "compliance_checker of a missing log (official: exception)",
                                lambda work: None, ["--ruleset", "4.1.0", "missing.txt"]))
        jobs.append(pool.submit(compliance_case, root, "compliance_checker of a BERT log under 5.1.0",
                                fixture(first), ["--ruleset", "5.1.0", first]))
        for job in jobs:
            job.result()


# ---- package_checker -----------------------------------------------------------------------------

def assemble(org, systems, implementation=True, status=None):
    """An organization folder from fixture system folders: (source folder, system name) pairs."""
    for source, system in systems:
        copy_logs(source, os.path.join(org, "results", system, "bert"))
        os.makedirs(os.path.join(org, "systems"), exist_ok=True)
        desc = json.load(open(os.path.join(source, "system.json")))
        if status:
            desc["status"] = status
        with open(os.path.join(org, "systems", system + ".json"), "w") as f:
            json.dump(desc, f, indent=4)
    if implementation:
        path = os.path.join(org, "benchmarks/bert/implementations/pytorch")
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "run_and_time.sh"), "w") as f:
            f.write("#!/bin/bash\n")


PACKAGE_LINES = (r"PACKAGE CHECKER FOUND|RCP Test (Passed|Failed)|Seed checker failed|files? does not comply|"
                 r"files do not comply|Incorrect number of files|System description (file )?checker")


def package_case(root, what, setup, ruleset, flags=()):
    official, mlbert = both("package_checker", ["Org", "training", ruleset, *flags, "--log_output", "pc.log"],
                            setup, root)
    if official[0] != 0:
        # The official checker stopped with a traceback: mlbert must fail with the same status and
        # must not claim success.
        expect_status(what, official, mlbert)
        if grep("FOUND NO ERRORS", mlbert[2]):
            failures.append(f"{what}: the official checker stopped (exit {official[0]}) but mlbert passed")
        return
    expect_status(what, official, mlbert)
    theirs = sorted(l for l in grep(PACKAGE_LINES, official[2]) if "mlbert:" not in l)
    ours = sorted(l for l in grep(PACKAGE_LINES, mlbert[2]) if "mlbert:" not in l)
    expect_same(f"{what}: verdict, RCP, seed and count lines", ours, theirs)
    expect_same(f"{what}: stdout", mlbert[1], official[1])
    theirs_log = grep("PACKAGE CHECKER FOUND", read(os.path.join(official[3], "pc.log")) or "")
    ours_log = grep("PACKAGE CHECKER FOUND", read(os.path.join(mlbert[3], "pc.log")) or "")
    expect_same(f"{what}: verdict in --log_output", ours_log, theirs_log)
    scaling = []
    for work in (official[3], mlbert[3]):
        found = {}
        for dirpath, _, files in os.walk(work):
            if "scaling.json" in files:
                found[os.path.relpath(dirpath, work)] = read(os.path.join(dirpath, "scaling.json"))
        scaling.append(found)
    expect_same(f"{what}: scaling.json files", scaling[1], scaling[0])
    return official, mlbert


def package_cases(root):
    v = lambda *p: os.path.join(FIXTURES, *p)  # noqa: E731
    e = lambda *p: os.path.join(EARLY, *p)  # noqa: E731
    nvidia4 = [(v("v4.0/NVIDIA/h200_ngc23.09_pytorch"), "h200_ngc23.09_pytorch"),
               (v("v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch"), "dgxh100_n8_ngc23.04_pytorch")]
    cases = [
        ("package_checker v4.0 NVIDIA (status onprem fails 4.0.0)",
         lambda w: assemble(os.path.join(w, "Org"), nvidia4), "4.0.0", ()),
        ("package_checker v4.0 NVIDIA, availability status",
         lambda w: assemble(os.path.join(w, "Org"), nvidia4[:1], status="Available on-premise"), "4.0.0", ()),
        ("package_checker v1.1 Samsung closed",
         lambda w: assemble(os.path.join(w, "Org"), [(v("v1.1/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch"), "sam")]),
         "1.1.0", ()),
        ("package_checker v1.1 NVIDIA, failing logs, --quiet --rcp-bypass --seed-checker-bypass",
         lambda w: assemble(os.path.join(w, "Org"), [(v("v1.1/NVIDIA/dgxa100_n8_ngc21.09_pytorch"), "dgx")]),
         "1.1.0", ("--quiet", "--rcp-bypass", "--seed-checker-bypass")),
        ("package_checker v1.1 Graphcore open",
         lambda w: assemble(os.path.join(w, "Org"), [(v("v1.1/Graphcore/ipu-pod16-POPART-open"), "pod16")]),
         "1.1.0", ()),
        ("package_checker v0.7 NVIDIA (no system, seed or RCP verdict)",
         lambda w: assemble(os.path.join(w, "Org"), [(e("v0.7/NVIDIA/dgx2h_ngc20.06_pytorch"), "dgx2h")]),
         "0.7.0", ()),
        ("package_checker of a results folder without its system description (official: exception)",
         lambda w: (assemble(os.path.join(w, "Org"), nvidia4[:1]),
                    os.remove(os.path.join(w, "Org/systems/h200_ngc23.09_pytorch.json"))), "4.0.0", ()),
    ]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for job in [pool.submit(package_case, root, *case) for case in cases]:
            job.result()
    no_implementation(root, e)


def no_implementation(root, e):
    """A v1.0 package assembled by hand, without benchmarks/: the official 1.0.0 checker has no
    rule about the implementation folder (it lists benchmarks/bert's sources and never uses them),
    so it passes; `mlbert package_checker` and `mlbert package` must pass it too, the latter with
    its [layout] warning. (NVIDIA's v1.0 logs give epoch_num in epochs, so the RCP test reads
    train_samples.)"""
    what = "package_checker v1.0 package without an implementation folder"
    setup = lambda w: assemble(os.path.join(w, "Org"), [(e("v1.0/NVIDIA/dgxa100_ngc21.05_pytorch"), "dgxa100")],  # noqa: E731
                               implementation=False)
    official, _ = package_case(root, what, setup, "1.0.0", ("--rcp-bert-train-samples",))
    if not grep("FOUND NO ERRORS", official[2]):
        failures.append(f"{what}: built to pass officially, but the official checker says "
                        f"{grep('PACKAGE CHECKER FOUND', official[2])} (test construction error)")
    work = tempfile.mkdtemp(prefix="package_", dir=root)
    setup(work)
    status, out, err = run([MLBERT, "package", "--json", "--ruleset", "1.0.0", "--rcp-bert-train-samples",
                            "Org"], work)
    result = json.loads(out) if out.startswith("{") else {}
    layout = [f for f in result.get("findings", []) if "no implementation folder" in f["text"]]
    if status != 0 or not result.get("passed") or [f["level"] for f in layout] != ["WARNING"]:
        failures.append(f"{what}: `mlbert package` must pass it with one [layout] warning; got exit "
                        f"{status}, findings {layout}, stderr {err.strip()[:300]}")


# ---- result_summarizer ---------------------------------------------------------------------------

def summarizer_case(root, what, setup, args, files):
    official, mlbert = both("result_summarizer", args, setup, root)
    expect_status(what, official, mlbert)
    expect_same(f"{what}: stdout", mlbert[1], official[1])
    for name in files:
        expect_same(f"{what}: {name}", read(os.path.join(mlbert[3], name)), read(os.path.join(official[3], name)))
    ids = []
    for work in (official[3], mlbert[3]):
        ids.append({os.path.relpath(d, work): read(os.path.join(d, "privateid.json"))
                    for d, _, fs in os.walk(work) if "privateid.json" in fs})
    expect_same(f"{what}: privateid.json files", ids[1], ids[0])


def summarizer_cases(root):
    def two_orgs(work):
        assemble(os.path.join(work, "NVIDIA"), [
            (os.path.join(FIXTURES, "v4.0/NVIDIA/h200_ngc23.09_pytorch"), "h200_ngc23.09_pytorch"),
            (os.path.join(FIXTURES, "v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch"), "dgxh100_n8_ngc23.04_pytorch")])
        assemble(os.path.join(work, "Samsung"), [
            (os.path.join(FIXTURES, "v2.0/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch"), "sam")])
        with open(os.path.join(work, "out_detailed.csv"), "w") as f:
            f.write("an earlier run's line, which the detailed CSV is appended to\n")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        jobs = [pool.submit(summarizer_case, root, "result_summarizer ./{*} --generate_private_ids", two_orgs,
                            ["./{*}", "training", "4.0.0", "--generate_private_ids"], ["summary.json"]),
                pool.submit(summarizer_case, root, "result_summarizer NVIDIA -csv out.csv", two_orgs,
                            ["NVIDIA", "training", "4.0.0", "-csv", "out.csv"],
                            ["out.csv", "out.json", "out_detailed.csv", "out_detailed.json"])]
        for job in jobs:
            job.result()


# ---- rcp_checker ---------------------------------------------------------------------------------

def rcp_case(root, what, setup, args):
    official, mlbert = both("rcp_checker", args + ["--log_output", "rcp.log"], setup, root)
    expect_status(what, official, mlbert)
    if official[0] == 0 or grep("RCP test FAILED", official[2]):
        verdict = r"RCP test (PASSED|FAILED)"
        expect_same(f"{what}: verdict line", grep(verdict, mlbert[2]), grep(verdict, official[2]))
        expect_same(f"{what}: verdict line in --log_output", grep(verdict, read(os.path.join(mlbert[3], "rcp.log")) or ""),
                    grep(verdict, read(os.path.join(official[3], "rcp.log")) or ""))
        expect_same(f"{what}: stdout", mlbert[1], official[1])
    elif not grep("RCP test FAILED", mlbert[2]):
        failures.append(f"{what}: the official checker stopped with an exception; mlbert must fail the "
                        f"test and say why, got {mlbert[2][-400:]!r}")


def rcp_cases(root):
    cases = []
    for base in (FIXTURES, EARLY):
        for round_dir in sorted(d for d in os.listdir(base) if d.startswith("v") and d != "v0.7"):
            for org in sorted(os.listdir(os.path.join(base, round_dir))):
                for system in sorted(os.listdir(os.path.join(base, round_dir, org))):
                    source = os.path.join(base, round_dir, org, system)
                    cases.append((f"rcp_checker {round_dir}/{org}/{system}",
                                  lambda w, s=source: copy_logs(s, os.path.join(w, "sys")),
                                  ["sys", "--rcp_version", round_dir[1:] + ".0"]))
    samsung = os.path.join(FIXTURES, "v2.0/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch")

    def truncated(work):
        copy_logs(samsung, os.path.join(work, "sys"))
        path = os.path.join(work, "sys", "result_3.txt")
        lines = open(path, encoding="latin-1").read().splitlines(keepends=True)
        keep = [l for l in lines if "global_batch_size" not in l]  # a log cut before its batch size
        open(path, "w", encoding="latin-1").write("".join(keep[:len(keep) // 3]))
    cases += [("rcp_checker --rcp_pass full_rcps --verbose", lambda w: copy_logs(samsung, os.path.join(w, "sys")),
               ["sys", "--rcp_version", "2.0.0", "--rcp_pass", "full_rcps"]),
              ("rcp_checker --bert_train_samples", lambda w: copy_logs(samsung, os.path.join(w, "sys")),
               ["--bert_train_samples", "sys", "--rcp_version", "2.0.0"]),
              ("rcp_checker --custom_rcps", lambda w: copy_logs(samsung, os.path.join(w, "sys")),
               ["sys", "--rcp_version", "2.0.0", "--custom_rcps",
                os.path.join(SHARED, "fixtures/rcp/rcps_bert_training_2.0.0.json")]),
              ("rcp_checker of a truncated log (official: KeyError: None)", truncated,
               ["sys", "--rcp_version", "2.0.0"])]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for job in [pool.submit(rcp_case, root, *case) for case in cases]:
            job.result()


# ---- system_desc_checker -------------------------------------------------------------------------

def system_case(root, what, setup, ruleset):
    official, mlbert = both("system_desc_checker", ["system.json", "training", ruleset], setup, root)
    expect_status(what, official, mlbert)
    verdict = r"System description checker (passed|failed)"
    expect_same(f"{what}: verdict line", grep(verdict, mlbert[2]), grep(verdict, official[2]))
    expect_same(f"{what}: stdout", mlbert[1], official[1])
    return mlbert


def system_cases(root):
    sources = [os.path.join(SHARED, "fixtures/systems", n) for n in sorted(os.listdir(os.path.join(SHARED, "fixtures/systems")))]
    for base in (FIXTURES, EARLY):
        for dirpath, _, files in os.walk(base):
            if "system.json" in files:
                sources.append(os.path.join(dirpath, "system.json"))
    cases = []
    for source in sorted(sources):
        for ruleset in ("1.1.0", "4.1.0"):
            cases.append((f"system_desc_checker {source} {ruleset}",
                          lambda w, s=source: shutil.copyfile(s, os.path.join(w, "system.json")), ruleset))

    def edited(fn):
        def setup(work):
            desc = json.load(open(sources[0]))
            with open(os.path.join(work, "system.json"), "w") as f:
                f.write(fn(desc))
        return setup
    cases += [("system_desc_checker with 'coolng' for cooling",
               edited(lambda d: json.dumps({("coolng" if k == "cooling" else k): v for k, v in d.items()})), "1.1.0"),
              ("system_desc_checker without framework", edited(lambda d: json.dumps({k: v for k, v in d.items()
                                                                                      if k != "framework"})), "4.1.0"),
              ("system_desc_checker of malformed JSON (official: exception)", edited(lambda d: json.dumps(d)[:-2]), "4.1.0"),
              ("system_desc_checker with a number as system_name (official: exception)",
               edited(lambda d: json.dumps(dict(d, system_name=8))), "4.1.0")]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = {case[0]: pool.submit(system_case, root, *case) for case in cases}
        misspelled = results["system_desc_checker with 'coolng' for cooling"].result()
        for job in results.values():
            job.result()
    if not grep(r"key 'coolng' .* did you mean 'cooling'", misspelled[2]):
        failures.append(f"system_desc_checker with 'coolng': mlbert names neither the key nor the field: {misspelled[2]!r}")


# ---- repo_checker --------------------------------------------------------------------------------

def repo_tree(work):
    org = os.path.join(work, "repo", "Org")
    for d in ("a dir", ".hidden", "ok"):
        os.makedirs(os.path.join(org, d))
    for name in ("x y.txt", ".dot", "fine.txt"):
        open(os.path.join(org, "ok", name), "w").close()
    for name, size in (("big.bin", 50 * 1024 * 1024 + 1), ("limit.bin", 50 * 1024 * 1024)):
        with open(os.path.join(org, "ok", name), "wb") as f:
            f.truncate(size)
    os.symlink("/nonexistent/target", os.path.join(org, "ok", "broken"))
    os.symlink("fine.txt", os.path.join(org, "ok", "relative"))  # read from the current directory
    os.symlink(work, os.path.join(org, "ok", "folder_link"))


def repo_cases(root):
    for what, setup in (("repo_checker of a tree with refused names, sizes and links", repo_tree),
                        ("repo_checker of a clean tree", lambda w: os.makedirs(os.path.join(w, "repo/Org/ok")))):
        official, mlbert = both("repo_checker", ["repo/Org", "training", "4.1.0", "--log_output", "repo.log"],
                                setup, root)
        expect_status(what, official, mlbert)
        # The lists name paths in os.walk's order, which is no set order: lines are compared with
        # the paths cut off, and the paths as sets.
        lines = [[re.sub(r": repo/.*", ": PATHS", l) for l in grep(r"^(ERROR|INFO) - ", r[2])]
                 for r in (official, mlbert)]
        expect_same(f"{what}: log lines", lines[1], lines[0])
        paths = [sorted(p.strip() for l in r[2].splitlines() for p in l.split(": ") if p.startswith("repo/"))
                 for r in (official, mlbert)]
        expect_same(f"{what}: paths named", paths[1], paths[0])


def main():
    if not os.path.isdir(FIXTURES) or not os.path.isdir(EARLY):
        print(f"SKIPPED: the fixture logs are absent ({FIXTURES})")
        return 77
    root = tempfile.mkdtemp(prefix="mlbert_official_cli_")
    try:
        for cases in (compliance_cases, package_cases, summarizer_cases, rcp_cases, system_cases, repo_cases):
            cases(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("compared " + ", ".join(f"{n} {tool}" for tool, n in compared.items()))
    if failures:
        print(f"{len(failures)} mismatches:")
        for f in failures:
            print("  " + f)
        return 1
    print("PASS: mlbert's official command lines agree with the official tools")
    return 0


if __name__ == "__main__":
    sys.exit(main())
