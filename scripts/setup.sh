#!/usr/bin/env bash
# The Python side: a virtualenv in .venv with maturin, pandas, matplotlib, dask[distributed], scipy and
# pytest (python/requirements.txt, from PyPI), and the `hostsim` package (crates/py + python/)
# built in release mode into it. Idempotent; needs python3 (3.11+) and a Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
command -v "$py" >/dev/null || { echo "setup: $py not found: install Python 3.11+" >&2; exit 1; }
if [ ! -x .venv/bin/python ]; then
  if ! "$py" -m venv .venv; then
    echo "setup: python venv unavailable; installing python3-venv with apt" >&2
    rm -rf .venv
    apt-get install -y -qq python3-venv
    "$py" -m venv .venv
  fi
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r python/requirements.txt
VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH" .venv/bin/maturin develop --release --locked -q 2>&1 | grep -v '^\s*$' | tail -3
.venv/bin/python -c "import hostsim; print('setup: hostsim', hostsim.__version__, 'in .venv')"
