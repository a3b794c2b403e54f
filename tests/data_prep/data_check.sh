#!/usr/bin/env bash
# `mlbert data check` through the real CLI: shards from `data prep` pass (exit 0); a copied shard
# is named as a repeat (exit 1); a folder without shards is an error naming it (exit 2).
#   data_check.sh MLBERT
set -u
mlbert=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
expect() {  # <name> <status> <regex> <command...>
  local name=$1 status=$2 regex=$3
  shift 3
  "$@" > "$work/out.txt" 2>&1
  local rc=$?
  if [[ $rc -ne $status ]] || ! grep -Eq "$regex" "$work/out.txt"; then
    echo "FAIL $name: exit $rc (expected $status), output:"; head -c 2000 "$work/out.txt"
    failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}
printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\na\nmat\ndog\nran\n.\n' > "$work/vocab.txt"
mkdir -p "$work/text"
for part in 0 1; do
  for i in $(seq 1 400); do
    words=$(( (i * 7 + part * 3) % 11 + 1 ))
    line="the"; for w in $(seq 1 $words); do line="$line cat sat on a mat"; done
    echo "$line ."; echo "a dog ran ."; [[ $((i % 4)) -eq 0 ]] && echo
  done > "$work/text/part_$part.txt"
done
"$mlbert" data prep --progress never --dupe-factor 1 --max-seq-length 64 --max-predictions-per-seq 5 \
  --vocab "$work/vocab.txt" --input "$work/text" --output "$work/shards" > /dev/null 2>&1 \
  || { echo "FAIL data prep"; exit 1; }
expect "shards from data prep have no repeat" 0 "^data check: 2 shards, .*; 0 shards repeat another" \
  "$mlbert" data check "$work/shards"
cp "$work/shards/part_0.txt.hdf5" "$work/shards/part_0_again.hdf5"
expect "a copied shard is named as a repeat" 1 \
  "^ADVISE shard-repeat .*part_0.*is repeated byte for byte by part_0_again.hdf5" \
  "$mlbert" data check "$work/shards"
mkdir "$work/empty"
expect "a folder without shards is an error naming it" 2 "empty: no HDF5 shards" \
  "$mlbert" data check "$work/empty"
echo "data_check: $failures failures"
[[ $failures -eq 0 ]]
