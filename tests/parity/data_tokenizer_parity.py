#!/usr/bin/env python3
"""Parity: `mlbert data tokenize` against the Hugging Face `tokenizers` BertWordPieceTokenizer
(uncased defaults, --flavor hf) and against Google BERT's tokenization.FullTokenizer, the code MLPerf's
create_pretraining_data.py uses (--flavor reference), on the real 30,522-token uncased vocabulary and
a generated stress corpus: accents and combining marks, CJK (ideographs, compatibility ideographs,
punctuation, fullwidth forms), emoji, control and format characters, zero-width characters, NBSP and
other spaces, mixed scripts, words of 99..250 characters, empty and whitespace-only lines, final
sigma, invalid-looking but valid code points (U+FFFD, private use).

Random characters are drawn from code points whose general category is the same in Unicode 3.2 and in
this Python's Unicode database: HF's Rust tables and utf8proc are of different Unicode versions, and
characters assigned or re-categorised recently are a known, documented difference, not noise to
average away. Exit 0 pass, 1 fail, 77 skip.
"""
import os
import random
import subprocess
import sys
import tempfile
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data_oracles  # noqa: E402

BLOCKS = [
    (0x20, 0x7E), (0x00, 0x1F), (0x7F, 0xFF), (0x100, 0x24F), (0x250, 0x2FF), (0x300, 0x36F),
    (0x370, 0x3FF), (0x400, 0x4FF), (0x530, 0x58F), (0x590, 0x5FF), (0x600, 0x6FF),
    (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x1E00, 0x1FFF), (0x2000, 0x206F),
    (0x20A0, 0x20CF), (0x2100, 0x214F), (0x2190, 0x22FF), (0x2460, 0x24FF), (0x3000, 0x303F),
    (0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xE000, 0xE0FF),
    (0xF900, 0xFAFF), (0xFB00, 0xFB4F), (0xFE00, 0xFE6F), (0xFF00, 0xFFEF), (0xFFF0, 0xFFFD),
    (0x1D400, 0x1D7FF), (0x20000, 0x2A6DF), (0x2F800, 0x2FA1F), (0xE0000, 0xE007F),
]
EMOJI = [chr(c) for c in list(range(0x1F600, 0x1F64F)) + list(range(0x1F300, 0x1F3FF))] + [
    "\U0001F469\u200D\U0001F4BB", "\U0001F44D\U0001F3FD", "\u2764\uFE0F", "\U0001F1EB\U0001F1F7"]
SPECIAL = ["\u00A0", "\u200B", "\u200C", "\u200D", "\u200E", "\u2028", "\u2029", "\uFEFF",
           "\u00AD", "\u3000", "\u202F", "\u1680", "\t", "\r", "\x0b", "\x0c", "\x85", "\x00",
           "\uFFFD", "\u0301", "\u0308", "\u0327", "\u3002", "\uFF0C", "\u300C", "\u300D",
           "\u2014", "\u2026", "\u00BF", "\u00A1", "\u0130", "\u1E9E", "\u212B", "\u2126"]
WORDS = ["Café", "naïve", "résumé", "Ångström", "ΟΔΟΣ", "Σίσυφος", "ΣΑΣ", "Москва", "İstanbul",
         "straße", "ﬁnance", "東京大学", "北京欢迎你", "한국어", "カタカナ", "ʻokina", "Ǆemal", "ǅ",
         "e\u0301tude", "a\u0323\u0302", "ß", "ﬀ", "Ⅻ", "①②", "x²", "don't", "U.S.A.", "e-mail",
         "C++", "$100.00", "50%", "#hashtag", "@user", "http://example.com/a?b=c&d=e"]


def stable_char(rng):
    while True:
        lo, hi = rng.choice(BLOCKS)
        ch = chr(rng.randint(lo, hi))
        cat = unicodedata.category(ch)
        if cat == "Cn" or cat == "Cs":
            continue
        if unicodedata.ucd_3_2_0.category(ch) != cat:
            continue  # assigned or re-categorised after Unicode 3.2
        if ch == "\n":
            continue
        return ch


def stress_corpus(vocab_words, seed=7):
    rng = random.Random(seed)
    lines = ["", " ", "\t \u3000", "\x00\x01\x02", "\u200b\u200b", "Hello, World!", "[CLS] [SEP] [MASK]",
             "a" * 99, "b" * 100, "c" * 101, "d" * 199, "e" * 200, "f" * 201, "g" * 250,
             "ΟΔΟΣ ΟΔΟΣ. Σ ΣΣ ΑΣ' ΑΣ.Α", "İİ i̇", "\U0001F600" * 3, "x\U0001F600y"]
    lines.append(" ".join(WORDS))
    for _ in range(1500):
        kind = rng.randrange(6)
        parts = []
        for _ in range(rng.randint(1, 25)):
            r = rng.random()
            if r < 0.45:
                w = rng.choice(vocab_words)
                if rng.random() < 0.3:
                    w = w.upper() if rng.random() < 0.5 else w.capitalize()
                if rng.random() < 0.2:
                    i = rng.randint(0, len(w))
                    w = w[:i] + rng.choice(["\u0301", "\u0300", "\u0308", "\u0303", "\u030A"]) + w[i:]
                parts.append(w)
            elif r < 0.6:
                parts.append("".join(stable_char(rng) for _ in range(rng.randint(1, 8))))
            elif r < 0.7:
                parts.append(rng.choice(WORDS))
            elif r < 0.8:
                parts.append(rng.choice(EMOJI))
            elif r < 0.9:
                parts.append(rng.choice(SPECIAL))
            else:
                parts.append("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in
                                     range(rng.choice([5, 40, 99, 100, 101, 150, 199, 200, 201]))))
        sep = rng.choice([" ", "", " ", "\u00A0", "  "])
        line = sep.join(parts)
        if kind == 0:
            line = line.upper()
        lines.append(line.replace("\n", " "))
    return lines


def run_mlbert(binary, vocab, lines, flavor, workdir):
    path = os.path.join(workdir, f"stress_{flavor}.txt")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    out = subprocess.run([binary, "data", "tokenize", "--vocab", vocab, "--input", path,
                          "--flavor", flavor], capture_output=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"mlbert data tokenize failed: {out.stderr.decode(errors='replace')}")
    got = out.stdout.decode().split("\n")[:-1]
    return [[int(t) for t in g.split()] for g in got]


def compare(name, lines, expected, got):
    if len(expected) != len(got):
        print(f"{name}: {len(expected)} lines expected, {len(got)} produced")
        return False
    bad = [i for i in range(len(lines)) if expected[i] != got[i]]
    for i in bad[:5]:
        print(f"{name}: line {i} {lines[i]!r}\n  oracle {expected[i]}\n  mlbert {got[i]}")
    if bad:
        print(f"{name}: {len(bad)} of {len(lines)} lines differ")
        return False
    n = sum(len(e) for e in expected)
    print(f"{name}: {len(lines)} lines, {n} ids identical")
    return True


def main():
    binary = data_oracles.project_binary()
    if binary is None:
        return 1
    try:
        from tokenizers import BertWordPieceTokenizer
    except ImportError as e:
        print(f"SKIPPED: HF tokenizers not installed ({e})")
        return 77
    with tempfile.TemporaryDirectory() as work:
        try:
            vocab = data_oracles.bert_uncased_vocab(work)
            tokenization, _ = data_oracles.reference_modules()
        except data_oracles.Skip as e:
            print(f"SKIPPED: {e}")
            return 77
        vocab_words = [w for w in open(vocab, encoding="utf-8").read().split("\n") if w and
                       not w.startswith("[")]
        lines = stress_corpus(vocab_words)
        hf = BertWordPieceTokenizer(vocab, lowercase=True)
        expected_hf = [hf.encode(l, add_special_tokens=False).ids for l in lines]
        ok = compare("hf tokenizers", lines, expected_hf, run_mlbert(binary, vocab, lines, "hf", work))
        ref = tokenization.FullTokenizer(vocab_file=vocab, do_lower_case=True)
        expected_ref = [ref.convert_tokens_to_ids(ref.tokenize(l)) for l in lines]
        ok &= compare("reference (Google BERT tokenization.py)", lines, expected_ref,
                      run_mlbert(binary, vocab, lines, "reference", work))
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
