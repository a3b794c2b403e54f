#!/usr/bin/env bash
# help_test.sh MLBERT: `mlbert --help` lists the commands under the job groups audit, official
# (the official tools' command lines), data, model and train, in that order, one line each and at
# most 80 columns; every command's --help (nested ones too) exits 0 and ends with "Example:" and one
# line that runs that very command.
set -u
bin=$1
fail() { echo "FAIL: $*"; exit 1; }

top=$("$bin" --help) || fail "mlbert --help exited $?"
[[ $(head -n 1 <<<"$top") == "mlbert: prepare, run and audit MLPerf Training BERT submissions" ]] ||
  fail "mlbert --help's first line: $(head -n 1 <<<"$top")"
groups=$(grep -Eo '^(audit|official|data|model|train): ' <<<"$top" | tr -d ': ' | tr '\n' ' ')
[[ $groups == "audit official data model train " ]] || fail "groups in mlbert --help: '$groups'"

# The command lines: two spaces, the name, two or more spaces, a description, between the first
# group heading and the closing hint.
section=$(sed -n '/^audit: /,/^`mlbert COMMAND --help`/p' <<<"$top" | sed '$d')
headings=$(grep -Ev '^(  |$)' <<<"$section" | grep -Ev '^(audit|official|data|model|train): ')
[[ -z $headings ]] || fail "commands outside the groups audit, official, data, model, train: under '$headings'"
listing=$(grep -E '^  [a-z]' <<<"$section")
commands=$(awk '{print $1}' <<<"$listing")
[[ $(wc -l <<<"$commands") -ge 11 ]] || fail "fewer than 11 commands listed: $commands"
while IFS= read -r line; do
  [[ $line =~ ^\ \ [a-z][a-z_-]*\ {2,}[^\ ] ]] || fail "not one line 'name  description': '$line'"
  (( ${#line} <= 80 )) || fail "wider than 80 columns (${#line}): '$line'"
done <<<"$listing"
for c in check score package compliance_checker repo_checker data checkpoint train launch demo; do
  grep -qx "$c" <<<"$commands" || fail "$c is not listed"
done

subs=$(mktemp)
trap 'rm -f "$subs"' EXIT
check_example() {  # the command's words; its subcommands go to $subs
  local out rc last example words="mlbert${*:+ $*}"
  out=$("$bin" "$@" --help 2>&1)
  rc=$?
  [[ $rc -eq 0 ]] || fail "$words --help exited $rc"
  example=$(tail -n 1 <<<"$out")
  last=$(tail -n 2 <<<"$out" | head -n 1)
  [[ $last == "Example:" ]] || fail "$words --help does not end with an example: '$last' / '$example'"
  local runs="^  ([a-z]+ .* )?$words "  # `mpirun ... mlbert train` is allowed
  [[ $example =~ $runs ]] || fail "$words --help: the example does not run $words: '$example'"
  sed -n '/^Subcommands:/,/^$/p' <<<"$out" | grep -E '^  [a-z]' | awk '{print $1}' >"$subs"
}
check_example
n=1
for c in $commands; do
  check_example "$c"
  n=$((n + 1))
  for sub in $(cat "$subs"); do
    check_example "$c" "$sub"
    n=$((n + 1))
  done
done
echo "ok: $n commands end their help with an example"
