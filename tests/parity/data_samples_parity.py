#!/usr/bin/env python3
"""Parity: `mlbert data prep` against the reference create_pretraining_data.py, instance by instance.

The reference is Google BERT's create_pretraining_data.py as shipped by the `bert-tensorflow` PyPI
package: its create_training_instances / create_instances_from_document /
create_masked_lm_predictions / truncate_seq_pair make the same random calls, in the same order, as
MLPerf's copy (language_model/tensorflow/bert/cleanup_scripts/create_pretraining_data.py; MLPerf's
copy has no whole-word masking, and neither has this one). Its TensorFlow I/O is replaced by plain
Python (data_oracles.reference_modules); the TFRecord writer is not used: instances are compared
field by field with what mlbert wrote to HDF5, read back with h5py the way NVIDIA's loader reads it.

Inputs are generated: documents of sentences of real-vocabulary words plus accents, CJK, emoji and
control characters, blank-line runs, whitespace-only lines, one-sentence documents, and a sentence
longer than 512 tokens (truncation). Runs: MLPerf defaults (512/76/0.15/10/0.1/seed 12345), a
short-sequence configuration, a two-file joint run, and the fixed layout.
Exit 0 pass, 1 fail, 77 skip.
"""
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data_oracles  # noqa: E402

NOISE = ["Café", "naïve", "東京", "😀", "\u200b", "\u00a0", "ΟΔΟΣ", "e\u0301", "[MASK]", "\x07",
         "don't", "U.S.", "3.14", "—", "«quoted»", "Straße"]


def generate_text(path, vocab_words, seed, documents):
    rng = random.Random(seed)
    lines = []
    for d in range(documents):
        for _ in range(rng.choice([1, 2, 3, 5, 8, 13, 21])):
            n = rng.randint(1, 40)
            words = []
            for _ in range(n):
                words.append(rng.choice(NOISE) if rng.random() < 0.1 else rng.choice(vocab_words))
            line = " ".join(words)
            if rng.random() < 0.3:
                line = line.capitalize() + "."
            lines.append(line)
            if rng.random() < 0.03:
                lines.append("  \t ")  # whitespace-only line: a document boundary
            if rng.random() < 0.02:
                lines.append("\x00\x01")  # tokenizes to nothing: dropped
        if d == documents // 2:
            lines.append(" ".join(rng.choice(vocab_words) for _ in range(700)))  # > 512 tokens
        lines.append("")
        if rng.random() < 0.1:
            lines.append("")  # several blank lines in a row
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


def reference_instances(cpd, tokenizer, inputs, cfg):
    rng = random.Random(cfg["seed"])
    instances = cpd.create_training_instances(
        inputs, tokenizer, cfg["max_seq_length"], cfg["dupe_factor"], cfg["short_seq_prob"],
        cfg["masked_lm_prob"], cfg["max_predictions_per_seq"], rng)
    out = []
    for inst in instances:
        out.append({
            "input_ids": tokenizer.convert_tokens_to_ids(inst.tokens),
            "segment_ids": list(inst.segment_ids),
            "masked_lm_positions": list(inst.masked_lm_positions),
            "masked_lm_ids": tokenizer.convert_tokens_to_ids(inst.masked_lm_labels),
            "next_sentence_label": 1 if inst.is_random_next else 0,
        })
    return out


def mlbert_instances(binary, vocab, inputs, cfg, output, layout):
    cmd = [binary, "data", "prep", "--vocab", vocab, "--joint", "--output", output,
           "--layout", layout, "--progress", "never",
           "--max-seq-length", str(cfg["max_seq_length"]),
           "--max-predictions-per-seq", str(cfg["max_predictions_per_seq"]),
           "--masked-lm-prob", repr(cfg["masked_lm_prob"]),
           "--dupe-factor", str(cfg["dupe_factor"]),
           "--short-seq-prob", repr(cfg["short_seq_prob"]), "--seed", str(cfg["seed"]), "--input"]
    cmd += inputs
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"mlbert data prep failed: {run.stderr}")
    import h5py
    import numpy as np
    out = []
    with h5py.File(output, "r") as f:
        n = f["input_ids"].shape[0]
        if layout == "varlen":
            assert f["input_ids"].dtype.metadata["vlen"] == np.int16
            assert f["segment_ids"].dtype.metadata["vlen"] == np.int8
            assert f["next_sentence_labels"].dtype == np.int8
            for i in range(n):
                out.append({
                    "input_ids": f["input_ids"][i].tolist(),
                    "segment_ids": f["segment_ids"][i].tolist(),
                    "masked_lm_positions": f["masked_lm_positions"][i].tolist(),
                    "masked_lm_ids": f["masked_lm_ids"][i].tolist(),
                    "next_sentence_label": int(f["next_sentence_labels"][i]),
                })
        else:
            ids, mask, seg = f["input_ids"][:], f["input_mask"][:], f["segment_ids"][:]
            pos, mids, nsp = f["masked_lm_positions"][:], f["masked_lm_ids"][:], f["next_sentence_labels"][:]
            assert ids.shape == (n, cfg["max_seq_length"]) and pos.shape == (n, cfg["max_predictions_per_seq"])
            for i in range(n):
                length = int(mask[i].sum())
                keep = pos[i] != 0
                out.append({
                    "input_ids": ids[i, :length].tolist(),
                    "segment_ids": seg[i, :length].tolist(),
                    "masked_lm_positions": pos[i][keep].tolist(),
                    "masked_lm_ids": mids[i][keep].tolist(),
                    "next_sentence_label": int(nsp[i]),
                })
    return out


def compare(name, expected, got):
    if len(expected) != len(got):
        print(f"{name}: reference made {len(expected)} instances, mlbert {len(got)}")
        return False
    for i, (e, g) in enumerate(zip(expected, got)):
        for key in e:
            if e[key] != g[key]:
                print(f"{name}: instance {i} field {key} differs\n  reference {e[key]}\n  mlbert    {g[key]}")
                return False
    tokens = sum(len(e["input_ids"]) for e in expected)
    masked = sum(len(e["masked_lm_ids"]) for e in expected)
    print(f"{name}: {len(expected)} instances ({tokens} tokens, {masked} predictions) identical")
    return True


def main():
    binary = data_oracles.project_binary()
    if binary is None:
        return 1
    try:
        import h5py  # noqa: F401
    except ImportError as e:
        print(f"SKIPPED: h5py not installed ({e})")
        return 77
    with tempfile.TemporaryDirectory() as work:
        try:
            vocab = data_oracles.bert_uncased_vocab(work)
            tokenization, cpd = data_oracles.reference_modules()
        except data_oracles.Skip as e:
            print(f"SKIPPED: {e}")
            return 77
        tokenizer = tokenization.FullTokenizer(vocab_file=vocab, do_lower_case=True)
        vocab_words = [w for w in open(vocab, encoding="utf-8").read().split("\n")
                       if w and not w.startswith("[") and not w.startswith("##")]
        text_a = os.path.join(work, "part-a.txt")
        text_b = os.path.join(work, "part-b.txt")
        generate_text(text_a, vocab_words, seed=1, documents=120)
        generate_text(text_b, vocab_words, seed=2, documents=40)
        mlperf = dict(max_seq_length=512, max_predictions_per_seq=76, masked_lm_prob=0.15,
                      dupe_factor=10, short_seq_prob=0.1, seed=12345)
        short = dict(max_seq_length=128, max_predictions_per_seq=20, masked_lm_prob=0.15,
                     dupe_factor=3, short_seq_prob=0.3, seed=7)
        ok = True
        runs = [("MLPerf defaults, varlen", [text_a], mlperf, "varlen"),
                ("128/20 short_seq_prob 0.3, varlen", [text_a], short, "varlen"),
                ("two files in one run, fixed", [text_a, text_b], short, "fixed")]
        for i, (name, inputs, cfg, layout) in enumerate(runs):
            expected = reference_instances(cpd, tokenizer, inputs, cfg)
            got = mlbert_instances(binary, vocab, inputs, cfg, os.path.join(work, f"out{i}.hdf5"), layout)
            ok &= compare(name, expected, got)
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
