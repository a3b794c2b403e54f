#!/usr/bin/env python3
"""Parity: mlbert's packed HDF5 rows, read with h5py (not mlbert's reader), follow NVIDIA's
convention: a row's sequences are concatenated; packed_input_len and packed_masked_lm_len split
the row; masked_lm_positions index the row (a sequence's own positions plus the lengths of the
sequences before it in the row), so a loader can gather the row's masked tokens without knowing
where each sequence starts.

Makes a demo corpus, prepares it to varlen shards and packs them with the mlbert CLI, then checks
every packed sequence against its unpacked source, field by field. Exit 0 pass, 1 fail, 77 when
h5py (the oracle) is missing.
"""
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data_oracles  # noqa: E402


def run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAILED: {' '.join(args)} exited {r.returncode}\n{r.stdout}{r.stderr}")


def main():
    binary = data_oracles.project_binary()
    if binary is None:
        return 1
    try:
        import h5py
    except ImportError as e:
        print(f"SKIPPED: h5py not installed ({e})")
        return 77
    with tempfile.TemporaryDirectory() as work:
        corpus, shards, packed = (os.path.join(work, d) for d in ("corpus", "shards", "packed"))
        run(binary, "data", "demo-corpus", "--output", corpus, "--documents", "300",
            "--eval-documents", "10", "--parts", "1")
        run(binary, "data", "prep", "--vocab", os.path.join(corpus, "vocab.txt"), "--input",
            *sorted(glob.glob(os.path.join(corpus, "part-*.txt"))), "--output", shards,
            "--max-seq-length", "128", "--max-predictions-per-seq", "20", "--dupe-factor", "1")
        inputs = sorted(glob.glob(os.path.join(shards, "*.hdf5")))
        run(binary, "data", "pack", "--input", *inputs, "--output", packed, "--max-seq-length", "128",
            "--max-predictions-per-seq", "20")

        sources = {}
        for path in inputs:
            with h5py.File(path, "r") as f:
                for i in range(len(f["input_ids"])):
                    ids = tuple(int(x) for x in f["input_ids"][i])
                    sources.setdefault(ids, []).append({
                        "segment_ids": [int(x) for x in f["segment_ids"][i]],
                        "positions": [int(x) for x in f["masked_lm_positions"][i]],
                        "masked_ids": [int(x) for x in f["masked_lm_ids"][i]],
                        "nsp": int(f["next_sentence_labels"][i])})
        total = sum(len(v) for v in sources.values())
        failures = sequences = offset_sequences = 0
        for path in sorted(glob.glob(os.path.join(packed, "*.hdf5"))):
            with h5py.File(path, "r") as f:
                for name in ("input_ids", "masked_lm_positions", "packed_input_len", "packed_masked_lm_len"):
                    if f[name].dtype.metadata is None or "vlen" not in f[name].dtype.metadata:
                        print(f"FAIL: {path}: {name} is not variable-length")
                        failures += 1
                for r in range(len(f["input_ids"])):
                    ids = [int(x) for x in f["input_ids"][r]]
                    seg = [int(x) for x in f["segment_ids"][r]]
                    pos = [int(x) for x in f["masked_lm_positions"][r]]
                    mids = [int(x) for x in f["masked_lm_ids"][r]]
                    nsp = [int(x) for x in f["next_sentence_labels"][r]]
                    lens = [int(x) for x in f["packed_input_len"][r]]
                    mlens = [int(x) for x in f["packed_masked_lm_len"][r]]
                    if sum(lens) != len(ids) or sum(mlens) != len(pos) or len(lens) != len(nsp) or len(ids) > 128:
                        print(f"FAIL: {path} row {r}: lengths {lens} / {mlens} do not split the row")
                        failures += 1
                        continue
                    start = mstart = 0
                    for k, (n, m) in enumerate(zip(lens, mlens)):
                        key = tuple(ids[start:start + n])
                        candidates = sources.get(key, [])
                        got = {"segment_ids": seg[start:start + n],
                               # row-relative on disk: subtract the sequence's start in the row
                               "positions": [p - start for p in pos[mstart:mstart + m]],
                               "masked_ids": mids[mstart:mstart + m], "nsp": nsp[k]}
                        if got in candidates:
                            candidates.remove(got)
                            sequences += 1
                            offset_sequences += start > 0
                        else:
                            print(f"FAIL: {path} row {r} sequence {k} (row offset {start}): no unpacked "
                                  f"sample has these fields; positions on disk {pos[mstart:mstart + m]}")
                            failures += 1
                        if any(not (start < p < start + n) for p in pos[mstart:mstart + m]):
                            print(f"FAIL: {path} row {r} sequence {k}: a position outside its slice "
                                  f"[{start}, {start + n}) of the row")
                            failures += 1
                        start += n
                        mstart += m
        if sequences != total:
            print(f"FAIL: {sequences} of {total} sequences found in the packed rows")
            failures += 1
        if offset_sequences == 0:
            print("FAIL: no row held a second sequence: the offset convention was not exercised")
            failures += 1
        print(f"{sequences} packed sequences ({offset_sequences} at a row offset > 0) match their "
              f"unpacked samples; {failures} failures")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
