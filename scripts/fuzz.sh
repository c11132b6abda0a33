#!/usr/bin/env bash
# Run hostsim's coverage-guided fuzzers (cargo-fuzz / libFuzzer, fuzz/): `check` (parsing and
# validation of any text), `set` (--set expressions on real scenarios), `run` (short runs of
# accepted scenarios, conservation asserted). Not part of the test suite: CI replays what the
# fuzzers found (crates/cli/tests/fuzz_regressions/), it does not fuzz.
#
#   scripts/fuzz.sh [RUNS] [TARGET ...]     default: 1000000 executions of each of check set run
#   FUZZ_MAX_TIME=SECONDS scripts/fuzz.sh …   also stop each target after SECONDS (libFuzzer's
#                                            -max_total_time; the summary says how many ran)
#   FUZZ_NICE=10 scripts/fuzz.sh …            run the fuzzers under `nice -n 10` (shared machines)
#
# Needs a nightly toolchain and cargo-fuzz; installs both (rustup, crates.io) when missing.
# Builds with debug assertions and overflow checks on (cargo-fuzz's default), no sanitizer (the
# code under test is safe Rust). Limits per input: 20 s (-timeout), 2048 MB (-rss_limit_mb).
# The corpus grows in fuzz/corpus/<target>/, findings land in fuzz/artifacts/<target>/; a
# finding is turned into a regression file with
#   HOSTSIM_FUZZ_PRINT=1 cargo +nightly fuzz run -s none <target> fuzz/artifacts/<target>/<file>
# (it prints the scenario and --set list the input stands for). Exits non-zero on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(check set run)

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "fuzz: installing the nightly toolchain (rustup)" >&2
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz (crates.io)" >&2
  cargo install cargo-fuzz --locked
fi

cargo +nightly fuzz build -s none 2>&1 | tail -1
mkdir -p fuzz/logs
status=0
summary=()
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  before=$(ls "fuzz/artifacts/$t" | sort)
  log="fuzz/logs/$t.log"
  start=$(date +%s)
  rc=0
  nice -n "${FUZZ_NICE:-0}" cargo +nightly fuzz run -s none "$t" "fuzz/corpus/$t" -- \
    -runs="$runs" -max_total_time="${FUZZ_MAX_TIME:-0}" -timeout=20 -rss_limit_mb=2048 -max_len=8192 \
    -print_final_stats=1 >"$log" 2>&1 || rc=$?
  secs=$(( $(date +%s) - start ))
  new=$(comm -13 <(echo "$before") <(ls "fuzz/artifacts/$t" | sort) | grep -v '^$' || true)
  done_runs=$(grep -o '^Done [0-9]* runs' "$log" | awk '{print $2}' | tail -1)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{print $2}' | tail -1)
  crashes=$(echo "$new" | grep -c '^crash-' || true)
  timeouts=$(echo "$new" | grep -c '^timeout-' || true)
  ooms=$(echo "$new" | grep -c '^oom-' || true)
  leaks=$(echo "$new" | grep -c -E '^(leak|slow-unit)-' || true)
  cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -o 'cov: [0-9]*' || true)
  line="$t: ${execs:-${done_runs:-0}} executions in ${secs} s, ${cov:-cov: ?}, corpus $(ls "fuzz/corpus/$t" | wc -l) inputs; crashes $crashes, timeouts $timeouts, out-of-memory $ooms (libFuzzer exit $rc)"
  echo "$line"
  summary+=("$line")
  for f in $new; do echo "  finding: fuzz/artifacts/$t/$f"; done
  if [ "$rc" -ne 0 ] || [ -n "$new" ]; then status=1; tail -40 "$log" >&2; fi
done
echo
printf '%s\n' "${summary[@]}"
exit "$status"
