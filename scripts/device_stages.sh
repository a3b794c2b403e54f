# shellcheck shell=bash
# Stages of the device check (sourced by scripts/device_check.sh and by its test): each stage runs
# one command under its own time cap, into its own log file, and leaves one summary row (PASS,
# FAIL, TIMEOUT, CRASH, SKIP or NOT RUN) with the reason in one line and, when it did not pass, a
# ready-made rerun line (INTERRUPTED when the check itself is stopped). The summary is printed by stages_finish, which the caller runs from an
# EXIT trap, so it appears whatever a stage did (failed, hung, crashed, or the script was told to
# stop); its return status is non-zero when any stage failed, timed out or crashed.
#
# Design choice: one deadline for the whole run. A stage's cap is the smaller of its own cap and
# the time left minus what the later stages are guaranteed (their reserve), so a hang costs at
# most its cap and never the stages after it; when time runs short the earlier stages keep their
# minimum and a stage that cannot get its minimum is NOT RUN.

STAGES_START=$(date +%s)
STAGES_DEADLINE=420 # seconds from STAGES_START
STAGES_SUMMARY=/dev/null
STAGES_HEADER=""
STAGES_DONE=0
STAGE_NAMES=()
STAGE_RESULTS=()
STAGE_SECONDS=()
STAGE_CAPS=()
STAGE_DETAILS=()
STAGE_RERUNS=()
STAGES_OPTIONAL=" " # names of stages whose NOT RUN (no time left) does not fail the check

# stages_init DEADLINE_SECONDS SUMMARY_FILE HEADER_LINE
stages_init() {
  STAGES_START=$(date +%s)
  STAGES_DEADLINE=$1
  STAGES_SUMMARY=$2
  STAGES_HEADER=$3
  : >"$STAGES_SUMMARY"
}

stages_elapsed() { echo $(($(date +%s) - STAGES_START)); }
stages_left() { echo $((STAGES_DEADLINE - $(stages_elapsed))); }

# The line of a log that says what a stage found: the last line matching REGEX, else the last line.
stage_detail_of() {
  local log=$1 regex=$2 line=""
  [[ -n $regex ]] && line=$(grep -E -- "$regex" "$log" 2>/dev/null | tail -1)
  [[ -z $line ]] && line=$(grep -v -e '^[[:space:]]*$' -e '^== stage ' "$log" 2>/dev/null | tail -1)
  printf '%s' "${line:0:220}"
}

stage_record() {  # name result seconds cap detail rerun
  STAGE_NAMES+=("$1")
  STAGE_RESULTS+=("$2")
  STAGE_SECONDS+=("$3")
  STAGE_CAPS+=("$4")
  STAGE_DETAILS+=("$5")
  STAGE_RERUNS+=("$6")
  printf '[%4ss] %-9s %-11s %s\n' "$(stages_elapsed)" "$1" "$2" "$5"
}

# stage NAME CAP MIN RESERVE LOG DETAIL_REGEX RERUN -- COMMAND...
#   CAP      the most seconds this stage may run
#   MIN      below this many seconds it is not started (NOT RUN)
#   RESERVE  seconds kept for the stages after it
#   LOG      its output (appended); DETAIL_REGEX picks its summary line (see stage_detail_of)
#   RERUN    the command that reruns it alone
# Exit statuses: 0 PASS, 77 SKIP, anything else FAIL; a stage stopped at its cap is TIMEOUT and one
# killed by a signal of its own is CRASH.
stage() {
  local name=$1 cap=$2 min=$3 reserve=$4 log=$5 regex=$6 rerun=$7
  shift 7
  [[ $1 == -- ]] && shift
  local left avail
  left=$(stages_left)
  avail=$((left - reserve))
  # Earlier stages come first: when the reserve would starve this one, it still gets its minimum
  # if the run has that much left (the later stages then get less, or nothing).
  ((avail < min)) && avail=$((left < min ? left : min))
  ((avail < cap)) && cap=$avail
  if ((cap < min)); then
    stage_record "$name" "NOT RUN" 0 "$cap" "only ${cap} s of the run's ${STAGES_DEADLINE} s left (needs ${min} s)" "$rerun"
    return 0
  fi
  echo "== stage $name (cap ${cap} s): $*" >>"$log"
  local t0 status
  t0=$(date +%s)
  # In the background and waited for, so a signal to the check interrupts the wait at once (bash
  # runs traps only between commands) and stages_interrupt can stop the stage and still summarize.
  timeout --kill-after=10 "$cap" "$@" >>"$log" 2>&1 &
  STAGE_PID=$!
  STAGE_RUNNING=$name STAGE_T0=$t0 STAGE_CAP=$cap STAGE_RERUN=$rerun STAGE_LOG=$log
  wait "$STAGE_PID"
  status=$?
  STAGE_RUNNING=""
  local seconds=$(($(date +%s) - t0)) result detail
  detail=$(stage_detail_of "$log" "$regex")
  if ((status == 0)); then
    result=PASS
  elif ((status == 77)); then
    result=SKIP
  elif ((status == 124 || (status == 137 && seconds >= cap))); then
    result=TIMEOUT
    local last
    last=$(grep -E '^running: ' "$log" | tail -1)
    last=${last#running: }
    detail="timed out after ${cap} s${last:+ during \"$last\"}; last output: $detail"
  elif ((status > 128)); then
    result=CRASH
    detail="killed by SIG$(kill -l $((status - 128)) 2>/dev/null || echo $((status - 128))) (exit $status); last output: $detail"
  else
    result=FAIL
    detail="exit $status: $detail"
  fi
  stage_record "$name" "$result" "$seconds" "$cap" "${detail:0:300}" "$rerun"
  [[ $result == PASS || $result == SKIP ]]
}

# After a stage: a better summary line from its log (replaces a PASS row's detail, is appended to
# another's reason), or the rerun lines of what exactly failed (one per line); empty text changes
# nothing.
stage_amend_detail() {
  [[ -z $1 ]] && return 0
  local i=$((${#STAGE_NAMES[@]} - 1))
  if [[ ${STAGE_RESULTS[$i]} == PASS ]]; then
    STAGE_DETAILS[i]=${1:0:300}
  else
    STAGE_DETAILS[i]="${STAGE_DETAILS[$i]} | ${1:0:200}"
  fi
}
stage_amend_rerun() {
  [[ -z $1 ]] && return 0
  STAGE_RERUNS[${#STAGE_NAMES[@]} - 1]=$1
}

# For the caller's TERM/INT traps: stops the running stage (its whole process group, through
# timeout), records it as INTERRUPTED, and exits (the EXIT trap then prints the summary).
stages_interrupt() {
  local signal=$1
  if [[ -n ${STAGE_RUNNING:-} ]]; then
    kill -TERM "$STAGE_PID" 2>/dev/null
    wait "$STAGE_PID" 2>/dev/null
    stage_record "$STAGE_RUNNING" INTERRUPTED $(($(date +%s) - STAGE_T0)) "$STAGE_CAP" \
      "the check was stopped (SIG$signal) during this stage; last output: $(stage_detail_of "$STAGE_LOG" "")" \
      "$STAGE_RERUN"
    STAGE_RUNNING=""
  fi
  exit 130
}

# Prints the summary table once (to stdout and STAGES_SUMMARY); returns 1 when a stage did not
# pass or skip (FAIL, TIMEOUT, CRASH, INTERRUPTED, or NOT RUN for want of time unless it is one of
# STAGES_OPTIONAL), or when no stage ran at all.
stages_finish() {
  ((STAGES_DONE)) && return "${STAGES_STATUS:-1}"
  STAGES_DONE=1
  local i bad=0 ran=0
  for i in "${!STAGE_NAMES[@]}"; do
    case ${STAGE_RESULTS[$i]} in
      PASS | SKIP) ran=1 ;;
      "NOT RUN") [[ $STAGES_OPTIONAL == *" ${STAGE_NAMES[$i]} "* ]] || bad=1 ;;
      *) ran=1 bad=1 ;;
    esac
  done
  {
    echo
    echo "================ device check summary ================"
    [[ -n $STAGES_HEADER ]] && echo "$STAGES_HEADER"
    printf '%-9s %-11s %7s %5s  %s\n' stage result seconds cap detail
    for i in "${!STAGE_NAMES[@]}"; do
      printf '%-9s %-11s %7s %5s  %s\n' "${STAGE_NAMES[$i]}" "${STAGE_RESULTS[$i]}" \
        "${STAGE_SECONDS[$i]}" "${STAGE_CAPS[$i]}" "${STAGE_DETAILS[$i]}"
      case ${STAGE_RESULTS[$i]} in
        PASS | SKIP) ;;
        *) [[ -n ${STAGE_RERUNS[$i]} ]] && printf '%s\n' "${STAGE_RERUNS[$i]}" |
          while read -r line; do printf '%-9s rerun: %s\n' "" "$line"; done ;;
      esac
    done
    ((${#STAGE_NAMES[@]} == 0)) && echo "(no stage ran)"
    echo "total $(stages_elapsed) s of ${STAGES_DEADLINE} s; $( ((bad || !ran)) && echo "NOT all stages passed" || echo "every stage passed or was skipped")"
  } | tee -a "$STAGES_SUMMARY"
  STAGES_STATUS=0
  ((bad || !ran)) && STAGES_STATUS=1
  return "$STAGES_STATUS"
}
