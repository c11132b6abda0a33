#!/usr/bin/env bash
# The README's test command. On a fresh machine it installs what the tests need: the build's
# system packages (scripts/deps.sh: clang, libelf, zlib, iproute2, bpftool and the IPAex Gothic
# font the report embeds, from apt), Debian's chromium (the report is checked in a headless
# browser, python/tests/browser.py), the Python side (scripts/setup.sh:
# .venv from PyPI, hostsim built with maturin); then runs cargo clippy (warnings are errors),
# cargo test and pytest. As root, the
# live tests (crates/cli/tests/live.rs, crates/live/tests/) run on this kernel in namespaces
# they create; elsewhere they print why they skip.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "cargo not found: install Rust with rustup (https://rustup.rs)" >&2; exit 1; }
bash scripts/deps.sh
if ! command -v chromium >/dev/null; then
  echo "test: installing chromium (apt) for the report's browser test" >&2
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
  command -v chromium >/dev/null || { echo "test: chromium did not install" >&2; exit 1; }
fi
bash scripts/setup.sh
cargo build --release --locked -p hostsim-cli
status=0
# Lints: the workspace, tests included, warning-free (a failure fails the run; the tests still run).
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
cargo clippy --workspace --all-targets --locked -- -D warnings 2>&1 || status=$?
cargo test --workspace --locked 2>&1 || status=$?
HOSTSIM_BIN="$PWD/target/release/hostsim" .venv/bin/python -m pytest -p no:cacheprovider python/tests 2>&1 || status=$?
exit "$status"
