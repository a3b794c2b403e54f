#!/usr/bin/env python3
"""PyTorch baseline for bench/bert: the same training step (forward, backward, AdamW) of
transformers' BertForPreTraining on the same shapes and thread count, as the mlbert bench runs.

Reads one JSON job on the command line: config, threads, sequence lengths, masked counts, steps,
warmup. Prints one JSON line: {"median_step_s": ..., "tokens": ..., "padded_tokens": ...}.
"""
import json
import statistics
import sys
import time


def main():
    job = json.loads(sys.argv[1])
    import torch
    from transformers import BertConfig, BertForPreTraining
    torch.set_num_threads(job["threads"])
    torch.manual_seed(0)
    c = job["config"]
    config = BertConfig(vocab_size=c["vocab_size"], hidden_size=c["hidden_size"],
                        num_hidden_layers=c["num_hidden_layers"], num_attention_heads=c["num_attention_heads"],
                        intermediate_size=c["intermediate_size"], hidden_act="gelu_new",
                        hidden_dropout_prob=c["hidden_dropout_prob"],
                        attention_probs_dropout_prob=c["attention_probs_dropout_prob"],
                        max_position_embeddings=c["max_position_embeddings"], type_vocab_size=2)
    model = BertForPreTraining(config)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    lengths, masked = job["lengths"], job["masked"]
    width = max(lengths)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, config.vocab_size, (len(lengths), width), generator=g)
    mask = torch.zeros_like(ids)
    labels = torch.full_like(ids, -100)
    for s, (n, m) in enumerate(zip(lengths, masked)):
        mask[s, :n] = 1
        labels[s, 1:1 + m] = ids[s, 1:1 + m]
    types = torch.zeros_like(ids)
    nsp = torch.randint(0, 2, (len(lengths),), generator=g)
    times = []
    for step in range(job["warmup"] + job["steps"]):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        out = model(input_ids=ids, attention_mask=mask, token_type_ids=types, labels=labels,
                    next_sentence_label=nsp)
        out.loss.backward()
        optimizer.step()
        if step >= job["warmup"]:
            times.append(time.perf_counter() - start)
    print(json.dumps({"median_step_s": statistics.median(times), "tokens": sum(lengths),
                      "padded_tokens": width * len(lengths), "torch": torch.__version__,
                      "attention": model.config._attn_implementation}))


if __name__ == "__main__":
    main()
