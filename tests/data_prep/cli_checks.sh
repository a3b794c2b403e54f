# Shared by the data_cli scripts (sourced): a work folder removed on exit, a failure count, and
# `run`, which checks a command's exit status and a substring of its standard error.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

run() {  # <expected status> <name> <substring of stderr or ''> <command...>; sets $err
  local want=$1 name=$2 pattern=$3 rc
  shift 3
  err=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc -ne $want ]]; then
    fail "$name: exit status $rc, expected $want; stderr: $err"
    return 1
  elif [[ -n $pattern ]] && ! grep -qF -- "$pattern" <<<"$err"; then
    fail "$name: stderr does not mention '$pattern': $err"
    return 1
  fi
  echo "ok   $name${err:+: $err}"
}

# The shards in a folder, as `ls` lists them (temporaries are hidden names: not listed).
shards_of() { (cd "$1" && ls -- *.hdf5 2>/dev/null | tr '\n' ' '); }

finish() {  # <what held when nothing failed>
  if [[ $failures -ne 0 ]]; then
    echo "$failures case(s) failed"
    exit 1
  fi
  echo "$1"
}
