#!/usr/bin/env python3
"""TensorFlow tensor-bundle checkpoints written by a real TensorFlow, read by mlbert.

`bert_tf_checkpoint.py generate DIR` writes, with tf.raw_ops.SaveV2 (the op tf.train.Saver and
tf.train.Checkpoint use), a small BERT checkpoint under the MLPerf TF names with LAMB-style
optimizer slots and global_step, a second bundle with float16/bfloat16/float64/int tensors, the
expected values as safetensors (written with numpy, independent of TensorFlow) and the
bert_config.json. The committed copy in tests/bert/data/tf_bundle is what the C++ test reads.

Run without arguments (the parity test): when TensorFlow is importable, regenerate into a temp
dir and check that `mlbert checkpoint import` reproduces every value; exit 77 when it is not.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

CONFIG = {
    "vocab_size": 45, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
    "intermediate_size": 24, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 12, "type_vocab_size": 2,
    "initializer_range": 0.02,
}


def bert_tensors(c):
    """(TF name, shape) of every BERT pretraining tensor, as the MLPerf checkpoint names them."""
    h, f, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    out = [("bert/embeddings/word_embeddings", [v, h]),
           ("bert/embeddings/position_embeddings", [c["max_position_embeddings"], h]),
           ("bert/embeddings/token_type_embeddings", [c["type_vocab_size"], h]),
           ("bert/embeddings/LayerNorm/gamma", [h]), ("bert/embeddings/LayerNorm/beta", [h])]
    for l in range(c["num_hidden_layers"]):
        p = f"bert/encoder/layer_{l}/"
        for part in ("query", "key", "value"):
            out += [(p + f"attention/self/{part}/kernel", [h, h]), (p + f"attention/self/{part}/bias", [h])]
        out += [(p + "attention/output/dense/kernel", [h, h]), (p + "attention/output/dense/bias", [h]),
                (p + "attention/output/LayerNorm/gamma", [h]), (p + "attention/output/LayerNorm/beta", [h]),
                (p + "intermediate/dense/kernel", [h, f]), (p + "intermediate/dense/bias", [f]),
                (p + "output/dense/kernel", [f, h]), (p + "output/dense/bias", [h]),
                (p + "output/LayerNorm/gamma", [h]), (p + "output/LayerNorm/beta", [h])]
    out += [("bert/pooler/dense/kernel", [h, h]), ("bert/pooler/dense/bias", [h]),
            ("cls/predictions/output_bias", [v]),
            ("cls/predictions/transform/dense/kernel", [h, h]),
            ("cls/predictions/transform/dense/bias", [h]),
            ("cls/predictions/transform/LayerNorm/gamma", [h]),
            ("cls/predictions/transform/LayerNorm/beta", [h]),
            ("cls/seq_relationship/output_weights", [2, h]), ("cls/seq_relationship/output_bias", [2])]
    return out


def write_safetensors(path, tensors):
    """Minimal F32 safetensors writer (numpy only), independent of the C++ code under test."""
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for b in blobs:
            f.write(b)


def generate(out_dir):
    import tensorflow as tf
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(20240607)
    names, values, expected = [], [], {}
    for name, shape in bert_tensors(CONFIG):
        w = rng.standard_normal(shape).astype(np.float32) * 0.5
        names.append(name)
        values.append(tf.constant(w))
        expected[name] = w
        for slot in ("adam_m", "adam_v"):  # optimizer slots the importer must skip
            names.append(f"{name}/{slot}")
            values.append(tf.constant(rng.standard_normal(shape).astype(np.float32)))
    names.append("global_step")
    values.append(tf.constant(7, dtype=tf.int64))
    prefix = os.path.join(out_dir, "model.ckpt-7")
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names), tensors=values)

    dtype_values = {
        "half": np.array([1.5, -0.25, 65504.0, 6.1e-05], np.float16),
        "double": np.array([3.141592653589793, -1e-3], np.float64),
        "int32": np.array([1, -2, 3], np.int32),
    }
    bf16 = np.array([[1.0, -2.5], [0.0078125, 300.0]], np.float32)
    tensors = [tf.constant(v) for v in dtype_values.values()] + [tf.cast(tf.constant(bf16), tf.bfloat16)]
    tf.raw_ops.SaveV2(prefix=os.path.join(out_dir, "dtypes.ckpt"),
                      tensor_names=list(dtype_values) + ["bf16"], shape_and_slices=[""] * 4, tensors=tensors)
    for k, v in dtype_values.items():
        expected["dtypes/" + k] = v.astype(np.float32)
    expected["dtypes/bf16"] = bf16
    write_safetensors(os.path.join(out_dir, "expected.safetensors"), expected)
    with open(os.path.join(out_dir, "bert_config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
    return expected


def read_safetensors(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype="<f4").reshape(t["shape"])
    return out


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "generate":
        generate(sys.argv[2])
        return 0
    try:
        import tensorflow  # noqa: F401
    except ImportError:
        print("SKIPPED: tensorflow is not importable; the C++ test reads the committed bundle")
        return 77
    binary = os.environ.get("MLBERT_BIN")
    if not binary:
        print("MLBERT_BIN is not set")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        expected = generate(tmp)
        out = os.path.join(tmp, "imported.safetensors")
        run = subprocess.run([binary, "checkpoint", "import", os.path.join(tmp, "model.ckpt-7"),
                              "--config", os.path.join(tmp, "bert_config.json"), "--out", out],
                             capture_output=True, text=True)
        print(run.stdout, run.stderr)
        if run.returncode != 0:
            return 1
        if "skipped" not in run.stdout:
            print("FAIL: the optimizer slots were not reported as skipped")
            return 1
        got = read_safetensors(out)
        failures = compared = 0
        for name, want in expected.items():
            if name.startswith("dtypes/"):
                continue  # not BERT weights: compared below, as bert_parity_compare reads them
            compared += 1
            have = got[name]
            if name in ("bert/embeddings/word_embeddings", "cls/predictions/output_bias"):
                rows = want.shape[0]
                if np.any(have[rows:] != 0):
                    print(f"FAIL: {name}: padded vocab rows are not zero")
                    failures += 1
                have = have[:rows]
            if have.shape != want.shape or not np.array_equal(have, want):
                print(f"FAIL: {name}: values differ from what TensorFlow saved")
                failures += 1
        inspect = subprocess.run([binary, "checkpoint", "inspect", "--json", os.path.join(tmp, "dtypes.ckpt")],
                                 capture_output=True, text=True)
        if inspect.returncode != 0 or json.loads(inspect.stdout)["weight_tensors"] != 4:
            print("FAIL: inspect of the dtype bundle", inspect.stdout, inspect.stderr)
            failures += 1
        # float16, bfloat16, float64 and int32 values as mlbert's bundle reader converts them to
        # float32: exactly what numpy's conversion of the values TensorFlow saved gives.
        compare = os.path.join(os.environ.get("MLBERT_BINARY_DIR", ""), "bin", "bert_parity_compare")
        values = subprocess.run([compare, "tf-values", os.path.join(tmp, "dtypes.ckpt")],
                                capture_output=True, text=True)
        if values.returncode != 0:
            print(f"FAIL: {compare} tf-values:", values.stdout, values.stderr)
            return 1
        read = json.loads(values.stdout)
        for name, want in expected.items():
            if not name.startswith("dtypes/"):
                continue
            compared += 1
            entry = read.get(name[len("dtypes/"):])
            have = np.array(entry["values"], np.float32) if entry else None
            if have is None or have.shape != want.reshape(-1).shape or not np.array_equal(have, want.reshape(-1)):
                print(f"FAIL: {name}: mlbert read {entry}, TensorFlow saved {want.reshape(-1).tolist()}")
                failures += 1
            else:
                print(f"ok: {name} ({entry['dtype']}): {have.tolist()}")
        print(f"{compared} tensors compared, {failures} failures")
        if compared != len(expected):
            print(f"FAIL: {len(expected)} tensors generated but {compared} compared")
            return 1
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
