#!/usr/bin/env python3
"""Speed of `mlbert score | rcp | package` against the official mlperf_logging tools, same run.

On real published BERT result directories from ../shared/fixtures, three figures per case:
- mlbert: the whole process given by --mlbert (start-up included; `mlbert` runs the log toolkit's
  subcommands in its own process, without loading CUDA, MPI, HDF5 or BLAS);
- library: the same call inside one process (logging_audit_bench, median of repeats);
- official: the Python function the official command runs, called in this interpreter (no
  interpreter start-up charged to it).
Medians of several repetitions; ratios are official / mlbert and official / library.

usage: audit_bench.py --mlbert build/bin/mlbert --lib build/bin/logging_audit_bench
                      [--shared ../shared] [--repeat 5]
(run with a Python that has tests/parity/requirements.txt installed)
"""
import argparse
import contextlib
import io
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

from mlperf_logging.package_checker import package_checker
from mlperf_logging.rcp_checker import rcp_checker
from mlperf_logging.result_summarizer import result_summarizer

logging.disable(logging.CRITICAL)
warnings.simplefilter("ignore")


def median_seconds(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_mlbert(mlbert, args):
    proc = subprocess.run([mlbert, *args], capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"mlbert {' '.join(args)} exited {proc.returncode}: {proc.stderr}")


def quiet(fn):
    def wrapped():
        with contextlib.redirect_stdout(io.StringIO()):
            return fn()
    return wrapped


def assemble_package(root, fixtures, system_path):
    source = os.path.join(fixtures, system_path)
    system = os.path.basename(system_path)
    org = os.path.join(root, "org")
    os.makedirs(os.path.join(org, "systems"))
    shutil.copyfile(os.path.join(source, "system.json"), os.path.join(org, "systems", system + ".json"))
    results = os.path.join(org, "results", system, "bert")
    os.makedirs(results)
    for name in os.listdir(source):
        if name.startswith("result_"):
            shutil.copyfile(os.path.join(source, name), os.path.join(results, name))
    impl = os.path.join(org, "benchmarks", "bert", "implementations", "pytorch")
    os.makedirs(impl)
    open(os.path.join(impl, "run_and_time.sh"), "w").write("#!/bin/bash\n")
    return org, results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mlbert", required=True)
    parser.add_argument("--lib", required=True, help="the logging_audit_bench executable")
    parser.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    fixtures = os.path.join(args.shared, "fixtures", "mlperf_logs")
    if not os.path.isdir(fixtures):
        sys.exit(f"{fixtures} not found: the bench runs on the published fixture logs")

    h200 = os.path.join(fixtures, "v4.0/NVIDIA/h200_ngc23.09_pytorch")
    samsung = os.path.join(fixtures, "v2.0/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch")
    root = tempfile.mkdtemp(prefix="mlbert_audit_bench_")
    try:
        org, results = assemble_package(root, fixtures, "v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch")
        cases = [
            ("score, v4.0 H200 (10 logs, 1.3 MB)", ["score", "4.0.0", h200],
             lambda: run_mlbert(args.mlbert, ["score", "--json", "--ruleset", "4.0.0", h200]),
             quiet(lambda: result_summarizer._compute_strong_score_standalone(
                 "bert", "h200", False, h200, "training", "4.0.0"))),
            ("score, v2.0 Samsung n128 (10 logs, 9.6 MB)", ["score", "2.0.0", samsung],
             lambda: run_mlbert(args.mlbert, ["score", "--json", "--ruleset", "2.0.0", samsung]),
             quiet(lambda: result_summarizer._compute_strong_score_standalone(
                 "bert", "samsung", False, samsung, "training", "2.0.0"))),
            ("rcp, v4.0 H200 (interpolated RCP)", ["rcp", "4.0.0", h200],
             lambda: run_mlbert(args.mlbert, ["rcp", "--json", "--ruleset", "4.0.0", h200]),
             quiet(lambda: rcp_checker.check_directory(h200, "training", "4.0.0", False, False,
                                                       rcp_pass="pruned_rcps"))),
            ("package, v3.0 DGX H100 (system, 10 logs, seeds, RCP)", ["package", "3.0.0", org],
             lambda: run_mlbert(args.mlbert, ["package", "--json", "--ruleset", "3.0.0", org]),
             quiet(lambda: package_checker.check_systems(org, "training", "3.0.0") and
                   package_checker.check_training_result_files(org, "training", "3.0.0", False, False,
                                                               False, False, False))),
        ]
        print(f"{'case':53s} {'mlbert':>9s} {'library':>9s} {'official':>9s} {'vs mlbert':>9s} {'vs lib':>8s}")
        for name, lib_args, ours, theirs in cases:
            ours()  # warm the page cache
            t_ours = median_seconds(ours, args.repeat)
            lib = subprocess.run([args.lib, str(args.repeat), *lib_args], capture_output=True, text=True, check=True)
            t_lib = float(lib.stdout) / 1e3
            t_theirs = median_seconds(theirs, max(1, args.repeat // 2))
            print(f"{name:53s} {t_ours * 1e3:7.1f}ms {t_lib * 1e3:7.1f}ms {t_theirs * 1e3:7.0f}ms "
                  f"{t_theirs / t_ours:8.1f}x {t_theirs / t_lib:7.1f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
