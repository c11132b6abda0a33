#!/usr/bin/env bash
# The README's main job: build hostsim and its Python package, reproduce every built-in experiment
# into out/ (results.csv per scenario, expectations.json) and draw the report,
# out/report/index.html. Extra arguments go to `hostsim reproduce` (e.g. paper IDs).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "cargo not found: install Rust with rustup (https://rustup.rs)" >&2; exit 1; }
bash scripts/deps.sh
cargo build --release --locked -p hostsim-cli
bash scripts/setup.sh
HOSTSIM_PYTHON="$PWD/.venv/bin/python" exec target/release/hostsim reproduce --out out "$@"
