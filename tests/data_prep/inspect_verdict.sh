#!/usr/bin/env bash
# `mlbert data inspect` ends with a one-line verdict: the shard valid, and whether the length index
# beside it describes it as it is now.
# Usage: inspect_verdict.sh <mlbert binary>
set -u
mlbert=$1
source "$(dirname "$0")/cli_checks.sh"

verdict_is() {  # <name> <expected last line> <inspect arguments...>
  local name=$1 want=$2 out rc
  shift 2
  out=$("$mlbert" data inspect "$@" 2>&1)
  rc=$?
  if [[ $rc -ne 0 ]]; then
    fail "$name: exit status $rc: $out"
  elif [[ $(tail -n 1 <<<"$out") != "$want" ]]; then
    fail "$name: last line '$(tail -n 1 <<<"$out")', expected '$want'"
  else
    echo "ok   $name: $want"
  fi
}

printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\ndog\nran\n.\n' > "$work/vocab.txt"
for i in $(seq 1 300); do printf 'the cat sat .\nthe dog ran .\n'; [[ $((i % 5)) -eq 0 ]] && echo; done \
  > "$work/a.txt"
head -n 200 "$work/a.txt" > "$work/b.txt"
"$mlbert" data prep --progress never --dupe-factor 1 --max-seq-length 32 --max-predictions-per-seq 5 \
  --vocab "$work/vocab.txt" --input "$work/a.txt" "$work/b.txt" --output "$work/s" >/dev/null ||
  fail "prep"
rows_of() { "$mlbert" data inspect "$1" | head -n 1 | sed 's/.* layout, \([0-9]*\) rows.*/\1/'; }
a=$work/s/a.txt.hdf5
rows=$(rows_of "$a")
b_rows=$(rows_of "$work/s/b.txt.hdf5")
valid="verdict: valid varlen shard, $rows rows, $rows sequences"

verdict_is "indexed shard" "$valid; $work/s/lengths.index describes it as it is" "$a"
out=$("$mlbert" data inspect --dump "$a" 2>/dev/null)
if grep -qv '^{"input_ids"' <<<"$out"; then fail "--dump: a line of standard output is not a sample"; fi
verdict_is "--dump: the verdict on standard error" \
  "$valid; $work/s/lengths.index describes it as it is" --dump "$a"
cp "$a" "$work/s/copy.hdf5"
verdict_is "shard the index does not list" \
  "$valid; but $work/s/lengths.index does not list it: a trainer refuses it until \`mlbert data index $work/s\` rebuilds it" \
  "$work/s/copy.hdf5"
rm "$work/s/copy.hdf5"
# The same samples written a second later: same rows, other bytes (HDF5 records the time).
sleep 1.1
"$mlbert" data prep --progress never --dupe-factor 1 --max-seq-length 32 --max-predictions-per-seq 5 \
  --vocab "$work/vocab.txt" --input "$work/a.txt" --output "$work/s2" >/dev/null || fail "prep again"
cmp -s "$a" "$work/s2/a.txt.hdf5" && fail "the shard written again has the same bytes"
cp "$a" "$work/a.orig" && cp "$work/s2/a.txt.hdf5" "$a"
verdict_is "shard rewritten after indexing" \
  "$valid; but $work/s/lengths.index records other content (the shard changed after it was indexed): a trainer refuses it until \`mlbert data index $work/s\` rebuilds it" \
  "$a"
cp "$work/a.orig" "$a"
cp "$work/s/b.txt.hdf5" "$a"
verdict_is "shard replaced after indexing" \
  "verdict: valid varlen shard, $b_rows rows, $b_rows sequences; but $work/s/lengths.index records $rows rows: a trainer refuses it until \`mlbert data index $work/s\` rebuilds it" \
  "$a"
rm "$work/s/lengths.index"
verdict_is "no index" \
  "verdict: valid varlen shard, $b_rows rows, $b_rows sequences; no length index beside it (\`mlbert data index $work/s\` writes one)" \
  "$work/s/b.txt.hdf5"

finish "every inspect ended with its verdict"
