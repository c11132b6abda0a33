"""`hostsim calibrate` / `hostsim.calibrate`: fits a declared parameter to the calibration claims
only, writes the overlay with its record, and the scenario then runs with the fitted value.

An M/M/1 queue on the zero-cost `ideal-4` profile: 50,000 arrivals/s served with exponential
work; the calibration claim says the server is 50% busy, so the fitted mean work must come out
near 10 us (rho = lambda x work). A prediction claim that would pull the fit elsewhere is ignored.
"""

import os
import sys

import hostsim
from conftest import ROOT, cli

SCENARIO = """
description = "calibration test: fit the work per packet to a 50% busy server"
profile = "ideal-4"
duration_ms = 300
warmup_ms = 50
seeds = 2
calibration = "mm1-test"

[[nic]]
name = "eth0"
rate_mbps = 100000
irq_routing = "fixed"
irq_cpus = [0]

[[traffic]]
name = "arrivals"
kind = "poisson"
nic = "eth0"
dst_port = 7
rate_pps = 50000
link_mbps = 100000

[[process]]
name = "srv"
program = "udp_sink"
port = 7
work_ns = 4000
work_dist = "exp"
cpus = [1]
rcvbuf_bytes = 100000000

[[calibrate]]
name = "work_ns"
key = "process.srv.work_ns"
min = 2000
max = 20000
source = "test bounds"

[[expect]]
claim = "the server is half busy"
role = "calibration"
metric = "srv_cpu_frac"
op = "approx"
value = 0.5
tolerance = 0.02

[[expect]]
claim = "a prediction the fit must not look at: 90% busy"
metric = "srv_cpu_frac"
op = "approx"
value = 0.9
"""


def _scenario(tmp_path):
    d = tmp_path / "scenarios"
    d.mkdir()
    (tmp_path / "profiles").symlink_to(ROOT / "profiles")
    p = d / "mm1.toml"
    p.write_text(SCENARIO)
    return p


def test_calibrate_fits_only_calibration_claims_and_the_overlay_is_applied(tmp_path):
    p = _scenario(tmp_path)
    before = hostsim.info(p)
    assert before["calibration"]["overlay"] is None and before["calibrate"][0]["value"] == 4000
    o = hostsim.calibrate([p], trials=4, refine=10, jobs=2, log=lambda m: None)
    overlay = tmp_path / "calibration" / "mm1-test.toml"
    assert o["path"] == str(overlay) and overlay.exists()
    work = o["values"]["work_ns"]
    assert isinstance(work, int) and abs(work - 10000) <= 600, o
    fit = o["fit"]
    assert fit["objective"] < fit["objective_start"] and fit["seeds"] == [1, 2]
    assert [c["claim"] for c in fit["claims"]] == ["the server is half busy"], "only calibration claims"
    assert {"date", "optimizer", "evaluations", "command"} <= fit.keys()
    # Loading the scenario now applies the fitted value, and the report can show the record.
    after = hostsim.info(p)
    assert after["calibration"]["applied"] == ["work_ns"]
    assert after["calibration"]["overlay"]["fit"]["objective"] == fit["objective"]
    r = hostsim.run(p)
    assert abs(r.metrics["srv_cpu_frac"] - 0.5) < 0.03
    # Re-running the command gives the same values (deterministic objective and search).
    again = hostsim.calibrate([p], trials=4, refine=10, jobs=2, write=False, log=lambda m: None)
    assert again["values"] == o["values"]


def test_calibrate_command_line(hostsim_bin, tmp_path):
    p = _scenario(tmp_path)
    env = dict(os.environ, HOSTSIM_PYTHON=sys.executable)
    r = cli(
        hostsim_bin,
        "calibrate",
        p,
        "--trials",
        "2",
        "--refine",
        "0",
        "--jobs",
        "2",
        "--start",
        "work_ns=6000",
        "--dry-run",
        env=env,
    )
    assert r.stdout.startswith("# Calibration overlay written by `hostsim calibrate")
    assert "[values]\nwork_ns = " in r.stdout and "[fit]" in r.stdout
    assert "--start work_ns=6000" in r.stdout and 'start = { "work_ns" = 6000.0 }' in r.stdout, r.stdout
    assert not (tmp_path / "calibration" / "mm1-test.toml").exists(), "--dry-run writes nothing"
    # The record names the model the fit ran (the CLI checked the module was built from its sources).
    assert f'model_source_id = "{hostsim._native.MODEL_SOURCE_ID}"' in r.stdout, r.stdout


def test_calibration_refuses_a_module_built_from_other_model_sources(tmp_path):
    """`hostsim calibrate` passes its MODEL_SOURCE_ID; a fit through a stale `_native` (built from
    other sources than the CLI) would calibrate another model, so it stops before any run."""
    import subprocess

    p = _scenario(tmp_path)
    env = dict(os.environ, HOSTSIM_CLI_MODEL_SOURCE_ID="0123456789abcdef")
    r = subprocess.run(
        [sys.executable, "-m", "hostsim.calibration", str(p), "--trials", "1", "--refine", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r
    assert "built from other model sources" in r.stderr and "0123456789abcdef" in r.stderr, r.stderr
    assert hostsim._native.MODEL_SOURCE_ID in r.stderr
    assert not (tmp_path / "calibration" / "mm1-test.toml").exists()
