#!/usr/bin/env python3
"""Baselines timed for bench/data_prep/data_bench (run by it, not by hand):

  reference_bench.py vocab DIR                      write the real bert-base-uncased vocab.txt
  reference_bench.py hf VOCAB TEXT THREADS          HF tokenizers BertWordPieceTokenizer.encode_batch
  reference_bench.py prep VOCAB TEXT                Google/MLPerf create_training_instances

Each timing command prints one JSON object with seconds (best of its repeats) and counts.
"""
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "parity"))


def main():
    cmd = sys.argv[1]
    if cmd == "vocab":
        import data_oracles
        print(data_oracles.bert_uncased_vocab(sys.argv[2]))
        return
    if cmd == "hf":
        vocab, text, threads = sys.argv[2], sys.argv[3], sys.argv[4]
        os.environ["RAYON_NUM_THREADS"] = threads  # before tokenizers starts its pool
        os.environ["TOKENIZERS_PARALLELISM"] = "true"
        from tokenizers import BertWordPieceTokenizer
        tok = BertWordPieceTokenizer(vocab, lowercase=True)
        with open(text, encoding="utf-8", newline="\n") as f:
            lines = f.read().split("\n")
        best, ids = None, 0
        for _ in range(3):
            start = time.perf_counter()
            enc = tok.encode_batch(lines, add_special_tokens=False)
            elapsed = time.perf_counter() - start
            ids = sum(len(e.ids) for e in enc)
            best = elapsed if best is None else min(best, elapsed)
        print(json.dumps({"seconds": best, "ids": ids, "lines": len(lines)}))
        return
    if cmd == "prep":
        import data_oracles
        vocab, text = sys.argv[2], sys.argv[3]
        tokenization, cpd = data_oracles.reference_modules()
        tokenizer = tokenization.FullTokenizer(vocab_file=vocab, do_lower_case=True)
        start = time.perf_counter()
        instances = cpd.create_training_instances([text], tokenizer, 512, 10, 0.1, 0.15, 76,
                                                  random.Random(12345))
        elapsed = time.perf_counter() - start
        tokens = sum(len(i.tokens) for i in instances)
        print(json.dumps({"seconds": elapsed, "samples": len(instances), "tokens": tokens}))
        return
    raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
