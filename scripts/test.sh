#!/usr/bin/env bash
# The README's test command: installs what the tests need (on a fresh machine only a Rust
# toolchain is required; rustup is preinstalled on the project's machines) and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "cargo not found: install Rust with rustup (https://rustup.rs)" >&2; exit 1; }
cargo test --workspace --locked 2>&1
