#!/usr/bin/env bash
# What `mlbert data prep` reads: a folder's training text only (the vocabulary, eval text and
# binary files a previous step left beside it are named and skipped), and a warning with the rate
# when more than 5% of the text's word pieces are [UNK].
# Usage: prep_inputs.sh <mlbert binary>
set -u
mlbert=$1
source "$(dirname "$0")/cli_checks.sh"

expect_shards() {  # <name> <dir> <expected `ls` of the shards>
  [[ $(shards_of "$2") == "$3" ]] || fail "$1: expected shards '$3', found '$(shards_of "$2")'"
}

"$mlbert" data demo-corpus --output "$work/corpus" --documents 60 --eval-documents 10 --parts 2 \
  >/dev/null || fail "demo-corpus"
prep=("$mlbert" data prep --progress never --dupe-factor 1 --max-seq-length 64
      --max-predictions-per-seq 10)
parts="part-00000-of-00002.txt.hdf5 part-00001-of-00002.txt.hdf5 "

# The folder `data demo-corpus` wrote: its parts become shards, its vocab and eval text do not.
if run 0 "demo corpus folder: vocabulary skipped" "skipped $work/corpus/vocab.txt: the vocabulary given as --vocab" \
    "${prep[@]}" --vocab "$work/corpus/vocab.txt" --input "$work/corpus" --output "$work/train"; then
  grep -qF "skipped $work/corpus/eval.txt: held-out eval text" <<<"$err" ||
    fail "demo corpus folder: eval.txt not named as skipped: $err"
fi
expect_shards "demo corpus folder" "$work/train" "$parts"

# A vocabulary recognised by its content (--vocab names a copy), and a binary file beside the text.
cp "$work/corpus/vocab.txt" "$work/vocab_copy.txt"
cp "$work/train/part-00000-of-00002.txt.hdf5" "$work/corpus/old_shard"
if run 0 "vocabulary by content, binary file" "skipped $work/corpus/vocab.txt: a WordPiece vocabulary" \
    "${prep[@]}" --vocab "$work/vocab_copy.txt" --input "$work/corpus" --output "$work/train2"; then
  grep -qF "skipped $work/corpus/old_shard: binary, not text" <<<"$err" ||
    fail "vocabulary by content, binary file: old_shard not named as skipped: $err"
fi
expect_shards "vocabulary by content, binary file" "$work/train2" "$parts"

# Files named on the command line: eval text is read (that is how eval shards are made), a
# vocabulary is refused; a folder with nothing but a vocabulary and eval text is refused.
run 0 "eval text named as input" "" \
  "${prep[@]}" --vocab "$work/corpus/vocab.txt" --input "$work/corpus/eval.txt" --output "$work/eval"
expect_shards "eval text named as input" "$work/eval" "eval.txt.hdf5 "
run 2 "vocabulary named as input" "vocab_copy.txt: a WordPiece vocabulary, not training text" \
  "${prep[@]}" --vocab "$work/corpus/vocab.txt" --input "$work/vocab_copy.txt" --output "$work/none"
mkdir "$work/no_text" && cp "$work/corpus/vocab.txt" "$work/corpus/eval.txt" "$work/no_text/"
run 2 "folder without training text" "no_text: input directory has no training text files (eval.txt, vocab.txt skipped)" \
  "${prep[@]}" --vocab "$work/corpus/vocab.txt" --input "$work/no_text" --output "$work/none"

# [UNK]: the demo corpus has none; 1 in 20 word pieces is not over 5%, 2 in 20 is.
if run 0 "text the vocabulary fits" "" \
    "${prep[@]}" --vocab "$work/corpus/vocab.txt" --input "$work/corpus/eval.txt" --output "$work/unk0"; then
  [[ $err != *UNK* ]] || fail "text the vocabulary fits: warned: $err"
fi
printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n' > "$work/tiny_vocab.txt"
for i in $(seq 1 200); do printf 'the %.0s' $(seq 1 19); echo 'dog'; done > "$work/unk5.txt"
for i in $(seq 1 200); do printf 'the %.0s' $(seq 1 18); echo 'dog dog'; done > "$work/unk10.txt"
if run 0 "5% [UNK]" "" \
    "${prep[@]}" --vocab "$work/tiny_vocab.txt" --input "$work/unk5.txt" --output "$work/unk5"; then
  [[ $err != *UNK* ]] || fail "5% [UNK]: warned: $err"
fi
run 0 "10% [UNK]" "warning: 10.0% of the text's word pieces are [UNK] (400 of 4000): the vocabulary $work/tiny_vocab.txt does not fit" \
  "${prep[@]}" --vocab "$work/tiny_vocab.txt" --input "$work/unk10.txt" --output "$work/unk10"

finish "prep read training text only"
