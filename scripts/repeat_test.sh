#!/usr/bin/env bash
# Run one test N times as CI runs it (a background job: no terminal, stdin from /dev/null, output
# to a file) and count the passes; optionally with CPU hogs at nice 0 on every CPU, as a loaded CI
# machine has. Every run's output is kept, so a failure is captured, never lost.
#
#   bash scripts/repeat_test.sh [-n N] [--load K] [--keep-going|--stop] [--logs DIR] -- COMMAND...
#
#   -n N          runs (default 20)
#   --load K      K busy loops at nice 0 for the whole series (default 0; `--load cpus` = one per CPU)
#   --stop        stop at the first failure (default: run all N, count them)
#   --logs DIR    where each run's output goes (default: a new directory under /tmp)
#
# Examples (the test names are cargo's / pytest's own):
#   bash scripts/repeat_test.sh -n 20 --load cpus -- cargo test --release -p hostsim-cli --test live_tabata -- a_short_run_follows_the_slot_rule --exact
#   bash scripts/repeat_test.sh -n 20 --load cpus -- cargo test --release -p hostsim-live --test gen
#   bash scripts/repeat_test.sh -n 5 -- .venv/bin/python -m pytest -p no:cacheprovider python/tests/test_report_browser.py
#
# The command is run from the checkout's root. Exit status: 0 when every run passed, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
n=20
load=0
stop=0
logs=""
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n=$2; shift 2 ;;
    --load) load=$2; shift 2 ;;
    --stop) stop=1; shift ;;
    --keep-going) stop=0; shift ;;
    --logs) logs=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "repeat_test: unknown option $1 (the command follows --)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "repeat_test: no command: give it after --" >&2; exit 2; }
[ "$load" = cpus ] && load=$(nproc)
case "$n$load" in *[!0-9]*) echo "repeat_test: -n and --load take whole numbers" >&2; exit 2 ;; esac
[ "$n" -ge 1 ] || { echo "repeat_test: -n must be at least 1" >&2; exit 2; }
[ -n "$logs" ] || logs=$(mktemp -d /tmp/repeat-test.XXXXXX)
mkdir -p "$logs"

hogs=()
cleanup() {
  for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -z "${job:-}" ] || kill -- "-$job" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
for _ in $(seq 1 "$load"); do
  nice -n 0 bash -c 'while :; do :; done' </dev/null >/dev/null 2>&1 &
  hogs+=($!)
done

echo "repeat_test: $n runs of: $*" >&2
[ "$load" -eq 0 ] || echo "repeat_test: with $load busy loop(s) at nice 0" >&2
echo "repeat_test: logs in $logs" >&2
pass=0
fail=0
failed_runs=()
for i in $(seq 1 "$n"); do
  log="$logs/run-$i.log"
  t0=$(date +%s.%N)
  # A job of its own (setsid: no controlling terminal, its own process group), as CI's.
  setsid "$@" </dev/null >"$log" 2>&1 &
  job=$!
  rc=0
  wait "$job" || rc=$?
  job=""
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  if [ "$rc" -eq 0 ]; then
    pass=$((pass + 1))
    echo "run $i: pass (${secs} s, load $(cut -d' ' -f1 /proc/loadavg))" >&2
  else
    fail=$((fail + 1))
    failed_runs+=("$i")
    echo "run $i: FAIL exit $rc (${secs} s, load $(cut -d' ' -f1 /proc/loadavg)): $log" >&2
    grep -m 5 -E "panicked|assert|FAILED|Error|error" "$log" | sed 's/^/    /' >&2 || true
    [ "$stop" -eq 0 ] || break
  fi
done
echo "repeat_test: $pass passed, $fail failed of $((pass + fail)) runs${failed_runs:+ (failed: ${failed_runs[*]})}; logs in $logs"
[ "$fail" -eq 0 ]
