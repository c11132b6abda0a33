#!/usr/bin/env bash
# The README's test command. On a fresh machine it installs what the tests need: the build's
# system packages (scripts/deps.sh: clang, libelf, zlib, iproute2, bpftool and the IPAex Gothic
# font the report embeds, from apt), Debian's chromium (the report is checked in a headless
# browser, python/tests/browser.py), the Python side (scripts/setup.sh:
# .venv from PyPI, hostsim built with maturin) and mdBook (the docs book's builder, `cargo install
# --locked`, pinned: measured at 7 min on two shared cores, once per machine); then checks the
# format (cargo fmt, ruff format) and lints (cargo clippy with warnings as errors, ruff check), runs
# cargo test and pytest (python/tests/test_docs.py: no dead link or anchor in the README and the
# book) and builds the book (docs/ -> target/book). As root, the live tests
# (crates/cli/tests/live*.rs, crates/live/tests/) run on this kernel in namespaces they create;
# elsewhere they print why they skip.
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
mdbook_version=0.5.4
if ! mdbook --version 2>/dev/null | grep -qx "mdbook v$mdbook_version"; then
  echo "test: installing mdBook $mdbook_version (cargo install --locked) for the docs book" >&2
  cargo install --locked --quiet mdbook --version "$mdbook_version"
fi
cargo build --release --locked -p hostsim-cli
status=0
# Format and lints (a failure fails the run; the tests still run): rustfmt.toml's format on the
# workspace and the fuzz workspace, clippy warning-free on the workspace with its tests
# ([workspace.lints] in Cargo.toml), ruff's lint and format on the Python (pyproject.toml).
cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
cargo fmt --all -- --check 2>&1 || { status=$?; echo "test: cargo fmt --check failed: run cargo fmt --all" >&2; }
(cd fuzz && cargo fmt -- --check) 2>&1 || { status=$?; echo "test: the fuzz workspace is not formatted: cd fuzz && cargo fmt" >&2; }
cargo clippy --workspace --all-targets --locked -- -D warnings 2>&1 || status=$?
.venv/bin/ruff check . 2>&1 || status=$?
.venv/bin/ruff format --check . 2>&1 || { status=$?; echo "test: ruff format --check failed: run .venv/bin/ruff format ." >&2; }
# The Python package needs no BPF toolchain (issue 39): hostsim-py does not depend on the live
# crate (no libbpf in its dependency tree), and it builds and imports with clang hidden from PATH
# (a PATH whose one directory links every command of the real one but clang*).
if cargo tree -p hostsim-py --locked -e normal,build 2>&1 | grep -i libbpf; then
  status=1; echo "test: hostsim-py depends on libbpf (through the live crate?): cargo tree -p hostsim-py -i libbpf-rs" >&2
fi
noclang=$(mktemp -d)
IFS=: read -r -a dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  for f in "$d"/*; do
    n=${f##*/}
    case $n in clang*) continue ;; esac
    [ -x "$f" ] && [ ! -e "$noclang/$n" ] && ln -s "$f" "$noclang/$n"
  done
done
if ! (VIRTUAL_ENV="$PWD/.venv" PATH="$noclang" .venv/bin/maturin develop --release --locked -q 2>&1 | tail -3 &&
  PATH="$noclang" .venv/bin/python -c "import hostsim, hostsim._native; print('test: hostsim builds and imports without clang')"); then
  status=1; echo "test: the Python package did not build or import with clang hidden from PATH" >&2
fi
rm -rf "$noclang"
cargo test --workspace --locked 2>&1 || status=$?
HOSTSIM_BIN="$PWD/target/release/hostsim" .venv/bin/python -m pytest -p no:cacheprovider python/tests 2>&1 || status=$?
mdbook build docs 2>&1 || { status=$?; echo "test: the docs book does not build (mdbook build docs)" >&2; }
exit "$status"
