#!/usr/bin/env bash
# The README's main job: build hostsim and reproduce every built-in experiment's claims into
# out/ (results.csv per scenario and expectations.json). Extra arguments go to `hostsim
# reproduce` (e.g. paper IDs).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "cargo not found: install Rust with rustup (https://rustup.rs)" >&2; exit 1; }
cargo build --release --locked
exec target/release/hostsim reproduce --out out "$@"
