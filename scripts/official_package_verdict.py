"""The official package checker's verdict on a package, for the scripts and tests that compare it
with `mlbert package`.

mlperf_logging's check_training_package returns nothing: its verdict is the one "PACKAGE CHECKER
FOUND ..." line it logs. `logged_lines` runs it with the root logger opened to INFO for the call
(and put back after) and returns every line it logged; an exception of the checker (it stops with
a traceback on some packages) propagates to the caller, who decides what that means.
"""
import contextlib
import io
import logging
import os
import warnings

from mlperf_logging.package_checker import package_checker


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def logged_lines(org, ruleset, quiet=False, werror=False, rcp_bypass=False, train_samples=False,
                 seed_bypass=False):
    handler, root = _Lines(), logging.getLogger()
    level = root.level
    logging.disable(logging.NOTSET)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            package_checker.check_training_package(str(org), "training", ruleset, quiet, werror,
                                                   rcp_bypass, train_samples, seed_bypass,
                                                   os.devnull)
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        logging.disable(logging.CRITICAL)
    return handler.lines


def verdicts(lines):
    """The verdict lines among `lines` (exactly one when the checker ran to its end)."""
    return [line for line in lines if "PACKAGE CHECKER FOUND" in line]


def passed(verdict_line):
    return "FOUND NO ERRORS" in verdict_line
