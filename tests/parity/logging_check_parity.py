#!/usr/bin/env python3
"""Compliance checker parity: `mlbert check` gives the official checker's verdict, log by log.

1. Rule tables: `mlbert check --print-rules` must reproduce every official YAML config a BERT log can
   reach (KEY names, REQ, CHECK/POST/ATLEAST_ONE_CHECK sources, BEGIN and END code) for each ruleset;
   the configs reachable are found by following the official files' enqueue_config calls, so a
   config mlbert leaves out is a difference, not a comparison skipped.
2. Verdicts: a clean synthetic BERT log of this script's own making (and the fixture logs of
   ../shared when present) is mutated in many ways -- dropped keys, duplicated keys with equal and
   unequal values, init after run_start, init windows, accuracy below target, missing epoch_num,
   bad JSON, truncation, wrong division or benchmark, missing weights tensors, empty and binary
   files, invalid UTF-8, deep nesting, huge numbers, odd line endings... -- for every ruleset, both
   divisions, with and without --werror. The official checker (the pinned mlperf-logging package,
   imported in-process) and `mlbert check` judge every log; any difference fails the test. Under
   5.1.0 (no BERT) every BERT log fails: there mlbert must also name the rule the official checker
   fails it on, submission_benchmark, with the reason.
Exit status: 0 pass, 1 difference or no mlbert binary, 77 oracle missing.
"""
import functools
import json
import logging
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time

try:
    import yaml
    from mlperf_logging.compliance_checker import mlp_compliance
    from mlperf_logging.mllog import mllog as official_mllog
except ImportError as e:  # pragma: no cover
    print(f"SKIPPED: the official mlperf_logging package is not importable ({e})")
    sys.exit(77)

MLBERT = os.environ.get("MLBERT_BIN")
if not MLBERT or not os.path.exists(MLBERT):
    # The oracle is here, the project is not: that is a broken build, not a skip.
    print(f"FAILED: MLBERT_BIN ({MLBERT!r}) does not name the mlbert binary")
    sys.exit(1)
SHARED = os.environ.get("MLBERT_SHARED_DIR", "")
RULESETS = ["0.7.0", "1.0.0", "1.1.0", "2.0.0", "2.1.0", "3.0.0", "3.1.0", "4.0.0", "4.1.0", "5.0.0", "5.1.0"]
NO_BERT = {"5.1.0"}  # rulesets whose benchmark lists no longer hold bert
PACKAGE_DIR = os.path.dirname(mlp_compliance.__file__)
rng = random.Random(7)

# ---------------------------------------------------------------------------------------------
# 1. rule tables against the official YAML


def squash(text):
    return "".join(str(text).split())


def yaml_config(name):
    with open(os.path.join(PACKAGE_DIR, name)) as f:
        return yaml.load(f, Loader=yaml.BaseLoader)


def reachable_configs(ruleset):
    """The config files the official queue can reach from common.yaml for a BERT log: each POST
    enqueue_config('X{}.yaml'.format(v['value'])) of submission_division (closed or open) and of
    submission_benchmark (bert), kept when the package ships the file."""
    values = {"submission_division": ["closed", "open"], "submission_benchmark": ["bert"]}
    found, queue = [], [f"training_{ruleset}/common.yaml"]
    while queue:
        name = queue.pop(0)
        if name in found or not os.path.exists(os.path.join(PACKAGE_DIR, name)):
            continue
        found.append(name)
        for record in yaml_config(name):
            if list(record)[0] != "KEY":
                continue
            key = record["KEY"]
            post = key.get("POST", "")
            if "enqueue_config(" not in post or key["NAME"] not in values:
                continue
            pattern = post.split("enqueue_config('", 1)[1].split("'", 1)[0]
            queue += [pattern.format(v) for v in values[key["NAME"]]]
    return found


def compare_rules(ruleset):
    problems = []
    out = subprocess.run([MLBERT, "check", "--ruleset", ruleset, "--print-rules"], capture_output=True, check=True)
    mine = json.loads(out.stdout)
    printed = [config["name"] for config in mine["configs"]]
    reachable = reachable_configs(ruleset)
    if sorted(printed) != sorted(reachable):
        problems.append(f"{ruleset}: mlbert encodes configs {sorted(printed)}, the official queue reaches "
                        f"{sorted(reachable)}")
    if len(reachable) < 3:
        problems.append(f"{ruleset}: only {reachable} reachable: the reachability walk found nothing to compare")
    for config in mine["configs"]:
        official = yaml_config(config["name"])
        where = f"{ruleset} {config['name']}"
        begins = [x["BEGIN"]["CODE"] for x in official if list(x)[0] == "BEGIN"]
        if squash(begins[0] if begins else "") != squash(config.get("BEGIN", "")):
            problems.append(f"{where}: BEGIN differs")
        ends = [x["END"] for x in official if list(x)[0] == "END"]
        official_end = ends[0].get("CHECK", "") if ends else ""
        if squash(official_end) != squash(config.get("END", "")):
            problems.append(f"{where}: END differs")
        keys = [x["KEY"] for x in official if list(x)[0] == "KEY"]
        if [k["NAME"] for k in keys] != [k["NAME"] for k in config["keys"]]:
            problems.append(f"{where}: keys {[k['NAME'] for k in keys]} != {[k['NAME'] for k in config['keys']]}")
            continue
        for theirs, ours in zip(keys, config["keys"]):
            checks = theirs.get("CHECK", [])
            checks = [checks] if isinstance(checks, str) else checks
            fields = {
                "REQ": (theirs.get("REQ", ""), ours.get("REQ", "")),
                "CHECK": ([c.strip() for c in checks], ours.get("CHECK", [])),
                "POST": (theirs.get("POST", "").strip(), ours.get("POST", "")),
                "ATLEAST_ONE_CHECK": (theirs.get("ATLEAST_ONE_CHECK", "").strip(), ours.get("ATLEAST_ONE_CHECK", "")),
            }
            for field, (a, b) in fields.items():
                if a != b:
                    problems.append(f"{where} {theirs['NAME']} {field}: official {a!r} != mlbert {b!r}")
            extra = set(theirs) - {"NAME", "REQ", "CHECK", "POST", "ATLEAST_ONE_CHECK"}
            if extra:
                problems.append(f"{where} {theirs['NAME']}: unsupported fields {sorted(extra)}")
    return problems


# ---------------------------------------------------------------------------------------------
# 2. a clean synthetic log and its mutations

TENSORS = None


def bert_tensors():
    global TENSORS
    if TENSORS is None:
        end = [x["END"] for x in yaml_config("training_1.1.0/closed_bert.yaml") if list(x)[0] == "END"][0]
        names = end["CHECK"].split("sorted([", 1)[1].rsplit("])", 1)[0]
        TENSORS = [t.strip().strip('"') for t in names.split(",") if t.strip()]
        assert len(TENSORS) == 398, len(TENSORS)
    return TENSORS


def line(time_ms, event_type, key, value=None, metadata=None, lineno=[0]):
    lineno[0] += 1
    md = {"file": "train.py", "lineno": lineno[0]}
    md.update(metadata or {})
    return official_mllog._encode_log("", time_ms, event_type, key, value, md)


def clean_log(ruleset, division):
    """A compliant BERT log (LAMB, GBS 4096) written independently of the C++ example log."""
    t = 1650000000000
    L = []
    P, S, E = "POINT_IN_TIME", "INTERVAL_START", "INTERVAL_END"
    L.append(line(t, P, "cache_clear", True))
    L.append(line(t, S, "init_start"))
    L.append(line(t + 1, P, "submission_benchmark", "bert"))
    if ruleset != "5.0.0":  # the one round without them
        L.append(line(t + 1, P, "submission_org", "Parity Inc."))
        L.append(line(t + 1, P, "submission_platform", "8xH200"))
    L.append(line(t + 1, P, "submission_division", division))
    if ruleset <= "4.0.0":
        L.append(line(t + 1, P, "submission_status", "research"))
    if "1.1.0" <= ruleset <= "2.1.0":  # other rulesets ignore them; leaving them out keeps the corpus fast
        for tensor in bert_tensors():
            L.append(line(t + 2, P, "weights_initialization", None, {"tensor": tensor}))
    for key, value in [("global_batch_size", 4096), ("opt_base_learning_rate", 0.0024),
                       ("opt_lamb_epsilon" if ruleset >= "2.1.0" else "opt_epsilon", 1e-06),
                       ("opt_learning_rate_training_steps", 855), ("opt_learning_rate_warmup_steps", 0),
                       ("num_warmup_steps", 0), ("start_warmup_step", 0), ("opt_lamb_beta_1", 0.66),
                       ("opt_lamb_beta_2", 0.998), ("opt_lamb_weight_decay_rate", 0.01),
                       ("gradient_accumulation_steps", 2), ("seed", 4242), ("train_samples", 156725653),
                       ("eval_samples", 10000), ("max_sequence_length", 512)]:
        L.append(line(t + 3, P, key, value))
    t += 600000
    L.append(line(t, E, "init_stop"))
    L.append(line(t + 5, S, "run_start"))
    samples = 175000
    for i, acc in enumerate([0.5893, 0.6795, 0.7134, 0.7213]):
        first, last = i * samples, (i + 1) * samples
        t += 120000
        L.append(line(t, S, "block_start", None, {"first_epoch_num": first, "epoch_count": samples,
                                                  "samples_count": first}))
        L.append("[rank 0] step 120 loss 1.9921 lr 0.0023 throughput 31337.1 samples/s")
        L.append(line(t + 10, S, "eval_start", None, {"epoch_num": last, "samples_count": last}))
        L.append(line(t + 900, P, "eval_accuracy", acc, {"epoch_num": last, "samples_count": last}))
        L.append(line(t + 901, E, "eval_stop", None, {"epoch_num": last, "samples_count": last}))
        L.append(line(t + 902, E, "block_stop", None, {"first_epoch_num": first, "samples_count": last}))
    L.append(line(t + 1000, E, "run_stop", None, {"status": "success"}))
    return [l + "\n" for l in L]


def record_of(text):
    at = text.rfind(":::MLLOG ")
    if at < 0:
        return None
    try:
        return json.loads(text[at + 9:])
    except ValueError:
        return None


@functools.lru_cache(maxsize=None)
def key_of(text):
    r = record_of(text)
    key = r.get("key") if isinstance(r, dict) else None
    return key if isinstance(key, str) else None


def encode(r):
    return ":::MLLOG " + json.dumps(r) + "\n"


def edit(lines, key, fn, which=None):
    """fn(record) -> record or None (drop); which: index among that key's records, or None for all."""
    out, seen = [], 0
    for l in lines:
        if key_of(l) == key:
            hit = which is None or seen == which or (which == -1 and seen == sum(key_of(x) == key for x in lines) - 1)
            seen += 1
            if hit:
                r = fn(record_of(l))
                if r is not None:
                    out.append(r if isinstance(r, str) else encode(r))
                continue
        out.append(l)
    return out


def setv(value):
    def fn(r):
        r["value"] = value
        return r
    return fn


def setmd(**fields):
    def fn(r):
        r["metadata"].update(fields)
        return r
    return fn


def delmd(*names):
    def fn(r):
        for n in names:
            r["metadata"].pop(n, None)
        return r
    return fn


def drop(lines, key):
    return [l for l in lines if key_of(l) != key]


def duplicate(lines, key, fn=None):
    out = []
    for l in lines:
        out.append(l)
        if key_of(l) == key:
            out.append(encode(fn(record_of(l))) if fn else l)
    return out


def move_after(lines, key, after):
    moved = [l for l in lines if key_of(l) == key][:1]
    rest = [l for l in lines if not (moved and l is moved[0])]
    out = []
    for l in rest:
        out.append(l)
        if key_of(l) == after and moved:
            out.extend(moved)
            moved = []
    return out + moved


def insert_after(lines, after, text):
    out, done = [], False
    for l in lines:
        out.append(l)
        if not done and key_of(l) == after:
            out.append(text)
            done = True
    return out


def shift_time(key, delta_ms):
    def fn(r):
        r["time_ms"] += delta_ms
        return r
    return fn


def raw(text):
    return [text]


# Marks mutations that turn the log into another benchmark's: the official checker then applies that
# benchmark's rules, which mlbert does not encode (it answers FAILED: "BERT rules only").
NON_BERT = "[non-BERT benchmark]"

RULE_KEYS = ["submission_org", "submission_platform", "submission_division", "submission_status",
             "submission_benchmark", "cache_clear", "init_start", "init_stop", "run_start", "run_stop",
             "block_start", "block_stop", "eval_start", "eval_stop", "eval_accuracy", "train_samples",
             "eval_samples", "gradient_accumulation_steps", "weights_initialization", "global_batch_size",
             "opt_base_learning_rate", "opt_epsilon", "opt_lamb_epsilon", "opt_learning_rate_training_steps",
             "opt_learning_rate_warmup_steps", "num_warmup_steps", "start_warmup_step", "opt_lamb_beta_1",
             "opt_lamb_beta_2", "opt_lamb_weight_decay_rate"]


# Mutations that exercise the reader and the JSON dialect more than the rules: they run on a few
# ruleset/division pairs only (the parser is the same for all), the others on every pair.
INPUT_LEVEL = {
    "duplicate train_samples 2**64 vs 2**64+1", "duplicate train_samples 10**30 twice",
    "duplicate train_samples NaN twice", "duplicate eval_samples dict in other order", "init_stop time_ms as string",
    "init_stop time_ms as 1e400", "init_start time_ms NaN", "time_ms huge integer", "time_ms null", "time_ms text",
    "accuracy list", "accuracy 10**30", "block_start metadata null", "block_start metadata list",
    "block_start metadata string", "division number", "division null", "division path traversal",
    "gradient_accumulation_steps 10**400", "unknown keys", "unhashable key", "missing metadata field",
    "missing key field", "record is a list", "bad JSON line", "bad JSON in a dropped prefix", "two tokens on a line",
    "token alone", "token then form feed", "trailing NEL and NBSP", "deep nesting 50", "deep nesting 3000",
    "integer of 5000 digits", "integer of 4300 digits", "float 1e999", "lone surrogate escape",
    "duplicate keys inside a record", "CRLF line ends", "CR line ends", "prefix before every token",
    "control character in a string", "empty file", "whitespace only", "no MLLOG lines", "truncated mid-record",
    "truncated mid-file", "binary garbage", "binary garbage around the log", "invalid UTF-8 in strings",
    "NUL bytes in a line", "weights: all tensors as one list",
}
INPUT_LEVEL_PAIRS = {("1.1.0", "closed"), ("4.0.0", "open")}


def mutations(base):
    """(name, lines or bytes) pairs derived from one clean log."""
    out = [("clean", base)]
    present = {key_of(l) for l in base}
    for key in RULE_KEYS:
        if key in present:
            out.append((f"drop {key}", drop(base, key)))
    for key in ["submission_division", "submission_benchmark", "global_batch_size", "train_samples", "run_start",
                "opt_epsilon", "gradient_accumulation_steps"]:
        if key in present:
            out.append((f"duplicate {key} (same value)", duplicate(base, key)))
            out.append((f"duplicate {key} (other value)", duplicate(base, key, setv(12345))))
    out += [
        ("duplicate global_batch_size 4096 vs 4096.0", duplicate(base, "global_batch_size", setv(4096.0))),
        ("duplicate gradient_accumulation_steps 1 vs true",
         duplicate(edit(base, "gradient_accumulation_steps", setv(1)), "gradient_accumulation_steps", setv(True))),
        ("duplicate train_samples 2**64 vs 2**64+1",
         duplicate(edit(base, "train_samples", setv(2**64)), "train_samples", setv(2**64 + 1))),
        ("duplicate train_samples 10**30 twice", duplicate(edit(base, "train_samples", setv(10**30)), "train_samples")),
        ("duplicate train_samples NaN twice", [l.replace('"value": 156725653', '"value": NaN') for l in
                                               duplicate(base, "train_samples")]),
        ("duplicate eval_samples dict in other order",
         duplicate(edit(base, "eval_samples", setv({"a": 1, "b": [1, 2]})), "eval_samples",
                   setv({"b": [1.0, 2], "a": True}))),
        ("init_start after run_start", move_after(base, "init_start", "run_start")),
        ("init_stop after run_start", move_after(base, "init_stop", "run_start")),
        ("run_start before init_stop", move_after(base, "run_start", "eval_samples")),
        ("second init_start after run_start", insert_after(base, "run_start", base[1])),
        ("division after init_stop", move_after(base, "submission_division", "init_stop")),
        ("benchmark after run_stop", move_after(base, "submission_benchmark", "run_stop")),
        ("init 19 minutes", edit(base, "init_stop", shift_time("init_stop", 19 * 60000 - 600000))),
        ("init 21 minutes", edit(base, "init_stop", shift_time("init_stop", 21 * 60000 - 600000))),
        ("init 29 minutes", edit(base, "init_stop", shift_time("init_stop", 29 * 60000 - 600000))),
        ("init 31 minutes", edit(base, "init_stop", shift_time("init_stop", 31 * 60000 - 600000))),
        ("init 239 minutes", edit(base, "init_stop", shift_time("init_stop", 239 * 60000 - 600000))),
        ("init 241 minutes", edit(base, "init_stop", shift_time("init_stop", 241 * 60000 - 600000))),
        ("init_stop time_ms as string", edit(base, "init_stop", lambda r: {**r, "time_ms": str(r["time_ms"])})),
        ("init_stop time_ms as 1e400", [l.replace(str(record_of(l)["time_ms"]), "1e400")
                                        if key_of(l) == "init_stop" else l for l in base]),
        ("init_start time_ms NaN", [l.replace(str(record_of(l)["time_ms"]), "NaN")
                                    if key_of(l) == "init_start" else l for l in base]),
        ("time_ms huge integer", insert_after(base, "run_start", encode({"time_ms": 10**400, "key": "x", "value": 1,
                                                                          "metadata": {}}))),
        ("time_ms null", insert_after(base, "run_start", encode({"time_ms": None, "key": "x", "value": 1,
                                                                  "metadata": {}}))),
        ("time_ms text", insert_after(base, "run_start", encode({"time_ms": "soon", "key": "x", "value": 1,
                                                                  "metadata": {}}))),
        ("accuracy below target", edit(base, "eval_accuracy", setv(0.7199))),
        ("accuracy 0.712", edit(base, "eval_accuracy", setv(0.712))),
        ("accuracy 0.7119", edit(base, "eval_accuracy", setv(0.7119))),
        ("batch 8191, accuracy 0.711", edit(edit(base, "global_batch_size", setv(8191)), "eval_accuracy",
                                            setv(0.711))),
        ("batch 8192, accuracy 0.706", edit(edit(base, "global_batch_size", setv(8192)), "eval_accuracy",
                                            setv(0.706))),
        ("batch 8192.0, accuracy 0.7059", edit(edit(base, "global_batch_size", setv(8192.0)), "eval_accuracy",
                                               setv(0.7059))),
        ("batch as text", edit(base, "global_batch_size", setv("4096"))),
        ("batch null", edit(base, "global_batch_size", setv(None))),
        ("batch after the evaluations", move_after(base, "global_batch_size", "run_stop")),
        ("a second batch size 8192 before the evals", insert_after(
            edit(base, "eval_accuracy", setv(0.707)), "block_start",
            line(1650000600100, "POINT_IN_TIME", "global_batch_size", 8192) + "\n")),
        ("accuracy exactly 0.720", edit(edit(base, "eval_accuracy", setv(0.5)), "eval_accuracy", setv(0.72), -1)),
        ("accuracy 1.0", edit(base, "eval_accuracy", setv(1.0))),
        ("accuracy NaN then 0.75", edit(edit(base, "eval_accuracy", setv(float("nan")), 0), "eval_accuracy",
                                        setv(0.75), -1)),
        ("accuracy as string", edit(base, "eval_accuracy", setv("0.75"), 1)),
        ("accuracy null", edit(base, "eval_accuracy", setv(None), 2)),
        ("accuracy true", edit(base, "eval_accuracy", setv(True))),
        ("accuracy 10**30", edit(base, "eval_accuracy", setv(10**30))),
        ("accuracy list", edit(base, "eval_accuracy", setv([0.75]), 0)),
        ("missing epoch_num in one eval_accuracy", edit(base, "eval_accuracy", delmd("epoch_num"), 1)),
        ("missing epoch_num and samples_count", edit(base, "eval_accuracy", delmd("epoch_num", "samples_count"))),
        ("eval_start with step_num only", edit(base, "eval_start", lambda r: {**r, "metadata": {"step_num": 3}})),
        ("block_start without epoch_count", edit(base, "block_start", delmd("epoch_count"), 0)),
        ("block_start samples_count only", edit(base, "block_start", lambda r: {**r, "metadata": {"samples_count": 1}})),
        ("block_start epoch_count 0", edit(base, "block_start", setmd(epoch_count=0), 0)),
        ("block_start epoch_count text", edit(base, "block_start", setmd(epoch_count="5"), 0)),
        ("block_start samples_count -1", edit(base, "block_start", setmd(samples_count=-1), 0)),
        ("block_start metadata null", edit(base, "block_start", lambda r: {**r, "metadata": None}, 0)),
        ("block_start metadata list", edit(base, "block_start", lambda r: {**r, "metadata": ["epoch_count"]}, 0)),
        ("block_start metadata string", edit(base, "block_start",
                                             lambda r: {**r, "metadata": "epoch_count first_epoch_num"}, 0)),
        ("blocks as epochs", edit(edit(base, "block_start", lambda r: {**r, "key": "epoch_start", "metadata":
                                                                       {"epoch_num": 1}}),
                                  "block_stop", lambda r: {**r, "key": "epoch_stop", "metadata": {"epoch_num": 1}})),
        ("run_stop without status", edit(base, "run_stop", lambda r: {**r, "metadata": {}})),
        ("submission_org empty", edit(base, "submission_org", setv(""))),
        ("submission_status unknown", edit(base, "submission_status", setv("available"))),
        ("division Closed", edit(base, "submission_division", setv("Closed"))),
        ("division empty", edit(base, "submission_division", setv(""))),
        ("division number", edit(base, "submission_division", setv(5))),
        ("division null", edit(base, "submission_division", setv(None))),
        ("division path traversal", edit(base, "submission_division", setv("../training_4.0.0/closed"))),
        ("benchmark BERT", edit(base, "submission_benchmark", setv("BERT"))),
        (f"benchmark resnet {NON_BERT}", edit(base, "submission_benchmark", setv("resnet"))),
        (f"benchmark gpt3 {NON_BERT}", edit(base, "submission_benchmark", setv("gpt3"))),
        ("gradient_accumulation_steps 0", edit(base, "gradient_accumulation_steps", setv(0))),
        ("gradient_accumulation_steps text", edit(base, "gradient_accumulation_steps", setv("2"))),
        ("gradient_accumulation_steps 10**400", edit(base, "gradient_accumulation_steps", setv(10**400))),
        ("weights: one tensor missing", edit(base, "weights_initialization", lambda r: None, 200)),
        ("weights: one tensor twice", duplicate(base, "weights_initialization",
                                                lambda r: r if r["metadata"]["tensor"].endswith("pooler/dense/bias")
                                                else {**r, "key": "ignored"})),
        ("weights: one tensor renamed", edit(base, "weights_initialization", setmd(tensor="bert/other"), 3)),
        ("weights: tensor null", edit(base, "weights_initialization", setmd(tensor=None), 3)),
        ("weights: tensor missing", edit(base, "weights_initialization", delmd("tensor"), 3)),
        ("weights: upper-case key", [l.replace('"weights_initialization"', '"WEIGHTS_INITIALIZATION"') for l in base]),
        ("weights: all tensors as one list", insert_after(drop(base, "weights_initialization"), "init_start",
                                                          encode({"time_ms": 1650000000002, "key":
                                                                  "weights_initialization", "value": None,
                                                                  "metadata": {"tensor": bert_tensors()}}))),
        ("unknown keys", insert_after(insert_after(base, "run_start", line(1650000600010, "POINT_IN_TIME",
                                                                           "tracked_stats", {"loss": 1.5})),
                                      "run_start", encode({"time_ms": 1, "key": 7, "value": 1, "metadata": {}}))),
        ("unhashable key", insert_after(base, "run_start", encode({"time_ms": 1, "key": ["run_start"], "value": 1,
                                                                   "metadata": {}}))),
        ("missing metadata field", insert_after(base, "run_start", ':::MLLOG {"time_ms": 1, "key": "x", "value": 1}\n')),
        ("missing key field", insert_after(base, "run_start", ':::MLLOG {"time_ms": 1, "value": 1, "metadata": {}}\n')),
        ("record is a list", insert_after(base, "run_start", ":::MLLOG [1, 2, 3]\n")),
        ("bad JSON line", insert_after(base, "run_start", ':::MLLOG {"time_ms": 1, "key": "x" "value": 1}\n')),
        ("bad JSON in a dropped prefix", insert_after(base, "run_start", "noise :::MLLOG {{{ " + base[-1])),
        ("two tokens on a line", insert_after(base, "run_start", base[-1].rstrip("\n") + " " + base[5])),
        ("token alone", insert_after(base, "run_start", ":::MLLOG \n")),
        ("token then form feed", insert_after(base, "run_start", ":::MLLOG \x0c" + base[-1][9:])),
        ("trailing NEL and NBSP", [l.rstrip("\n") + "\x85\xa0 \n" if l.startswith(":::") else l for l in base]),
        ("deep nesting 50", insert_after(base, "run_start", line(1, "POINT_IN_TIME", "nested", None) .replace(
            '"value": null', '"value": ' + "[" * 50 + "]" * 50) + "\n")),
        ("deep nesting 3000", insert_after(base, "run_start", line(1, "POINT_IN_TIME", "nested", None).replace(
            '"value": null', '"value": ' + "[" * 3000 + "]" * 3000) + "\n")),
        ("integer of 5000 digits", insert_after(base, "run_start", line(1, "POINT_IN_TIME", "big", None).replace(
            '"value": null', '"value": ' + "9" * 5000) + "\n")),
        ("integer of 4300 digits", insert_after(base, "run_start", line(1, "POINT_IN_TIME", "big", None).replace(
            '"value": null', '"value": ' + "9" * 4300) + "\n")),
        ("float 1e999", insert_after(base, "run_start", line(1, "POINT_IN_TIME", "big", None).replace(
            '"value": null', '"value": 1e999') + "\n")),
        ("lone surrogate escape", edit(base, "submission_platform", setv("\ud800x"))),
        ("duplicate keys inside a record", [l.replace('"value": "bert"', '"value": "resnet", "value": "bert"')
                                            for l in base]),
        ("CRLF line ends", [l.replace("\n", "\r\n") for l in base]),
        ("CR line ends", [l.replace("\n", "\r") for l in base]),
        ("prefix before every token", ["[1,0]<stdout>:" + l for l in base]),
        ("control character in a string", [l.replace('"bert"', '"be\trt"') for l in base]),
        ("empty file", []),
        ("whitespace only", ["\n\n   \n"]),
        ("no MLLOG lines", ["just text\n"] * 50),
    ]
    text = "".join(base).encode("latin-1")
    out += [
        ("truncated mid-record", text[: len(text) - 40]),
        ("truncated mid-file", text[: len(text) // 2]),
        ("binary garbage", bytes(rng.getrandbits(8) for _ in range(20000))),
        ("binary garbage around the log", bytes(rng.getrandbits(8) for _ in range(3000)) + text
         + bytes(range(256))),
        ("invalid UTF-8 in strings", text.replace(b'"Parity Inc."', b'"Parity \xff\xfe Inc."')
                                         .replace(b'"8xH200"', b'"8x\xc3H200"')),
        ("NUL bytes in a line", text.replace(b"[rank 0]", b"[rank\x00 0]", 1)),
    ]
    return out


# ---------------------------------------------------------------------------------------------
# 3. judging


def cache_rule_files():
    """The official checker re-reads and re-parses its YAML for every log; the files never change, so
    parse each once (same loader, same object) -- this only saves time."""
    cache = {}
    real_load = yaml.load

    class CachingYaml:
        BaseLoader = yaml.BaseLoader

        @staticmethod
        def load(stream, Loader):
            name = getattr(stream, "name", None)
            if name is None:
                return real_load(stream, Loader=Loader)
            if name not in cache:
                cache[name] = real_load(stream, Loader=Loader)
            return cache[name]

    mlp_compliance.yaml = CachingYaml


def official_verdict(path, ruleset, werror):
    """(verdict, keys of the rule messages it would print, or None when it crashed)."""
    mlp_compliance.enqueued_configs.clear()  # module-level queue: a crash would leave entries behind
    checker = mlp_compliance.make_checker("training", ruleset, False, werror)
    try:
        ok = checker.check_file(path, f"training_{ruleset}/common.yaml")
    except Exception:  # the command line tool dies with a traceback: exit status 1, FAILED
        return "FAILED", None
    return ("SUCCESS" if ok else "FAILED"), sorted(checker.overwritable)


def mlbert_verdicts(paths, ruleset, werror):
    """{path: (verdict, that log's output)}"""
    verdicts = {}
    for start in range(0, len(paths), 200):
        chunk = paths[start:start + 200]
        args = [MLBERT, "check", "--ruleset", ruleset, "--quiet"] + (["--werror"] if werror else []) + chunk
        out = subprocess.run(args, capture_output=True)
        if out.returncode not in (0, 1):
            print(out.stdout.decode(errors="replace")[-2000:], out.stderr.decode(errors="replace")[-2000:])
        current = None
        for text in out.stdout.decode("utf-8", errors="replace").splitlines():
            for word in ("SUCCESS ", "FAILED  ", "ERROR   "):
                if text.startswith(word) and text[8:] in chunk:
                    current = text[8:]
                    verdicts[current] = (word.strip(), [])
            if current and not text.startswith(("SUCCESS ", "FAILED  ", "ERROR   ")):
                verdicts[current][1].append(text)
    return verdicts


def logs_bert(path):
    """Whether the log's first submission_benchmark record says bert (the one the checker judges)."""
    with open(path, "rb") as f:
        for text in f:
            r = record_of(text.decode("latin-1"))
            if isinstance(r, dict) and r.get("key") == "submission_benchmark":
                return r.get("value") == "bert"
    return False


def benchmark_reason_missing(output):
    """Under 5.1.0 the official checker fails a BERT log on submission_benchmark; mlbert must name that
    rule and say why (an empty string when it does)."""
    for text in output:
        if ("_common:submission_benchmark" in text and text.lstrip().startswith("error")
                and "bert is not a benchmark of training ruleset 5.1.0" in text):
            return ""
    return "no submission_benchmark error saying that bert is not a 5.1.0 benchmark"


def encode_lines(lines):
    # Lines hold Latin-1 characters (a byte each) except \u escapes, which json.dumps already wrote as ASCII.
    return "".join(lines).encode("latin-1")


FIXTURE_DIRS = ["mlperf_logs", "mlperf_logs_early"]


def fixture_bases():
    """(label, ruleset, lines) for one log of every fixture system, when ../shared is present; each
    v4.0 system also under 5.1.0, the round without BERT."""
    seen, bases = set(), []
    for folder in FIXTURE_DIRS:
        tsv = os.path.join(SHARED, "fixtures", folder, "EXPECTED.tsv")
        if not SHARED or not os.path.exists(tsv):
            continue
        for row in open(tsv):
            if row.startswith("#") or not row.strip():
                continue
            log, ruleset, _ = row.rstrip("\n").split("\t")
            system = os.path.dirname(log)
            if system in seen:
                continue
            seen.add(system)
            with open(os.path.join(SHARED, "fixtures", folder, log), encoding="latin-1", newline="") as f:
                lines = f.read().splitlines(keepends=True)
            bases.append((log, ruleset, lines))
            if ruleset == "4.0.0":
                bases.append((log, "5.1.0", lines))
    return bases


FIXTURE_MUTATIONS = ["clean", "drop submission_division", "drop submission_benchmark", "drop run_stop",
                     "drop eval_accuracy", "drop init_stop", "drop global_batch_size", "drop opt_lamb_beta_1",
                     "drop weights_initialization", "duplicate run_start (same value)",
                     "duplicate global_batch_size (other value)", "init_start after run_start",
                     "accuracy below target", "missing epoch_num in one eval_accuracy", "division after init_stop",
                     "truncated mid-file", "bad JSON line", "weights: one tensor missing", "CRLF line ends"]


def main():
    started = time.time()
    logging.disable(logging.CRITICAL)
    sys.setrecursionlimit(1000)
    cache_rule_files()
    problems = []
    for ruleset in RULESETS:
        problems += compare_rules(ruleset)
    for p in problems:
        print("RULES:", p)

    cases = []  # (description, ruleset, werror, content)
    for ruleset in RULESETS:
        for division in ("closed", "open"):
            for name, content in mutations(clean_log(ruleset, division)):
                if name in INPUT_LEVEL and (ruleset, division) not in INPUT_LEVEL_PAIRS:
                    continue
                cases.append((f"{ruleset} {division}: {name}", ruleset, False, content))
                if name == "clean" or name.endswith("(same value)") or " vs " in name:
                    cases.append((f"{ruleset} {division}: {name} [--werror]", ruleset, True, content))
    fixture_cases = 0
    for log, ruleset, lines in fixture_bases():
        for name, content in mutations(lines):
            if name in FIXTURE_MUTATIONS:
                cases.append((f"fixture {log} ({ruleset}): {name}", ruleset, False, content))
                fixture_cases += 1

    differences, out_of_scope = [], []
    counts = {"SUCCESS": 0, "FAILED": 0}
    with tempfile.TemporaryDirectory(prefix="logging_check_parity_") as directory:
        groups = {}
        for n, (description, ruleset, werror, content) in enumerate(cases):
            path = os.path.join(directory, f"case_{n:05d}.txt")
            with open(path, "wb") as f:
                f.write(content if isinstance(content, bytes) else encode_lines(content))
            groups.setdefault((ruleset, werror), []).append((path, description))
        jobs = [(path, ruleset, werror) for (ruleset, werror), items in groups.items() for path, _ in items]
        with multiprocessing.Pool(min(2, os.cpu_count() or 1)) as pool:
            official = dict(zip([j[0] for j in jobs], pool.starmap(official_verdict, jobs, chunksize=16)))
        no_bert_named = 0
        for (ruleset, werror), items in groups.items():
            ours = mlbert_verdicts([p for p, _ in items], ruleset, werror)
            for path, description in items:
                theirs, keys = official[path]
                counts[theirs] += 1
                mine, output = ours.get(path, ("missing", []))
                if mine != theirs:
                    if NON_BERT in description and mine == "FAILED":
                        out_of_scope.append(f"{description}: official {theirs}, mlbert {mine}")
                    else:
                        differences.append(f"{description}: official {theirs}, mlbert {mine}")
                elif ruleset in NO_BERT and keys and "submission_benchmark" in keys and logs_bert(path):
                    missing = benchmark_reason_missing(output)
                    no_bert_named += 1
                    if missing:
                        differences.append(f"{description}: the official checker fails it on submission_benchmark; "
                                           f"mlbert: {missing}")
    for d in out_of_scope:
        print("OUT OF SCOPE:", d)
    for d in differences:
        print("VERDICT:", d)
    print(f"{len(cases)} logs ({fixture_cases} from fixtures): official SUCCESS {counts['SUCCESS']}, "
          f"FAILED {counts['FAILED']}; {len(differences)} verdict difference(s), {len(problems)} rule table "
          f"difference(s), {len(out_of_scope)} non-BERT log(s) judged by another benchmark's rules; "
          f"{no_bert_named} 5.1.0 log(s) with the submission_benchmark reason checked; {time.time() - started:.1f} s")
    if counts["SUCCESS"] < 20 or counts["FAILED"] < 100 or no_bert_named < 50:
        print("FAILED: the corpus is one-sided, the comparison would prove little")
        return 1
    return 1 if differences or problems else 0


if __name__ == "__main__":
    sys.exit(main())
