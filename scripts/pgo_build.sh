#!/usr/bin/env bash
# An opt-in profile-guided (PGO) release build of the `hostsim` binary (issue 12: speed).
#
#   bash scripts/pgo_build.sh            # -> target-pgo/release/hostsim
#
# The default build (`cargo build --release`) stays the reference: CI and scripts/test.sh use it,
# and this script changes nothing in it. PGO changes how the compiler lays out and inlines code,
# never what it computes (no fast-math; floating point is untouched): a PGO binary gives the same
# bytes as the default one (check with `bash scripts/identity_check.sh target/release/hostsim
# target-pgo/release/hostsim`).
#
# Steps: (1) build an instrumented binary (rustc -Cprofile-generate) in target-pgo-gen/;
# (2) run it on a training set: short runs of the receive, transmit, scheduling and many-core
# cases (the runs of identity_check.sh and the bench cases), so the profile is not one case's;
# (3) merge the profiles with the llvm-profdata that matches this rustc (rustup's
# `llvm-tools` component, installed here if missing: a distribution's llvm-profdata is usually
# too old for the profile format of the rustc in use); (4) build with -Cprofile-use into
# target-pgo/. Two release builds: ~2x the time of one. Needs rustup (for llvm-tools).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  command -v rustup >/dev/null || { echo "pgo_build: llvm-profdata not found and no rustup to install llvm-tools" >&2; exit 1; }
  echo "pgo_build: installing rustup component llvm-tools (matching llvm-profdata)" >&2
  rustup component add llvm-tools-preview >&2
fi
[ -x "$profdata" ] || { echo "pgo_build: $profdata missing after installing llvm-tools" >&2; exit 1; }

data="$root/target-pgo-gen/profiles"
rm -rf "$data"; mkdir -p "$data"
echo "pgo_build: 1/4 instrumented build (target-pgo-gen/)" >&2
RUSTFLAGS="-Cprofile-generate=$data" cargo build --release --locked -p hostsim-cli --target-dir target-pgo-gen >&2
gen="$root/target-pgo-gen/release/hostsim"

echo "pgo_build: 2/4 training runs" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
runs=(
  "scenarios/examples/livelock.toml --variant legacy --set traffic.load.rate_pps=150000 --set duration_ms=300"
  "scenarios/examples/livelock.toml --variant legacy --set traffic.load.rate_pps=400000 --set duration_ms=300"
  "scenarios/examples/livelock.toml --variant napi --set traffic.load.rate_pps=400000 --set duration_ms=300"
  "scenarios/bench/udp-flood.toml --set traffic.flood.rate_pps=150000 --set duration_ms=500"
  "scenarios/bench/udp-flood.toml --set traffic.flood.rate_pps=400000 --set duration_ms=500"
  "scenarios/bench/modern-64c.toml --set duration_ms=40 --set warmup_ms=10"
  "scenarios/examples/udp-rtt.toml"
  "scenarios/examples/tcp-stream.toml"
  "scenarios/examples/rfs-modern.toml --variant rfs --set duration_ms=60 --set warmup_ms=10"
  "scenarios/goda-rfs-migrations.toml --set duration_ms=300 --set warmup_ms=100"
  "scenarios/ozaki-pbq-throughput.toml --set duration_ms=300"
  "scenarios/bench/tcp-send.toml --set duration_ms=500"
  "scenarios/tabata-speed-gaps.toml --variant fast-slot --set duration_ms=300"
  "scenarios/examples/flow-limit-vs-pbq.toml --variant flow_limit --set traffic.floodclients.rate_pps=4000000 --set duration_ms=200 --set warmup_ms=50"
  "scenarios/bench/forward-2cpu.toml --set duration_ms=300"
)
i=0
for r in "${runs[@]}"; do
  i=$((i + 1))
  # shellcheck disable=SC2086
  "$gen" run $r --out "$work/run$i" >/dev/null 2>&1 || { echo "pgo_build: training run failed: hostsim run $r" >&2; exit 1; }
done

echo "pgo_build: 3/4 merging profiles" >&2
"$profdata" merge -o "$root/target-pgo-gen/merged.profdata" "$data"

echo "pgo_build: 4/4 optimised build (target-pgo/)" >&2
RUSTFLAGS="-Cprofile-use=$root/target-pgo-gen/merged.profdata" \
  cargo build --release --locked -p hostsim-cli --target-dir target-pgo >&2
echo "$root/target-pgo/release/hostsim"
