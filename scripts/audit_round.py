#!/usr/bin/env python3
"""Audits every BERT result of a published round twice, with `mlbert` and with the official
mlperf_logging tools (the package imported in this interpreter, e.g. the pinned one of `make test`'s
venv), and prints where they differ:

  build-venv/bin/python scripts/audit_round.py ROUND_DIR... [--ruleset X.Y.Z] [--werror]
                        [--implementations DIR] [--mlbert build/bin/mlbert]

- check: each result log, `mlbert check --ruleset RULESET [--werror]` against the official
  compliance checker (`make_checker(...).check_file`, warnings as errors with --werror): the same
  verdict, the same number of failed rules, and every rule key the official checker fails named by
  mlbert;
- score: each BERT result folder, `mlbert score --json` against the summarizer's per-folder function
  (`_compute_strong_score_standalone`): the identical score or none in both, and the same runs
  scored (compliant) with the identical minutes;
- rcp: each folder (rulesets with BERT RCPs), `mlbert rcp --json` against the official RCP checker
  (`check_directory`, no scaling file written): the same verdict and message, and the same scaling
  factor to 1e-12 (with --any-division, as the official checker judges open-division folders too,
  for which `mlbert rcp` alone answers that RCPs apply to closed results only);
- package (with --implementations DIR): each submitter's BERT part -- results/<system>/bert, those
  systems' descriptions, and benchmarks/bert/ from DIR/<org>/benchmarks/bert (a round's checkout
  holds it beside the results) copied to a scratch tree, `mlbert package --json` against
  `check_training_package`: the same verdict (a missing benchmarks/bert/implementations/ folder,
  which the official checker does not look for, is only a warning in mlbert).

ROUND_DIR is a round's results tree as MLCommons publishes it (<org>/results/<system>/bert/, e.g. a
checkout of mlcommons/training_results_v4.0) or flat folders (<org>/<system>/result_*.txt, as
../shared/fixtures/mlperf_logs/vX.Y holds them); its ruleset is --ruleset or the round in its name
(training_results_v4.0 or v4.0 -> 4.0.0). Nothing in ROUND_DIR is written. Exit status 0 when the
tools agree on everything, 1 on a difference (each printed), 2 on bad arguments, 77 when the
official package is not importable.
"""
import argparse
import contextlib
import io
import json
import logging
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

try:
    from mlperf_logging.compliance_checker import mlp_compliance
    import official_package_verdict  # imports the official package_checker
    from mlperf_logging.rcp_checker import rcp_checker
    from mlperf_logging.result_summarizer import result_summarizer
except ImportError as e:
    print(f"SKIPPED: the official mlperf_logging package is not importable here: {e}")
    sys.exit(77)


def bert_folders(root):
    """Every folder under root that holds BERT result logs: <org>/results/<system>/bert or
    <org>/<system>."""
    found = {p.parent for p in root.glob("*/results/*/bert/result_*.txt")}
    found |= {p.parent for p in root.glob("*/*/result_*.txt")}
    return sorted(found)


def result_logs(folder):
    return sorted(folder.glob("result_*.txt"), key=lambda p: p.name)


def official_check(path, ruleset, werror):
    """(verdict, rule keys it failed with a key of their own, number of failed rules)."""
    mlp_compliance.enqueued_configs.clear()  # module state: a crash would leave entries behind
    checker = mlp_compliance.make_checker("training", ruleset, False, werror)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            ok = checker.check_file(str(path), f"training_{ruleset}/common.yaml")
    except Exception as e:  # the command dies with a traceback: exit status 1, a failed log
        return "FAILED", set(), None, f"{type(e).__name__}: {e}"
    return ("SUCCESS" if ok else "FAILED"), set(checker.overwritable), \
        len(checker.overwritable) + len(checker.not_overwritable), None


# "  error   closed_bert:eval_accuracy: ..." or "  error   common:init_stop  line 8: ..."
ERROR_LINE = re.compile(r"^\s+error\s+[\w.]+:(\w+)[ :]")


def mlbert_check(mlbert, paths, ruleset, werror):
    """{path: (verdict, rule keys of its error lines, number of error lines)}"""
    out = {}
    for start in range(0, len(paths), 100):
        chunk = [str(p) for p in paths[start:start + 100]]
        proc = subprocess.run([mlbert, "check", "--ruleset", ruleset, "--quiet",
                               *(["--werror"] if werror else []), *chunk], capture_output=True)
        if proc.returncode not in (0, 1):
            sys.exit(f"audit_round.py: mlbert check exited {proc.returncode}: "
                     f"{proc.stderr.decode(errors='replace')[-2000:]}")
        current = None
        for text in proc.stdout.decode("utf-8", errors="replace").splitlines():
            if text[:8] in ("SUCCESS ", "FAILED  ", "ERROR   ") and text[8:] in chunk:
                current = text[8:]
                out[current] = [text[:8].strip(), set(), 0]
            elif current and (m := ERROR_LINE.match(text)):
                out[current][1].add(m.group(1))
                out[current][2] += 1
    return out


def compare_checks(mlbert, folders, ruleset, werror, differences):
    paths = [p for f in folders for p in result_logs(f)]
    ours = mlbert_check(mlbert, paths, ruleset, werror)
    verdicts = {"SUCCESS": 0, "FAILED": 0}
    for path in paths:
        verdict, keys, failed, crash = official_check(path, ruleset, werror)
        verdicts[verdict] += 1
        mine = ours.get(str(path))
        if mine is None:
            differences.append(f"check {path}: mlbert printed no verdict")
        elif mine[0] != verdict:
            differences.append(f"check {path}: official {verdict}{' (' + crash + ')' if crash else ''}, "
                               f"mlbert {mine[0]}")
        elif verdict == "FAILED" and crash is None and (not keys <= mine[1] or failed != mine[2]):
            differences.append(f"check {path}: official fails {failed} rule(s), keys {sorted(keys)}; "
                               f"mlbert {mine[2]}, keys {sorted(mine[1])}")
    return len(paths), verdicts


def official_score(folder, ruleset):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        counted, _, score, _, _ = result_summarizer._compute_strong_score_standalone(
            "bert", folder.name, False, str(folder), "training", ruleset, return_full_scores=True)
    return score, {pathlib.Path(f).name: minutes for f, minutes in counted.items()}


def mlbert_json(mlbert, args):
    proc = subprocess.run([mlbert, *args], capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"mlbert {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def compare_scores(mlbert, folders, ruleset, differences):
    scored = 0
    for folder in folders:
        try:
            theirs, their_runs = official_score(folder, ruleset)
        except Exception as e:  # the summarizer dies on this folder: nothing to compare
            differences.append(f"score {folder}: the official summarizer raised "
                               f"{type(e).__name__}: {e}")
            continue
        ours = mlbert_json(mlbert, ["score", "--json", "--ruleset", ruleset, str(folder)])[0]
        # The summarizer's runs are all compliant ones, those the olympic mean drops included.
        our_runs = {pathlib.Path(r["file"]).name: r["minutes"]
                    for r in ours["runs"] if r["compliant"]}
        if (theirs is None) != (ours["score"] is None) or \
                (theirs is not None and float(theirs) != ours["score"]):
            differences.append(f"score {folder}: official {theirs!r}, mlbert {ours['score']!r}")
        if their_runs != our_runs:
            differences.append(f"score {folder}: runs counted officially {their_runs}, "
                               f"by mlbert {our_runs}")
        scored += theirs is not None
    return scored


def compare_rcps(mlbert, folders, ruleset, differences):
    passed = 0
    for folder in folders:
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                ok, message, factor = rcp_checker.check_directory(
                    str(folder), "training", ruleset, False, False, rcp_pass="pruned_rcps",
                    rcp_bypass=False, set_scaling=False)
        except Exception as e:
            differences.append(f"rcp {folder}: the official RCP checker raised {type(e).__name__}: {e}")
            continue
        ours = mlbert_json(mlbert, ["rcp", "--json", "--any-division", "--ruleset", ruleset,
                                    str(folder)])["results"][0]
        if (ours["passed"], ours["message"]) != (ok, message):
            differences.append(f"rcp {folder}: official ({ok}, {message!r}), "
                               f"mlbert ({ours['passed']}, {ours['message']!r})")
        elif abs(ours["scaling_factor"] - float(factor)) > 1e-12 * max(1.0, abs(float(factor))):
            differences.append(f"rcp {folder}: scaling factor official {factor}, "
                               f"mlbert {ours['scaling_factor']}")
        passed += bool(ok)
    return passed


def official_package(org, ruleset):
    try:
        lines = official_package_verdict.logged_lines(org, ruleset)
    except Exception as e:  # the command dies with a traceback: not a passing package
        return False, f"{type(e).__name__}: {e}"
    verdict = official_package_verdict.verdicts(lines)
    errors = [line for line in lines if "error" in line.lower()][:3]
    return len(verdict) == 1 and official_package_verdict.passed(verdict[0]), "; ".join(errors)


def package_orgs(round_dir):
    """{org: [result folder...]} of a round in the package layout (<org>/results/<system>/bert)."""
    orgs = {}
    for folder in sorted(round_dir.glob("*/results/*/bert")):
        if any(folder.glob("result_*.txt")):
            orgs.setdefault(folder.parents[2].name, []).append(folder)
    return orgs


def compare_packages(mlbert, round_dir, implementations, ruleset, differences):
    passed = compared = 0
    for org, folders in package_orgs(round_dir).items():
        code = implementations / org / "benchmarks" / "bert"
        with tempfile.TemporaryDirectory(prefix="audit_round_") as scratch:
            trees = []
            for tool in ("official", "mlbert"):
                tree = pathlib.Path(scratch, tool, org)
                for folder in folders:
                    system = folder.parent.name
                    shutil.copytree(folder, tree / "results" / system / "bert")
                    description = round_dir / org / "systems" / f"{system}.json"
                    if description.exists():
                        (tree / "systems").mkdir(exist_ok=True)
                        shutil.copy(description, tree / "systems")
                if code.is_dir():
                    shutil.copytree(code, tree / "benchmarks" / "bert")
                trees.append(tree)
            theirs, why = official_package(trees[0], ruleset)
            ours = mlbert_json(mlbert, ["package", "--json", "--ruleset", ruleset, str(trees[1])])
        compared += 1
        passed += theirs
        if ours["passed"] != theirs:
            errors = [f"{f['where']}: {f['text']}" for f in ours["findings"] if f["level"] == "ERROR"]
            differences.append(f"package {round_dir / org}: official {theirs} ({why}), mlbert "
                               f"{ours['passed']} ({'; '.join(errors[:3])})")
    return compared, passed


def audit(mlbert, round_dir, ruleset, implementations, werror):
    """Prints the round's differences and its summary line; returns the number of differences."""
    folders = bert_folders(round_dir)
    differences = []
    started = time.time()
    logs, verdicts = compare_checks(mlbert, folders, ruleset, werror, differences)
    scored = compare_scores(mlbert, folders, ruleset, differences)
    rcp_note = "no BERT RCPs in this ruleset"
    if ruleset not in ("0.6.0", "0.7.0"):
        rcp_note = f"{compare_rcps(mlbert, folders, ruleset, differences)} pass the RCP check"
    package_note = ""
    if implementations:
        compared, passed = compare_packages(mlbert, round_dir, implementations, ruleset, differences)
        package_note = f", {compared} submitters' packages ({passed} pass officially)"
    for d in differences:
        print("DIFFERENCE:", d)
    mode = " checked with --werror" if werror else ""
    print(f"{round_dir} ({ruleset}): {logs} logs{mode} (official SUCCESS {verdicts['SUCCESS']}, "
          f"FAILED {verdicts['FAILED']}), {len(folders)} folders ({scored} with a score; {rcp_note})"
          f"{package_note}: {len(differences)} difference(s); {time.time() - started:.0f} s",
          flush=True)
    return len(differences)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("round_dirs", type=pathlib.Path, nargs="+", metavar="ROUND_DIR")
    parser.add_argument("--ruleset", help="every ROUND_DIR's ruleset (default: the round in its name)")
    parser.add_argument("--mlbert", default="build/bin/mlbert")
    parser.add_argument("--implementations", type=pathlib.Path,
                        help="compare packages too, with <org>/benchmarks/bert from here (for one "
                        "ROUND_DIR: a checkout of the round holds them beside its results)")
    parser.add_argument("--werror", action="store_true",
                        help="check the logs with warnings as errors (both tools)")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    rounds = []
    for round_dir in args.round_dirs:
        found = re.search(r"(?:^|_)v(\d+)\.(\d+)$", round_dir.resolve().name)
        ruleset = args.ruleset or (found and f"{found.group(1)}.{found.group(2)}.0")
        if not ruleset:
            print(f"audit_round.py: {round_dir}: no round in its name (vX.Y); give --ruleset",
                  file=sys.stderr)
            return 2
        if not bert_folders(round_dir):
            print(f"audit_round.py: no BERT result logs under {round_dir}", file=sys.stderr)
            return 2
        rounds.append((round_dir, ruleset))
    if args.implementations and len(rounds) != 1:
        print("audit_round.py: --implementations goes with one ROUND_DIR", file=sys.stderr)
        return 2
    differences = sum(audit(args.mlbert, d, r, args.implementations, args.werror)
                      for d, r in rounds)
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
