#!/usr/bin/env python3
"""Predicts every BERT result of a published round with `mlbert simulate --results` and prints a
Markdown table: published against predicted olympic mean, or why a folder is not modelled.

  scripts/simulate_round.py ROUND_DIR RULESET [--mlbert build/bin/mlbert] [--systems-dir systems]
                            [--calibrate SUBMITTER/SYSTEM] [--phases]

ROUND_DIR is a round's results tree as MLCommons publishes it (<org>/results/<system>/bert/ with
<org>/systems/<system>.json), e.g. a checkout of mlcommons/training_results_v2.0, or flat folders
(<org>/<system>/ with result_*.txt and system.json). The profiles are the ones in
--systems-dir/profiles: what each was calibrated on is its provenance.source, so the row of a
result a profile was fitted to is a calibration case, not a prediction; the script says so, also
where a later round's package re-publishes those runs (the submitter's, with the same olympic mean
to the millisecond, under any name).

--calibrate SUBMITTER/SYSTEM fits the profile of that result's accelerator to that ONE result of
the round (`mlbert simulate calibrate`, into a scratch copy of --systems-dir/profiles in which it
replaces the shipped profiles of that accelerator; the shipped files are not touched) and predicts
every other result of the round with it. Its row is then the calibration case.

--phases adds what the logs time of each phase beside the prediction's (`published_phases` of
`mlbert simulate --results --json`): the step between evaluations in ms, the evaluation in ms,
the step with its share of an evaluation over whole evaluation intervals in ms (from the
eval_accuracy records' samples, which logs before v3.1 also state), the run start in s, each
"published / predicted" ("-" where the logs do not time it: before v3.1 they log no
eval_start/eval_stop).
"""
import argparse
import json
import pathlib
import re
import statistics
import shutil
import subprocess
import sys
import tempfile


def folders(root):
    """(submitter, system, folder, its system description) of every BERT result under root: a
    round's package layout (<org>/results/<system>/bert/ and <org>/systems/<system>.json) or flat
    folders (<org>/<system>/result_*.txt beside system.json, as ../shared holds them)."""
    for bert in sorted(root.glob("*/results/*/bert")):
        if any(bert.glob("result_*.txt")):
            folder = bert.parent
            yield (folder.parts[-3], folder.name, folder,
                   folder.parent.parent / "systems" / f"{folder.name}.json")
    for system in sorted(root.glob("*/*/system.json")):
        folder = system.parent
        if any(folder.glob("result_*.txt")):
            yield folder.parts[-2], folder.name, folder, system


def calibration_sources(systems_dir):
    """(round or None, submitter, system, published olympic seconds or None) of each profile's
    calibration result."""
    sources = []
    for profile in (systems_dir / "profiles").glob("*.json"):
        try:
            provenance = json.loads(profile.read_text()).get("provenance", {})
            source = provenance.get("source", "")
            observed = provenance.get("fit", {}).get("observed_olympic_seconds")
        except (OSError, ValueError, AttributeError):
            continue
        if not isinstance(observed, (int, float)):
            observed = None
        if not isinstance(source, str) or not source:
            continue
        # ".../v1.0/NVIDIA/dgxa100_ngc21.05_pytorch" or
        # "mlcommons/training_results_v2.0/NVIDIA/results/<system>/bert"
        parts = [p for p in source.split("/") if p not in ("", ".", "bert", "results")]
        version = next((m.group(1) for m in map(re.compile(r"(?:^|_)(v\d+\.\d+)$").search, parts)
                        if m), None)
        if len(parts) >= 2:
            sources.append((version, parts[-2], parts[-1], observed))
    return sources


def is_calibration(fitted, version, submitter, system):
    return any((v is None or v == version) and (o, n) == (submitter, system)
               for v, o, n, _ in fitted)


def is_republished_calibration(fitted, submitter, published):
    """A later round's package re-publishes earlier runs, under the same name or another (NVIDIA's
    v3.0 dgxh100_n8 runs as eos_n8 in v3.1 to v4.1, its v4.0 H200 runs in v4.1): the submitter's
    result with the olympic mean of a profile's calibration result, to the logged millisecond, is
    those runs, not a prediction."""
    return any(o == submitter and observed is not None and abs(observed - published) < 0.0005
               for _, o, _, observed in fitted)


def calibrated_systems_dir(args, scratch):
    """A copy of --systems-dir/profiles in `scratch` with the profile of --calibrate's accelerator
    fitted to that result; exits with the reason when the result is not in the round or the fit
    fails."""
    wanted = tuple(args.calibrate.strip("/").split("/"))
    folder = next((f for o, n, f, _ in folders(args.round_dir) if (o, n) == wanted), None)
    if len(wanted) != 2 or folder is None:
        sys.exit(f"simulate_round.py: --calibrate {args.calibrate}: no BERT result "
                 f"SUBMITTER/SYSTEM of that name under {args.round_dir}")
    profiles = scratch / "profiles"
    shutil.copytree(args.systems_dir / "profiles", profiles)
    fitted = profiles / "calibrated-within-the-round.json"
    fit = subprocess.run(
        [args.mlbert, "simulate", "calibrate", "--results", str(folder), "--ruleset", args.ruleset,
         "--output", str(fitted), "--systems-dir", str(scratch)],
        capture_output=True, text=True, timeout=600)
    if fit.returncode != 0:
        reason = (fit.stderr.strip().splitlines() or ["(no message)"])[-1]
        sys.exit(f"simulate_round.py: --calibrate {args.calibrate}: {reason}")
    # The fitted profile alone stands for its accelerator: the copies of the shipped ones for it
    # (of any round) go.
    matches = json.loads(fitted.read_text())["matches"]
    for other in profiles.glob("*.json"):
        try:
            if other != fitted and json.loads(other.read_text()).get("matches") == matches:
                other.unlink()
        except (OSError, ValueError, AttributeError):
            continue
    print(f"Profile fitted to {args.calibrate} alone (`mlbert simulate calibrate`); every other "
          "row is a prediction.\n")
    return scratch


def phase_cells(out):
    """The published phases beside the predicted ones, as three more table cells."""
    published, predicted = out["published_phases"], out["prediction"]
    step = predicted["mean_step_seconds"]["total"]

    def cell(logged, modelled, scale, digits):
        text = "-" if logged is None else f"{logged * scale:.{digits}f}"
        return f" {text} / {modelled * scale:.{digits}f} |"
    return (cell(published["step_seconds"], step, 1e3, 1) +
            cell(published["eval_seconds"], predicted["eval_seconds"], 1e3, 0) +
            cell(published["interval_step_seconds"], out["predicted_interval_step_seconds"], 1e3,
                 1) +
            cell(published["run_start_seconds"], predicted["run_start_seconds"], 1, 2))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("round_dir", type=pathlib.Path)
    parser.add_argument("ruleset")
    parser.add_argument("--mlbert", default="build/bin/mlbert")
    parser.add_argument("--systems-dir", type=pathlib.Path, default=pathlib.Path("systems"))
    parser.add_argument("--calibrate", metavar="SUBMITTER/SYSTEM",
                        help="fit the profile to this result of the round and predict the rest")
    parser.add_argument("--phases", action="store_true",
                        help="add the phases the logs time beside the predicted ones: step (ms, "
                             "between evaluations), evaluation (ms), run start (s)")
    args = parser.parse_args()
    if args.calibrate:
        with tempfile.TemporaryDirectory(prefix="simulate_round.") as scratch:
            args.systems_dir = calibrated_systems_dir(args, pathlib.Path(scratch))
            return predict_round(args)
    return predict_round(args)


def predict_round(args):
    fitted = calibration_sources(args.systems_dir)
    errors = []
    extra = (" step ms pub / pred | eval ms pub / pred | step + eval share ms pub / pred |"
             " start s pub / pred |") if args.phases else ""
    blank = " | | | |" if args.phases else ""
    print("| submitter / system | nodes x GPUs | published s | predicted s | error |" + extra)
    print("|---|---|---|---|---|" + ("---|---|---|---|" if args.phases else ""))
    for submitter, system_name, folder, description in folders(args.round_dir):
        name = f"{submitter} / {system_name}"
        try:
            run = subprocess.run(
                [args.mlbert, "simulate", "--results", str(folder), "--ruleset", args.ruleset,
                 "--systems-dir", str(args.systems_dir), "--json"],
                capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            print(f"| {name} | | | | no answer in 300 s |" + blank)
            continue
        if run.returncode != 0:
            reason = (run.stderr.strip().splitlines() or ["(no message)"])[-1]
            reason = reason.replace("mlbert: error: ", "").replace(str(args.round_dir) + "/", "")
            print(f"| {name} | | | | not modelled: {reason.replace('|', '/')} |" + blank)
            continue
        out = json.loads(run.stdout)
        system = json.loads(description.read_text())
        shape = f"{system.get('number_of_nodes')} x {system.get('accelerators_per_node')}"
        error = out["error"]
        version = "v" + ".".join(args.ruleset.split(".")[:2])
        if is_calibration(fitted, version, submitter, system_name):
            note = " (calibration case)"
        elif is_republished_calibration(fitted, submitter, out["published_olympic_seconds"]):
            note = " (calibration case of an earlier round, re-published)"
        else:
            note = ""
        if not note:
            errors.append(error)
        print(f"| {name} | {shape} | {out['published_olympic_seconds']:.2f} | "
              f"{out['predicted_olympic_seconds']:.2f} | {error * 100:+.1f}%{note} |" +
              (phase_cells(out) if args.phases else ""))
    if errors:
        within = lambda bound: sum(abs(e) <= bound for e in errors)
        print(f"\n{len(errors)} predictions: median |error| "
              f"{statistics.median(abs(e) for e in errors) * 100:.1f}%, "
              f"{within(0.10)} within 10%, {within(0.15)} within 15%, {within(0.25)} within 25%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
