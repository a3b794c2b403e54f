#!/usr/bin/env python3
"""MLLOG emitter parity: the C++ emitter writes the same bytes as the official Python mllog.

Feeds the same calls to the official `mlperf_logging.mllog` (pinned in requirements.txt) and to the
C++ emitter (tests/mlperf_logging/logging_check_emit, path given as argv[1]), then compares the
lines byte for byte:
  * _encode_log / format_line on random nested values, with floats drawn from every magnitude
    (raw bit patterns, decimal literals near the 1e-4 and 1e16 repr thresholds, integral floats,
    signed zero, subnormals, inf, nan) and strings with control, Latin-1, BMP and astral characters;
  * MLLogger / Logger call sequences: namespaces, clear_line, metadata merge and its warnings.
Exit status: 0 pass, 1 difference (the first ones are printed), 77 oracle missing.
"""
import io
import json
import logging
import math
import random
import re
import struct
import subprocess
import sys

try:
    from mlperf_logging.mllog import mllog as official
except ImportError as e:  # pragma: no cover - the venv lacks the oracle
    print(f"SKIPPED: mlperf_logging is not importable ({e})")
    sys.exit(77)

EMIT = sys.argv[1] if len(sys.argv) > 1 else None
if not EMIT:
    print("usage: logging_check_mllog_parity.py PATH_TO_logging_check_emit")
    sys.exit(2)

rng = random.Random(20240611)
EVENT_TYPES = ["POINT_IN_TIME", "INTERVAL_START", "INTERVAL_END"]


def random_float():
    kind = rng.randrange(9)
    if kind == 0:  # any finite bit pattern
        while True:
            x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            if math.isfinite(x):
                return x
    if kind == 1:  # around the exponent thresholds of repr
        return float(f"{rng.randint(1, 99999)}e{rng.choice([-6, -5, -4, -3, 14, 15, 16, 17])}")
    if kind == 2:
        return float(rng.randint(-10**18, 10**18))  # integral floats
    if kind == 3:
        return rng.choice([0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e16, 1e-4,
                           9999999999999998.0, 0.00039299421615882676, 1271.0, 1e-06])
    if kind == 4:
        return rng.choice([math.inf, -math.inf, math.nan])
    if kind == 5:
        return rng.random()
    if kind == 6:
        return rng.uniform(-1e6, 1e6)
    if kind == 7:
        return round(rng.random(), rng.randint(1, 17))
    return 2.0 ** rng.randint(-1074, 1023)


def random_string():
    alphabet = ["a", "Z", "0", " ", "_", "/", '"', "\\", "\n", "\t", "\x00", "\x1f", "\x7f", "\x80", "\xe9",
                "\xff", "\u0100", "\u20ac", "\ufeff", "\U0001f600", "\U0010ffff"]
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))


def random_value(depth=0):
    kind = rng.randrange(9 if depth < 3 else 7)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, 1, -1, rng.randint(-2**63, 2**63 - 1), rng.randint(0, 2**64 - 1)])
    if kind in (3, 4):
        return random_float()
    if kind in (5, 6):
        return random_string()
    if kind == 7:
        return [random_value(depth + 1) for _ in range(rng.randint(0, 4))]
    return {random_string(): random_value(depth + 1) for _ in range(rng.randint(0, 4))}


def wire(v):
    """The request encoding of a value: NaN and infinities spelled as {"$float": ...}."""
    if isinstance(v, float) and not math.isfinite(v):
        return {"$float": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
    if isinstance(v, list):
        return [wire(x) for x in v]
    if isinstance(v, dict):
        return {k: wire(x) for k, x in v.items()}
    return v


def run_emitter(requests):
    text = "".join(json.dumps(r, ensure_ascii=True, allow_nan=False) + "\n" for r in requests)
    out = subprocess.run([EMIT], input=text.encode(), capture_output=True, check=True)
    return out.stdout.decode("utf-8")


def compare(kind, expected_lines, got_lines, inputs):
    failures = 0
    for i, (e, g) in enumerate(zip(expected_lines, got_lines)):
        if e != g:
            failures += 1
            if failures <= 5:
                print(f"{kind} #{i} differs for input {inputs[i]!r}:\n  python: {e!r}\n  mlbert: {g!r}")
    if len(expected_lines) != len(got_lines):
        print(f"{kind}: {len(expected_lines)} python lines, {len(got_lines)} mlbert lines")
        failures += 1
    return failures


def format_parity(n):
    requests, expected, inputs = [], [], []
    for _ in range(n):
        ns = rng.choice(["", "", "worker0", random_string()])
        time_ms = rng.randint(0, 2**53)
        event_type = rng.choice(EVENT_TYPES)
        key = rng.choice(["run_start", "eval_accuracy", "opt_lamb_epsilon", random_string()])
        value = random_value()
        metadata = {"file": "run_pretraining.py", "lineno": rng.randint(1, 5000)}
        for _ in range(rng.randint(0, 3)):
            metadata[rng.choice(["epoch_num", "samples_count", "status", random_string()])] = random_value(1)
        expected.append(official._encode_log(ns, time_ms, event_type, key, value, metadata))
        requests.append({"mode": "format", "namespace": ns, "time_ms": time_ms, "event_type": event_type,
                         "key": key, "value": wire(value), "metadata": wire(metadata)})
        inputs.append((ns, time_ms, event_type, key, value, metadata))
    got = run_emitter(requests).split("\n")[:-1]
    return compare("format", expected, got, inputs)


FILE_LINENO = re.compile(r'"file": "(?:[^"\\]|\\.)*", "lineno": -?\d+')


def normalize(text):
    return FILE_LINENO.sub('"file": F, "lineno": L', text)


def logger_parity(n_sequences):
    failures = 0
    for s in range(n_sequences):
        default_namespace = rng.choice(["", "node1"])
        clear_line = rng.random() < 0.2
        stream = io.StringIO()
        handler = logging.StreamHandler(stream)
        py_logger = logging.getLogger(f"logging_check_parity_{s}")
        py_logger.propagate = False
        py_logger.setLevel(logging.INFO)
        py_logger.addHandler(handler)
        mll = official.MLLogger(logger=py_logger, default_namespace=default_namespace,
                                default_clear_line=clear_line)
        requests = [{"mode": "logger", "default_namespace": default_namespace, "clear_line": clear_line}]
        calls = []
        for _ in range(rng.randint(1, 12)):
            event_type = rng.choice(EVENT_TYPES)
            key = rng.choice(["init_start", "block_start", "eval_accuracy", "weights_initialization"])
            value = random_value(1)
            metadata = rng.choice([None, {}, {"epoch_num": rng.randint(0, 10**7)},
                                   {"first_epoch_num": 0, "epoch_count": 150000},
                                   {"lineno": 7}, {"file": "elsewhere.py", "status": "success"},
                                   [1, 2], "text", 0, {"tensor": random_string()}])
            time_ms = rng.randint(1, 2**50)
            kwargs = {"time_ms": time_ms}
            request = {"mode": "log", "event_type": event_type, "key": key, "value": wire(value),
                       "metadata": wire(metadata), "time_ms": time_ms}
            if rng.random() < 0.3:
                kwargs["namespace"] = request["namespace"] = rng.choice(["", "gpu3"])
            if rng.random() < 0.2:
                kwargs["clear_line"] = request["clear_line"] = rng.random() < 0.5
            method = {"POINT_IN_TIME": mll.event, "INTERVAL_START": mll.start, "INTERVAL_END": mll.end}[event_type]
            method(key, value, metadata=metadata, **kwargs)
            requests.append(request)
            calls.append((event_type, key, value, metadata, kwargs))
        py_logger.removeHandler(handler)
        expected = normalize(stream.getvalue())
        got = normalize(run_emitter(requests))
        if expected != got:
            failures += 1
            if failures <= 3:
                print(f"logger sequence {s} differs; calls={calls!r}\n  python: {expected!r}\n  mlbert: {got!r}")
    return failures


def main():
    failures = format_parity(20000)
    failures += logger_parity(200)
    if failures:
        print(f"FAILED: {failures} difference(s) between the official mllog and the C++ emitter")
        return 1
    print("mllog parity: 20000 encoded lines and 200 logger sequences identical to the official mllog")
    return 0


if __name__ == "__main__":
    sys.exit(main())
