#!/usr/bin/env python3
"""The PyTorch side of bench/cuda: one BERT-large pretraining step (forward, backward, optimizer)
with transformers' BertForPreTraining, bf16 autocast and SDPA attention, eager and under
torch.compile, on the same batches as bert_cuda_bench (16 x 512 padded, and the 6/3/2/5 length
mix padded to 512 with an attention mask). Prints one RESULT line per variant, like the C++ bench.

PyTorch has no LAMB; the step uses torch.optim.AdamW(fused=True), the fastest built-in optimizer,
which does the same elementwise work per parameter as LAMB minus the per-tensor norms.
Exit 77 when torch, transformers or a CUDA device is missing.
"""
import argparse
import math
import random
import statistics
import sys
import time

SKIPPED = 77


def flops_per_step(lengths, masked, layers=24, hidden=1024, ffn=4096, vocab=30522):
    """docs/reference.md, "Compute": counting real (unpadded) tokens, as the C++ bench does."""
    n_enc = layers * (4 * hidden * hidden + 2 * hidden * ffn)
    return sum(6 * n_enc * s + 12 * layers * hidden * s * s + 6 * p * (hidden * hidden + hidden * vocab)
               for s, p in zip(lengths, masked))


def make_lengths(mix, batch, rng):
    if mix == "padded":
        return [512] * batch
    quotas = [6, 3, 2, 5]
    lengths = []
    for i in range(batch):
        slot = i % 16
        b = 0 if slot < 6 else 1 if slot < 9 else 2 if slot < 11 else 3
        lengths.append(b * 128 + 1 + rng.randrange(128))
    assert sum(quotas) == 16
    return lengths


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--mix", choices=["padded", "mix", "both"], default="both")
    parser.add_argument("--compile", choices=["no", "yes", "both"], default="both")
    parser.add_argument("--peak-tflops", type=float, default=989.4)
    args = parser.parse_args()
    try:
        import torch
        import transformers
        from transformers import BertConfig, BertForPreTraining
    except ImportError as e:  # the device image carries both; say so plainly if not
        print(f"torch_bert_step: skipped: {e}")
        return SKIPPED
    if not torch.cuda.is_available():
        print("torch_bert_step: skipped: no CUDA device")
        return SKIPPED
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.cuda.get_device_name(0)}")
    torch.backends.cuda.matmul.allow_tf32 = True
    config = BertConfig(vocab_size=30522, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                        intermediate_size=4096, hidden_act="gelu_new", max_position_embeddings=512,
                        type_vocab_size=2, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    try:
        model = BertForPreTraining._from_config(config, attn_implementation="sdpa")
    except (TypeError, ValueError, AttributeError):
        config._attn_implementation = "sdpa"
        model = BertForPreTraining(config)
    model = model.cuda().train()
    print(f"attention implementation: {getattr(model.config, '_attn_implementation', '?')}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.01, fused=True)

    compiled_model = None  # compiled once: both mixes have the same [batch, 512] shapes
    mixes = ["padded", "mix"] if args.mix == "both" else [args.mix]
    variants = {"no": [False], "yes": [True], "both": [False, True]}[args.compile]
    batches = {}
    for mix in mixes:
        rng = random.Random(1234)
        lengths = make_lengths(mix, args.batch, rng)
        masked = [min(76, max(1, round(0.15 * s))) for s in lengths]
        ids = torch.randint(1, config.vocab_size, (args.batch, 512), device="cuda")
        mask = torch.zeros(args.batch, 512, dtype=torch.long, device="cuda")
        types = torch.zeros(args.batch, 512, dtype=torch.long, device="cuda")
        labels = torch.full((args.batch, 512), -100, dtype=torch.long, device="cuda")
        for row, (s, p) in enumerate(zip(lengths, masked)):
            mask[row, :s] = 1
            types[row, s // 2:s] = 1
            positions = torch.tensor(sorted(rng.sample(range(s), p)), device="cuda")
            labels[row, positions] = torch.randint(1, config.vocab_size, (p,), device="cuda")
        nsp = torch.randint(0, 2, (args.batch,), device="cuda")
        batches[mix] = (ids, mask, types, labels, nsp, flops_per_step(lengths, masked))
    # Every eager row first: a stage cut short in torch.compile's first compile keeps them.
    for compiled in variants:
        for mix in mixes:
            ids, mask, types, labels, nsp, flops = batches[mix]
            if compiled and compiled_model is None:
                compiled_model = torch.compile(model)
            step_model = compiled_model if compiled else model

            def step():
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    out = step_model(input_ids=ids, attention_mask=mask, token_type_ids=types, labels=labels,
                                     next_sentence_label=nsp)
                out.loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                return out.loss

            t0 = time.perf_counter()
            for _ in range(args.warmup):
                loss = step()
            torch.cuda.synchronize()
            warmup_s = time.perf_counter() - t0
            times = []
            for _ in range(args.steps):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                loss = step()
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
            ms = statistics.median(times) * 1e3
            rate = flops / (ms * 1e-3) / 1e12
            name = "torch.compile" if compiled else "torch-eager"
            if not math.isfinite(float(loss)):
                print(f"torch_bert_step: {name} {mix}: loss is not finite")
                return 1
            print(f"{name:14s} {mix:7s} step {ms:8.2f} ms  {args.batch / (ms * 1e-3):8.1f} seq/s  "
                  f"MFU {100 * rate / args.peak_tflops:5.1f}%  (warm-up {warmup_s:.1f} s)")
            print(f"RESULT {name} bf16 {mix} seq_per_s={args.batch / (ms * 1e-3):.2f} "
                  f"mfu={rate / args.peak_tflops:.4f} step_ms={ms:.3f} tflops={rate:.2f}")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
