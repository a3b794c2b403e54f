#!/usr/bin/env bash
# Bad input through `mlbert data`: each case must exit 2 with one clear message naming the problem
# (file and line, token, dataset and row) and leave no output or temporary file behind.
# Usage: bad_input.sh <mlbert binary>
set -u
mlbert=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

expect_error() {  # <name> <substring of the message> <command...>
  local name=$1 pattern=$2
  shift 2
  local err rc
  err=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc -ne 2 ]]; then
    echo "FAIL $name: exit status $rc, expected 2; stderr: $err"
    failures=$((failures + 1))
  elif ! grep -qF -- "$pattern" <<<"$err"; then
    echo "FAIL $name: message does not mention '$pattern': $err"
    failures=$((failures + 1))
  else
    echo "ok   $name: $err"
  fi
}
expect_empty_dir() {  # <name> <dir>
  if [[ -n "$(ls -A "$2" 2>/dev/null)" ]]; then
    echo "FAIL $1: left files behind: $(ls -A "$2" | tr '\n' ' ')"
    failures=$((failures + 1))
  fi
}

printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\n.\n' > "$work/vocab.txt"
printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\ncat\n' > "$work/vocab_no_mask.txt"
for i in $(seq 1 3000); do printf 'the cat sat .\nthe cat .\n'; [[ $((i % 5)) -eq 0 ]] && echo; done > "$work/good.txt"
printf 'the cat\nthe \xff cat\n' > "$work/bad_utf8.txt"
: > "$work/empty.txt"
printf '\n\n  \t\n\n' > "$work/blank.txt"
prep=("$mlbert" data prep --progress never --dupe-factor 1 --max-seq-length 32 --max-predictions-per-seq 5)

mkdir "$work/out"
expect_error "invalid UTF-8 (prep)" "bad_utf8.txt:2: invalid UTF-8" \
  "${prep[@]}" --vocab "$work/vocab.txt" --input "$work/bad_utf8.txt" --output "$work/out"
expect_empty_dir "invalid UTF-8 (prep)" "$work/out"
expect_error "invalid UTF-8 (tokenize)" "bad_utf8.txt:2: invalid UTF-8" \
  "$mlbert" data tokenize --vocab "$work/vocab.txt" --input "$work/bad_utf8.txt"
if "${prep[@]}" --vocab "$work/vocab.txt" --input "$work/bad_utf8.txt" --output "$work/out" \
    --invalid-utf8 replace >/dev/null 2>&1 && [[ -f "$work/out/bad_utf8.txt.hdf5" ]]; then
  echo "ok   invalid UTF-8 replaced on request"
else
  echo "FAIL --invalid-utf8 replace did not produce a shard"
  failures=$((failures + 1))
fi
rm -rf "$work/out" && mkdir "$work/out"

expect_error "vocab without [MASK]" "no [MASK] token" \
  "${prep[@]}" --vocab "$work/vocab_no_mask.txt" --input "$work/good.txt" --output "$work/out"
expect_error "empty input file" "empty.txt: no text" \
  "${prep[@]}" --vocab "$work/vocab.txt" --input "$work/empty.txt" --output "$work/out"
expect_error "a device as input" "/dev/zero: not a text file or a folder of them" \
  "${prep[@]}" --vocab "$work/vocab.txt" --input /dev/zero --output "$work/out"
expect_error "a negative thread count" "--threads" \
  "${prep[@]}" --vocab "$work/vocab.txt" --input "$work/good.txt" --output "$work/out" --threads -1
expect_error "only blank lines" "blank.txt: no text" \
  "${prep[@]}" --vocab "$work/vocab.txt" --input "$work/blank.txt" --output "$work/out"
expect_empty_dir "empty inputs" "$work/out"
expect_error "missing input" "nope.txt: no such file or directory" \
  "${prep[@]}" --vocab "$work/vocab.txt" --input "$work/nope.txt" --output "$work/out"
expect_error "output below a regular file" "good.txt/sub" \
  "${prep[@]}" --vocab "$work/vocab.txt" --input "$work/good.txt" --output "$work/good.txt/sub"
expect_error "output on a read-only file system" "/proc/mlbert-no-such-dir" \
  "${prep[@]}" --vocab "$work/vocab.txt" --input "$work/good.txt" --output /proc/mlbert-no-such-dir

# A full disk: the file size limit makes writes fail with EFBIG (SIGXFSZ ignored) mid-shard.
expect_error "disk full while writing a shard" "good.txt.hdf5" \
  bash -c "trap '' XFSZ; ulimit -f 16; exec \"\$@\"" _ \
  "${prep[@]}" --vocab "$work/vocab.txt" --input "$work/good.txt" --output "$work/out"
expect_empty_dir "disk full while writing a shard" "$work/out"
expect_error "standard output on a full device" "write to standard output failed" \
  bash -c "exec \"\$@\" > /dev/full" _ "$mlbert" data tokenize --vocab "$work/vocab.txt" --input "$work/good.txt"

# A single 100 MB line: tokenized as one line, and one document for prep.
head -c 100000000 < <(yes 'the cat sat .' | tr '\n' ' ') > "$work/huge.txt"
echo >> "$work/huge.txt"
lines=$("$mlbert" data tokenize --vocab "$work/vocab.txt" --input "$work/huge.txt" | wc -l)
if [[ $lines -eq 1 ]]; then echo "ok   100 MB line tokenized as one line"; else
  echo "FAIL 100 MB line gave $lines output lines"; failures=$((failures + 1)); fi
if "${prep[@]}" --vocab "$work/vocab.txt" --input "$work/huge.txt" --output "$work/huge" >/dev/null &&
   "$mlbert" data inspect "$work/huge/huge.txt.hdf5" | grep -q "1 sequences"; then
  echo "ok   100 MB line made one sample"
else
  echo "FAIL prep of a 100 MB line"; failures=$((failures + 1))
fi

# Damaged shards.
"${prep[@]}" --vocab "$work/vocab.txt" --input "$work/good.txt" --output "$work/shards" >/dev/null
shard="$work/shards/good.txt.hdf5"
head -c 3000 "$shard" > "$work/truncated.hdf5"
expect_error "truncated HDF5" "truncated.hdf5" "$mlbert" data inspect "$work/truncated.hdf5"
expect_error "ids beyond the vocabulary" "'input_ids' row 0: token id" \
  "$mlbert" data inspect "$shard" --vocab-size 5
expect_error "not HDF5" "not an HDF5 file" "$mlbert" data inspect "$work/good.txt"

if [[ $failures -ne 0 ]]; then
  echo "$failures bad-input case(s) failed"
  exit 1
fi
echo "all bad-input cases gave clear errors and left no partial output"
