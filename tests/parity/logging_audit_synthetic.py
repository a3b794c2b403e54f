"""Synthetic MLPerf BERT result logs and submission packages for the logging_audit parity scripts.

The same shapes as tests/mlperf_logging/audit_synthetic.cc: every key the BERT rules of 0.7.0 ..
5.0.0 ask for (including the 398 weights_initialization tensors, taken from the official rule
file), with run time, samples to converge, batch size, seed and run_stop status as parameters.
"""
import json
import os
import re

from mlperf_logging.compliance_checker import mlp_compliance

_TENSORS = None


def bert_tensor_names():
    """The 398 tensor names of the official 1.1.0 closed_bert rules (one CHECK lists them)."""
    global _TENSORS
    if _TENSORS is None:
        path = os.path.join(os.path.dirname(mlp_compliance.__file__), "training_1.1.0", "closed_bert.yaml")
        text = open(path).read()
        block = text[text.index("weights_initialization"):]
        _TENSORS = re.findall(r"[\"'](bert/[^\"']+|cls/[^\"']+)[\"']", block)
        seen = []
        for name in _TENSORS:
            if name not in seen:
                seen.append(name)
        _TENSORS = seen
        assert len(_TENSORS) == 398, len(_TENSORS)
    return _TENSORS


def _line(time_ms, event_type, key, value, lineno=100, **metadata):
    meta = {"file": "/workspace/bert/run_pretraining.py", "lineno": lineno}
    meta.update(metadata)
    return ":::MLLOG " + json.dumps({"namespace": "", "time_ms": time_ms, "event_type": event_type,
                                     "key": key, "value": value, "metadata": meta}) + "\n"


def bert_log(ruleset="4.1.0", division="closed", global_batch_size=4608, samples_to_converge=2_850_000,
             final_accuracy=0.7215, status="success", run_start_ms=1_700_000_000_000, run_minutes=10.0,
             seed=1234, seed_lineno=42):
    t = run_start_ms - 120_000
    out = []
    P, S, E = "POINT_IN_TIME", "INTERVAL_START", "INTERVAL_END"
    out.append(_line(t, P, "cache_clear", True))
    out.append(_line(t, S, "init_start", None))
    out.append(_line(t, P, "submission_benchmark", "bert"))
    out.append(_line(t, P, "submission_org", "mlbert"))
    out.append(_line(t, P, "submission_division", division))
    out.append(_line(t, P, "submission_status", "onprem"))
    out.append(_line(t, P, "submission_platform", "1xSYNTHETIC"))
    out.append(_line(t, P, "seed", seed, lineno=seed_lineno))
    out.append(_line(t, P, "global_batch_size", global_batch_size))
    out.append(_line(t, P, "gradient_accumulation_steps", 1))
    out.append(_line(t, P, "max_predictions_per_seq", 76))
    out.append(_line(t, P, "opt_learning_rate_training_steps", 700))
    out.append(_line(t, P, "num_warmup_steps", 0))
    for tensor in bert_tensor_names():
        out.append(_line(t, P, "weights_initialization", None, tensor=tensor))
    out.append(_line(t, P, "opt_base_learning_rate", 0.0035))
    out.append(_line(t, P, "opt_epsilon" if ruleset < "2.1.0" else "opt_lamb_epsilon", 1e-06))
    out.append(_line(t, P, "opt_lamb_beta_1", 0.62))
    out.append(_line(t, P, "opt_lamb_beta_2", 0.9))
    out.append(_line(t, P, "opt_lamb_weight_decay_rate", 0.01))
    out.append(_line(t, P, "opt_learning_rate_warmup_steps", 0))
    out.append(_line(t, P, "opt_lamb_learning_rate_decay_poly_power", 1.0))
    out.append(_line(t, P, "start_warmup_step", 0))
    out.append(_line(run_start_ms - 1000, E, "init_stop", None))
    out.append(_line(run_start_ms, S, "run_start", None))
    out.append(_line(run_start_ms, S, "epoch_start", None, epoch_num=0))
    out.append(_line(run_start_ms, S, "block_start", None, first_epoch_num=1, epoch_count=1))
    run_stop = run_start_ms + round(run_minutes * 60_000)
    evals = 4
    for i in range(1, evals + 1):
        samples = float(round(samples_to_converge * i / evals))
        accuracy = final_accuracy if i == evals else 0.35 + 0.08 * i
        at = run_start_ms + (run_stop - run_start_ms) * i // evals - 10
        out.append(_line(at, S, "eval_start", samples, epoch_num=samples))
        out.append(_line(at, E, "eval_stop", samples, epoch_num=samples))
        out.append(_line(at, P, "eval_accuracy", accuracy, epoch_num=samples))
    out.append(_line(run_stop - 5, E, "block_stop", None, first_epoch_num=1))
    out.append(_line(run_stop - 5, E, "epoch_stop", None, epoch_num=samples_to_converge))
    out.append(_line(run_stop - 5, P, "train_samples", samples_to_converge))
    out.append(_line(run_stop - 5, P, "eval_samples", 10000))
    out.append(_line(run_stop, E, "run_stop", None, status=status))
    return "".join(out)


def ten_good_runs(ruleset, division):
    """Ten runs passing compliance, seeds and RCP: 10.0 .. 10.9 minutes in a scrambled order."""
    order = [3, 7, 0, 9, 5, 1, 8, 2, 6, 4]
    return [dict(ruleset=ruleset, division=division, run_minutes=10.0 + 0.1 * order[i],
                 samples_to_converge=2_850_000 + 10_000 * order[i], seed=1000 + 17 * i,
                 run_start_ms=1_700_000_000_000 + 3_600_000 * i) for i in range(10)]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def write_results(folder, runs):
    os.makedirs(folder, exist_ok=True)
    for i, run in enumerate(runs):
        write(os.path.join(folder, f"result_{i}.txt"), bert_log(**run))


def system_json(system, division, ruleset):
    desc = {
        "submitter": "mlbert", "division": division,
        "status": "Available on-premise" if ruleset >= "4.0.0" else "onprem",
        "system_name": system, "number_of_nodes": "1", "host_processors_per_node": "2",
        "host_processor_model_name": "Synthetic CPU", "host_processor_core_count": "64",
    }
    for field in ["host_processor_vcpu_count", "host_processor_frequency", "host_processor_caches",
                  "host_processor_interconnect", "host_memory_capacity", "host_storage_type",
                  "host_storage_capacity", "host_networking", "host_networking_topology",
                  "host_memory_configuration"]:
        desc[field] = ""
    desc["accelerators_per_node"] = "8"
    desc["accelerator_model_name"] = "Synthetic GPU"
    for field in ["accelerator_host_interconnect", "accelerator_frequency", "accelerator_on-chip_memories",
                  "accelerator_memory_configuration", "accelerator_memory_capacity", "accelerator_interconnect",
                  "accelerator_interconnect_topology", "cooling", "hw_notes"]:
        desc[field] = ""
    desc["framework"] = "mlbert"
    desc["other_software_stack"] = {"compiler": "g++"}
    desc["operating_system"] = "Debian 12"
    desc["sw_notes"] = ""
    return desc


def write_package(org, system, division, ruleset, runs):
    write(os.path.join(org, "systems", system + ".json"), json.dumps(system_json(system, division, ruleset), indent=4))
    write_results(os.path.join(org, "results", system, "bert"), runs)
    write(os.path.join(org, "benchmarks", "bert", "implementations", "mlbert", "run.sh"),
          "#!/bin/sh\nexec mlbert train --seed \"$SEED\" \"$@\"\n")
