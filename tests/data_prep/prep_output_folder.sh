#!/usr/bin/env bash
# `mlbert data prep` and its output folder: one writer at a time, never a shard that the folder's
# length index does not describe, and never an earlier run's shards mixed into a new index.
# Usage: prep_output_folder.sh <mlbert binary>
set -u
mlbert=$1
source "$(dirname "$0")/cli_checks.sh"

# The folder's length index equals a fresh index of the shards that are there (written in the
# folder: the index names its shards relative to its own directory).
index_describes_folder() {  # <name> <dir>
  local fresh=$2/.fresh.index same
  "$mlbert" data index "$2" --output "$fresh" >/dev/null 2>&1 && cmp -s "$2/lengths.index" "$fresh"
  same=$?
  rm -f "$fresh"
  if [[ ! -f $2/lengths.index ]]; then
    fail "$1: $2 holds shards ($(shards_of "$2")) but no lengths.index"
  elif [[ $same -ne 0 ]]; then
    fail "$1: $2/lengths.index does not describe the shards there ($(shards_of "$2"))"
  else
    echo "ok   $1: lengths.index describes $(shards_of "$2")"
  fi
}

printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\ndog\nran\n.\n' > "$work/vocab.txt"
for name in a b c; do
  for i in $(seq 1 400); do printf 'the cat sat .\nthe dog ran .\n'; [[ $((i % 5)) -eq 0 ]] && echo; done \
    > "$work/$name.txt"
done
: > "$work/b_empty.txt"
printf '\n  \n\t\n' > "$work/b_blank.txt"  # found to hold no text only once it is read
prep=("$mlbert" data prep --progress never --dupe-factor 1 --max-seq-length 32
      --max-predictions-per-seq 5 --vocab "$work/vocab.txt")

# An empty input is refused before any shard is written; one found to hold no text when it is
# read, after a finished one, makes the run take the finished shard back and leave no index.
mkdir "$work/fresh"
run 2 "empty input" "b_empty.txt: no text to make samples from (an empty file)" \
  "${prep[@]}" --threads 1 --input "$work/a.txt" "$work/b_empty.txt" --output "$work/fresh"
[[ -z "$(ls -A "$work/fresh")" ]] || fail "empty input: left $(ls -A "$work/fresh" | tr '\n' ' ')"
run 2 "blank input after a finished one" "b_blank.txt: no text" \
  "${prep[@]}" --threads 1 --input "$work/a.txt" "$work/b_blank.txt" --output "$work/fresh"
if [[ -n "$(shards_of "$work/fresh")" || -e $work/fresh/lengths.index ]]; then
  fail "blank input after a finished one: left $(ls -A "$work/fresh" | tr '\n' ' ')"
fi

# A failing rerun over an earlier run's folder: what is left is indexed as it now is.
run 0 "earlier run a, c" "" "${prep[@]}" --threads 1 --input "$work/a.txt" "$work/c.txt" --output "$work/rerun"
run 2 "rerun a, b_blank over it" "b_blank.txt: no text" \
  "${prep[@]}" --threads 1 --input "$work/a.txt" "$work/b_blank.txt" "$work/c.txt" --output "$work/rerun"
[[ "$(shards_of "$work/rerun")" == "c.txt.hdf5 " ]] ||
  fail "failed rerun: expected only the earlier c.txt.hdf5 left, found $(shards_of "$work/rerun")"
index_describes_folder "failed rerun" "$work/rerun"

# A rerun with fewer inputs: refused, the folder untouched; with --replace the extra shards go.
run 0 "earlier run a, b, c" "" \
  "${prep[@]}" --threads 1 --input "$work/a.txt" "$work/b.txt" "$work/c.txt" --output "$work/fewer"
before=$(cd "$work/fewer" && sha256sum -- * | sha256sum)
run 2 "rerun with fewer inputs" "holds 2 shard(s) that these inputs do not produce (b.txt.hdf5, c.txt.hdf5)" \
  "${prep[@]}" --threads 1 --input "$work/a.txt" --output "$work/fewer"
[[ "$(cd "$work/fewer" && sha256sum -- * | sha256sum)" == "$before" ]] ||
  fail "refused rerun with fewer inputs changed the folder"
run 0 "rerun with fewer inputs and --replace" "removed $work/fewer/b.txt.hdf5" \
  "${prep[@]}" --threads 1 --input "$work/a.txt" --output "$work/fewer" --replace
[[ "$(shards_of "$work/fewer")" == "a.txt.hdf5 " ]] ||
  fail "--replace: expected only a.txt.hdf5, found $(shards_of "$work/fewer")"
index_describes_folder "rerun with fewer inputs and --replace" "$work/fewer"

# A second writer: refused at once while the folder is locked, and never a broken index when two
# runs start together.
mkdir "$work/locked"
exec 9<"$work/locked"  # this shell holds the lock, as a running prep would
flock -n 9 || fail "could not lock $work/locked for the test"
run 2 "second writer" "another \`mlbert data prep\` is writing to this folder" \
  timeout 20 "${prep[@]}" --threads 1 --input "$work/a.txt" --output "$work/locked"
[[ -z "$(ls -A "$work/locked")" ]] || fail "second writer: wrote $(ls -A "$work/locked" | tr '\n' ' ')"
exec 9<&-
for k in 1 2 3; do
  "${prep[@]}" --threads 2 --input "$work/a.txt" "$work/b.txt" "$work/c.txt" \
    --output "$work/race" >/dev/null 2>"$work/race1.err" &
  first=$!
  "${prep[@]}" --threads 2 --input "$work/a.txt" "$work/b.txt" "$work/c.txt" \
    --output "$work/race" >/dev/null 2>"$work/race2.err"
  rc2=$?
  wait $first
  rc1=$?
  for r in "1 $rc1" "2 $rc2"; do
    set -- $r
    if [[ $2 -ne 0 ]] && ! grep -qF "is writing to this folder" "$work/race$1.err"; then
      fail "two writers at once (trial $k): run $1 exited $2: $(cat "$work/race$1.err")"
    fi
  done
  index_describes_folder "two writers at once (trial $k, exits $rc1 $rc2)" "$work/race"
done

finish "every prep output folder held one run's shards, all indexed"
