#!/usr/bin/env bash
# Commands against special files: outputs over devices, FIFOs, symlinks and their own inputs;
# inputs that are FIFOs, devices, sockets or symlink loops; standard output on a full device;
# control bytes in a log's records.
#   special_files.sh MLBERT SOURCE_DIR CASE
# Every special file is made in this test's own temporary folder (a device node with mknod there),
# never the system's /dev/null or /dev/full: a regression can only replace the test's own node.
# Every command runs under a time bound, so a command that blocks fails the test instead of hanging.
set -u
mlbert=$1 source_dir=$2 case=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

fail() { echo "FAIL ($case): $*"; echo "--- output"; head -c 2000 out.txt 2>/dev/null; exit 1; }
# run SECONDS CMD...: status and out.txt (stderr, then stdout); a command past SECONDS fails the test.
run() {
  local bound=$1
  shift
  timeout -k 1 "$bound" "$@" >stdout.txt 2>out.txt </dev/null
  status=$?
  cat stdout.txt >>out.txt
  [[ $status -eq 124 || $status -eq 137 ]] && fail "blocked more than ${bound}s: $*"
  echo "ran: $* -> exit $status"
}
expect_status() { [[ $status -eq $1 ]] || fail "exit status $status, expected $1"; }
expect_line() { grep -Eq -- "$1" out.txt || fail "no line matches /$1/"; }
# A node of the kernel's device major 1, minor $2 (3: null, 5: zero, 7: full) named $1.
make_device() { mknod "$1" c 1 "$2" || { echo "SKIPPED: mknod needs root"; exit 77; }; }
one_log() { mkdir -p sys && "$mlbert" check --print-example --ruleset 4.1.0 >sys/result_0.txt; }

case $case in
  report-out-device)
    one_log
    make_device null 3
    run 10 "$mlbert" report --ruleset 4.1.0 sys --out null
    expect_status 2
    expect_line "^mlbert: error: null: cannot write the report there [(]is a character device, not a regular file"
    [[ -c null ]] || fail "the device node was replaced"
    ;;
  report-out-fifo)
    one_log
    mkfifo fifo
    run 10 "$mlbert" report --ruleset 4.1.0 sys --out fifo
    expect_status 2
    expect_line "^mlbert: error: fifo: cannot write the report there [(]is a FIFO, not a regular file"
    [[ -p fifo ]] || fail "the FIFO was replaced"
    ;;
  report-out-symlink)
    one_log
    echo old >page.html
    ln -s page.html latest.html
    run 30 "$mlbert" report --ruleset 4.1.0 sys --out latest.html
    expect_status 0
    [[ -L latest.html ]] || fail "the symlink was replaced"
    grep -q '<svg' page.html || fail "the page the link points to was not written"
    ;;
  report-out-input)
    one_log
    cp sys/result_0.txt before.txt
    ln -s sys/result_0.txt link.txt
    for out in sys/result_0.txt link.txt; do
      run 30 "$mlbert" report --ruleset 4.1.0 sys --out "$out"
      expect_status 2
      expect_line "^mlbert: error: $out: is sys/result_0.txt, an input of this command; write the output elsewhere$"
    done
    cmp -s before.txt sys/result_0.txt || fail "the input log was changed"
    ;;
  simulate-plot-device)
    make_device null 3
    run 30 "$mlbert" simulate --system dgxa100_1x8 --systems-dir "$source_dir/systems" --plot null
    expect_status 2
    expect_line "^mlbert: error: null: is a character device, not a regular file"
    [[ -c null ]] || fail "the device node was replaced"
    ;;
  simulate-plot-input)
    cp "$source_dir/systems/dgxa100_1x8.json" system.json
    cp system.json before.json
    run 30 "$mlbert" simulate --system ./system.json --profiles-dir "$source_dir/systems/profiles" \
      --plot system.json
    expect_status 2
    expect_line "^mlbert: error: system.json: is ./system.json, an input of this command"
    cmp -s before.json system.json || fail "the system file was changed"
    ;;
  eval-set-output-device)
    "$mlbert" data demo-corpus --output corpus --documents 20 --eval-documents 20 --parts 1 >/dev/null &&
      "$mlbert" data prep --vocab corpus/vocab.txt --input corpus/eval.txt --output eval_source \
        --max-seq-length 64 --max-predictions-per-seq 10 --progress never >/dev/null ||
      fail "could not prepare an eval source"
    make_device null 3
    run 30 "$mlbert" data eval-set --input eval_source/eval.txt.hdf5 --output null --count 10 \
      --max-seq-length 64 --max-predictions-per-seq 10
    expect_status 2
    expect_line "null: is a character device, not a regular file"
    [[ -c null ]] || fail "the device node was replaced"
    ;;
  report-out-stdout)
    # --out - and --out /dev/stdout: the page is standard output, the summary goes to stderr.
    one_log
    for out in - /dev/stdout; do
      run 30 "$mlbert" report --ruleset 4.1.0 sys --out "$out"
      expect_status 0
      head -c 15 stdout.txt | grep -qi '^<!doctype html' || fail "--out $out: stdout is not the page"
      tail -c 20 stdout.txt | grep -q '</html>' || fail "--out $out: the page on stdout is cut short"
      grep -q "mlbert report: wrote" stdout.txt && fail "--out $out: the summary is mixed into the page"
      expect_line "^mlbert report: wrote $out$"
    done
    [[ -e ./- ]] && fail "a file named - was written"
    run 30 "$mlbert" report --ruleset 4.1.0 sys --out page.html --csv -
    expect_status 0
    head -1 stdout.txt | grep -q '^division,' || fail "--csv -: stdout is not the CSV"
    run 30 "$mlbert" report --ruleset 4.1.0 sys --out - --json -
    expect_status 2
    expect_line "^mlbert: error: report: only one of --out, --csv and --json can be standard output$"
    make_device full 7
    timeout -k 1 30 "$mlbert" report --ruleset 4.1.0 sys --out - >full 2>out.txt </dev/null
    status=$?
    expect_status 2
    expect_line "^mlbert: error: writing to standard output failed: No space left on device; the output is incomplete$"
    [[ -c full ]] || fail "the device node was replaced"
    ;;
  simulate-plot-stdout)
    # --plot -: the SVG is standard output, the prediction goes to stderr.
    for out in - /dev/stdout; do
      run 30 "$mlbert" simulate --system dgxa100_1x8 --systems-dir "$source_dir/systems" --plot "$out"
      expect_status 0
      grep -q '<svg' stdout.txt || fail "--plot $out: stdout is not the SVG"
      tail -c 20 stdout.txt | grep -q '</svg>' || fail "--plot $out: the SVG on stdout is cut short"
      grep -q '^mlbert simulate: dgxa100_1x8' stdout.txt && fail "--plot $out: the prediction is mixed into the SVG"
      expect_line "^mlbert simulate: dgxa100_1x8 [(]1 nodes"
    done
    make_device full 7
    timeout -k 1 30 "$mlbert" simulate --system dgxa100_1x8 --systems-dir "$source_dir/systems" \
      --plot - >full 2>out.txt </dev/null
    status=$?
    expect_status 2
    expect_line "^mlbert: error: writing to standard output failed: No space left on device; the output is incomplete$"
    ;;
  eval-set-output-stdout)
    # An HDF5 eval set cannot be a stream: --output - is refused before anything is read.
    run 10 "$mlbert" data eval-set --input "$source_dir/systems/cpu_demo.json" --output - --count 10
    expect_status 2
    expect_line "^mlbert: error: --output -: an eval set is an HDF5 file, which cannot go to standard output; name a file$"
    [[ -e ./- ]] && fail "a file named - was written"
    ;;
  rcp-unreadable-run)
    # One log of a folder that cannot be read (here a folder under a result name) drops that run
    # alone, as score drops it: the other runs are judged as they would be without it.
    one_log
    cp sys/result_0.txt sys/result_1.txt && cp sys/result_0.txt sys/result_2.txt
    run 30 "$mlbert" rcp --ruleset 4.1.0 sys
    without=$status
    head -1 stdout.txt >verdict_without.txt
    mkdir sys/result_3.txt
    run 30 "$mlbert" rcp --ruleset 4.1.0 sys
    [[ $status -eq $without ]] || fail "exit status $status with the unreadable log, $without without it"
    head -1 stdout.txt | cmp -s - verdict_without.txt ||
      fail "the verdict changed: $(head -1 stdout.txt) / $(cat verdict_without.txt)"
    expect_line "^  result_3.txt	dropped: cannot read: sys/result_3.txt: is a directory, not a file$"
    score_line=$("$mlbert" score --ruleset 4.1.0 --verbose sys 2>/dev/null | grep 'result_3.txt')
    grep -qF "$score_line" out.txt || fail "score says it otherwise: $score_line"
    # The official checker's reader raises on such a file: its command line stops there.
    run 30 "$mlbert" rcp_checker --rcp_version 4.1.0 --log_output rcp.log sys
    expect_status 1
    expect_line "cannot read: sys/result_3.txt: is a directory, not a file"
    ;;
  check-special-inputs)
    # check of a FIFO, a /dev/zero-like device node, a socket and a symlink loop: each named with
    # what it is, at once, exit 2.
    make_device zero 5
    mkfifo fifo
    python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("socket")' ||
      fail "could not make a socket file"
    ln -s loop loop
    for input in "fifo:is a FIFO, not a regular file" "zero:is a character device, not a regular file" \
      "socket:is a socket, not a regular file" "loop:Too many levels of symbolic links"; do
      run 2 "$mlbert" check --ruleset 4.1.0 "${input%%:*}"
      expect_status 2
      expect_line "${input%%:*}: ${input#*:}"
    done
    ;;
  folder-special-entries)
    # A result folder holding a FIFO and a symlink loop under result-file names: every audit
    # finishes at once and names them.
    one_log
    mkfifo sys/result_9.txt
    ln -s result_8.txt sys/result_8.txt
    run 2 "$mlbert" score --ruleset 4.1.0 sys
    expect_status 1
    expect_line "result_8.txt	dropped: cannot read: sys/result_8.txt: cannot open: Too many levels of symbolic links$"
    expect_line "result_9.txt	dropped: cannot read: sys/result_9.txt: is a FIFO, not a regular file$"
    # rcp drops the two runs as score does, and judges the one left (two not converged: fail).
    run 2 "$mlbert" rcp --ruleset 4.1.0 sys
    expect_status 1
    expect_line "^sys: RCP fail: Insufficient convergence"
    expect_line "result_8.txt	dropped: cannot read: sys/result_8.txt: cannot open: Too many levels of symbolic links$"
    expect_line "result_9.txt	dropped: cannot read: sys/result_9.txt: is a FIFO, not a regular file$"
    # The page shows every run's verdict (exit 0 whatever they are), these two among them.
    run 2 "$mlbert" report --ruleset 4.1.0 sys --out page.html
    expect_status 0
    grep -q 'result_9.txt: is a FIFO, not a regular file' page.html || fail "the page does not name the FIFO"
    grep -q 'result_8.txt: cannot open: Too many levels of symbolic links' page.html ||
      fail "the page does not name the symlink loop"
    # simulate --results reads a published system's logs (its description beside them).
    published=${MLBERT_SHARED_DIR:-$source_dir/../shared}/fixtures/mlperf_logs/v4.0/NVIDIA/h200_ngc23.09_pytorch
    if [[ -d $published ]]; then
      cp -r "$published" published && mkfifo published/result_11.txt
      run 2 "$mlbert" simulate --results published --ruleset 4.0.0
      expect_status 2
      expect_line "^mlbert: error: published/result_11.txt: is a FIFO, not a regular file$"
    fi
    ;;
  folder-loop)
    # A folder argument that is a symlink loop: the reason, not "no such directory".
    ln -s loop loop
    for command in score rcp report package; do
      run 2 "$mlbert" $command --ruleset 4.1.0 loop
      expect_status 2
      expect_line "^mlbert: error: loop: Too many levels of symbolic links$"
    done
    ;;
  stdout-full)
    # Standard output on a full device: every command that prints ends with one line, exit 2.
    make_device full 7
    one_log
    fixtures=${MLBERT_SHARED_DIR:-$source_dir/../shared}/fixtures
    commands=("check --ruleset 4.1.0 sys/result_0.txt" "check --print-example --ruleset 4.1.0"
      "simulate --system dgxa100_1x8 --systems-dir $source_dir/systems --json")
    # The real logs and system descriptions, where ../shared has them.
    if [[ -d $fixtures ]]; then
      commands+=("score --json $fixtures/mlperf_logs/v4.0/NVIDIA/h200_ngc23.09_pytorch"
        "system-check --ruleset 1.1.0 $fixtures/systems/NVIDIA_dgxa100_n8_ngc21.09_pytorch.json")
    fi
    for command in "${commands[@]}"; do
      # shellcheck disable=SC2086
      timeout -k 1 30 "$mlbert" $command >full 2>out.txt </dev/null
      status=$?
      echo "ran: mlbert $command >full -> exit $status"
      expect_status 2
      # The reason is known when the last flush failed, not when an earlier write in the run did.
      expect_line "^mlbert: error: writing to standard output failed(: No space left on device)?; the output is incomplete$"
      [[ $(grep -c '' out.txt) -eq 1 ]] || fail "more than one line on stderr"
    done
    [[ -c full ]] || fail "the device node was replaced"
    ;;
  stdout-file-size-limit)
    # A disk that fills part way through: the first kilobyte lands, the next write fails (EFBIG).
    (ulimit -f 1 && trap '' XFSZ && exec "$mlbert" check --print-example --ruleset 4.1.0) \
      >log.txt 2>out.txt </dev/null
    status=$?
    expect_status 2
    expect_line "^mlbert: error: writing to standard output failed(: File too large)?; the output is incomplete$"
    [[ $(stat -c %s log.txt) -eq 1024 ]] || fail "expected 1024 bytes written, found $(stat -c %s log.txt)"
    ;;
  check-control-bytes)
    # A log with a NUL and an escape sequence inside records (a crash-padded or hostile log): the
    # records are shown with visible escapes, the rest of its errors and the next log's verdict
    # are all printed, and no raw control byte reaches the output.
    one_log
    cp sys/result_0.txt clean.txt
    sed -e '5s/"value"/"va\x00lue"/' -e '7s/"key"/"k\x1b[31mey"/' clean.txt >padded.txt
    [[ $(tr -cd '\000' <padded.txt | wc -c) -eq 1 ]] || fail "the NUL was not written into the log"
    run 10 "$mlbert" check --ruleset 4.1.0 padded.txt clean.txt
    expect_status 1
    expect_line '^FAILED  padded.txt$'
    expect_line 'va\\x00lue'
    expect_line 'k\\x1b\[31mey'
    expect_line '^SUCCESS clean.txt$'
    expect_line '^1 of 2 logs pass'
    [[ $(tr -cd '\000\033' <out.txt | wc -c) -eq 0 ]] || fail "raw control bytes in the output"
    ;;
  *)
    fail "unknown case"
    ;;
esac
echo ok
