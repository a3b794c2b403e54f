#!/usr/bin/env bash
# Stops a cluster made by scripts/slurm/cluster_up.sh and removes its state folder: cancels its
# jobs, then stops slurmd, slurmctld and munged by the pid files in DIR. A process is signalled only
# when its command line names DIR, so a pid reused by an unrelated process is left alone.
#
#   scripts/slurm/cluster_down.sh DIR [--keep]
#     --keep  stop everything but keep DIR (its logs)
#
# Safe to run twice, and on a half-started cluster (it is what test traps call). Exit status: 0 all
# stopped (and DIR removed); 1 a daemon did not stop within 15 s of SIGKILL; 2 bad arguments, or
# DIR was not made by cluster_up.sh (it is then left untouched).
set -uo pipefail

dir=""
keep=0
while (($#)); do
  case "$1" in
    --keep) keep=1; shift ;;
    -*) echo "cluster_down.sh: unknown option '$1'" >&2; exit 2 ;;
    *) [[ -z $dir ]] || { echo "cluster_down.sh: one DIR only" >&2; exit 2; }; dir=$1; shift ;;
  esac
done
[[ -n $dir ]] || { echo "usage: scripts/slurm/cluster_down.sh DIR [--keep]" >&2; exit 2; }
[[ -e $dir ]] || exit 0
if [[ ! -f $dir/.mlbert-slurm-cluster ]]; then
  echo "cluster_down.sh: $dir was not made by cluster_up.sh; left untouched" >&2
  exit 2
fi
dir=$(cd "$dir" && pwd)

# The pid in FILE, when that process is alive and its command line names DIR.
cluster_pid() {
  local pid
  [[ -f $1 ]] || return 1
  pid=$(cat "$1" 2> /dev/null) && [[ $pid =~ ^[0-9]+$ ]] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2> /dev/null | grep -qF "$dir/" || return 1
  echo "$pid"
}

status=0
stop() {
  local pid name=$2 i
  pid=$(cluster_pid "$1") || return 0
  kill -TERM "$pid" 2> /dev/null
  for ((i = 0; i < 150; ++i)); do
    kill -0 "$pid" 2> /dev/null || return 0
    ((i == 100)) && kill -KILL "$pid" 2> /dev/null
    sleep 0.1
  done
  echo "cluster_down.sh: $name (pid $pid) did not stop" >&2
  status=1
}

if [[ -f $dir/slurm.conf ]] && cluster_pid "$dir/state/slurmctld.pid" > /dev/null; then
  export SLURM_CONF=$dir/slurm.conf
  mapfile -t jobs < <(squeue -h -o %i 2> /dev/null)
  if ((${#jobs[@]})); then
    scancel "${jobs[@]}" 2> /dev/null
    for ((i = 0; i < 30; ++i)); do
      [[ -z $(squeue -h -o %i 2> /dev/null) ]] && break
      sleep 1
    done
  fi
fi
stop "$dir/state/slurmd.pid" slurmd
stop "$dir/state/slurmctld.pid" slurmctld
stop "$dir/munge/munged.pid" munged
((keep || status)) || rm -rf "$dir"
exit "$status"
