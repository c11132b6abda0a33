#!/usr/bin/env bash
# Byte-identity check between two hostsim binaries (issue 12: a speed-up must not change results).
#
#   bash scripts/identity_check.sh OLD_BIN NEW_BIN [WORKDIR]
#   REPRODUCE_ARGS="--seeds 1" bash scripts/identity_check.sh ...   (fewer seeds: faster)
#
# Runs `hostsim reproduce --no-report` and a set of example runs with `--trace` with both
# binaries, then compares: every file of the reproduce output byte for byte; each run's
# summary.json and timeseries.csv byte for byte; each run's trace by its content (the slices
# every CPU ran: track, name, category, start, duration), read by scripts/trace_slices.py from
# whatever format each binary wrote, so a change of trace format is not mistaken for a change of
# results. Prints one line per comparison and exits 1 if anything differs.
set -euo pipefail
cd "$(dirname "$0")/.."
old=$(realpath "$1"); new=$(realpath "$2"); work=${3:-$(mktemp -d)}
mkdir -p "$work"
status=0
runs=(
  "ll150|scenarios/examples/livelock.toml --variant legacy --set traffic.load.rate_pps=150000"
  "ll400napi|scenarios/examples/livelock.toml --variant napi --set traffic.load.rate_pps=400000"
  "udp-rtt|scenarios/examples/udp-rtt.toml"
  "tcp-stream|scenarios/examples/tcp-stream.toml"
  "rfs-modern|scenarios/examples/rfs-modern.toml --variant rfs --set duration_ms=60 --set warmup_ms=10"
  "udp-flood|scenarios/bench/udp-flood.toml --set duration_ms=1000"
  "goda|scenarios/goda-rfs-migrations.toml --set duration_ms=300 --set warmup_ms=100"
  "pbq|scenarios/ozaki-pbq-throughput.toml --set duration_ms=300"
  "tcp-send|scenarios/bench/tcp-send.toml --set duration_ms=500"
  "tabata|scenarios/tabata-speed-gaps.toml --variant fast-slot --set duration_ms=300"
  "flow-limit|scenarios/examples/flow-limit-vs-pbq.toml --variant flow_limit --set traffic.floodclients.rate_pps=4000000 --set duration_ms=200 --set warmup_ms=50"
  "modern-64c|scenarios/bench/modern-64c.toml --set duration_ms=30 --set warmup_ms=5"
)
for label in old new; do
  bin=$old; [ "$label" = new ] && bin=$new
  rm -rf "$work/$label"; mkdir -p "$work/$label"
  # shellcheck disable=SC2086
  "$bin" reproduce --no-report --jobs 2 ${REPRODUCE_ARGS:-} --out "$work/$label/reproduce" >"$work/$label/reproduce.txt" 2>&1
  for r in "${runs[@]}"; do
    name=${r%%|*}; args=${r#*|}
    # shellcheck disable=SC2086
    "$bin" run $args --trace --out "$work/$label/$name" 2>/dev/null
  done
done
# Every file the old binary wrote must be byte-identical in the new output; files only the new
# binary writes (e.g. reproduce's resume record, issue 25) are listed, not counted as a change of
# results.
same=0; differ=()
while IFS= read -r f; do
  if cmp -s "$work/old/reproduce/$f" "$work/new/reproduce/$f"; then same=$((same + 1)); else differ+=("$f"); fi
done < <(cd "$work/old/reproduce" && find . -type f | sort)
if [ ${#differ[@]} -eq 0 ]; then
  echo "same   reproduce ($same files)"
else
  echo "DIFFER reproduce:"; printf '  %s\n' "${differ[@]}" | head -40; status=1
fi
only_new=$(comm -13 <(cd "$work/old/reproduce" && find . -type f | sort) <(cd "$work/new/reproduce" && find . -type f | sort) | wc -l)
[ "$only_new" -eq 0 ] || echo "note   reproduce: $only_new file(s) only in the new output: $(comm -13 <(cd "$work/old/reproduce" && find . -type f | sort) <(cd "$work/new/reproduce" && find . -type f | sort) | xargs -n1 basename | sort | uniq -c | awk '{printf "%s x%s ", $2, $1}')"
for r in "${runs[@]}"; do
  name=${r%%|*}
  for f in summary.json timeseries.csv; do
    if cmp -s "$work/old/$name/$f" "$work/new/$name/$f"; then echo "same   $name/$f"; else echo "DIFFER $name/$f"; status=1; fi
  done
  if python3 scripts/trace_slices.py --compare "$work/old/$name" "$work/new/$name"; then :; else status=1; fi
done
exit $status
