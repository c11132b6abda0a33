import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIVELOCK = ROOT / "scenarios" / "examples" / "livelock.toml"


@pytest.fixture(scope="session")
def hostsim_bin() -> Path:
    """The `hostsim` command (HOSTSIM_BIN, else target/release/hostsim, built if missing)."""
    p = Path(os.environ.get("HOSTSIM_BIN", ROOT / "target" / "release" / "hostsim"))
    if not p.exists():
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "hostsim-cli"], cwd=ROOT, check=True)
    return p


def cli(bin_: Path, *args, cwd=ROOT, env=None, timeout=600) -> subprocess.CompletedProcess:
    r = subprocess.run([str(bin_), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"hostsim {args}: {r.stderr}"
    return r


@pytest.fixture(scope="session")
def reproduced(hostsim_bin, tmp_path_factory) -> Path:
    """One full `hostsim reproduce` (every built-in experiment on its own seeds, ~80 s on two
    cores) and its report, shared by every test that reads them (findings, summary, figures, the
    browser test), so that CI runs it once."""
    reuse = os.environ.get("HOSTSIM_TEST_REPRODUCED")
    if reuse:
        # While working on the report: an existing `hostsim reproduce --out DIR` (its report is
        # redrawn). CI never sets it.
        out = Path(reuse)
    else:
        out = tmp_path_factory.mktemp("repro") / "out"
        cli(hostsim_bin, "reproduce", "--no-report", "--out", out, timeout=3600)
    from hostsim import report

    report.build(out)
    return out
