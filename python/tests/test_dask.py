"""hostsim.sweep on a real Dask cluster (scheduler and worker started here, on loopback): same
results as the CLI; a worker killed mid-sweep loses no finished point, and resume=True computes
only the missing ones."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import hostsim
import pytest
from conftest import LIVELOCK, ROOT, cli

DASK = [sys.executable, "-m", "dask"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args, log: Path) -> subprocess.Popen:
    # Own process group, so a kill takes the worker's nanny and its child process too.
    return subprocess.Popen(
        DASK + args, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT
    )


def stop(p: subprocess.Popen, sig=signal.SIGTERM) -> None:
    if p.poll() is None:
        os.killpg(p.pid, sig)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=20)


def wait_for_workers(addr: str, n: int, timeout_s: float = 60) -> None:
    from distributed import Client

    with Client(addr, timeout=30) as c:
        c.wait_for_workers(n, timeout=timeout_s)


@pytest.fixture
def scheduler(tmp_path):
    port = free_port()
    p = start(["scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], tmp_path / "scheduler.log")
    addr = f"tcp://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert p.poll() is None, (tmp_path / "scheduler.log").read_text()
            time.sleep(0.2)
    else:
        pytest.fail("dask scheduler did not start: " + (tmp_path / "scheduler.log").read_text())
    yield addr
    stop(p)


def worker(addr: str, log: Path) -> subprocess.Popen:
    return start(["worker", addr, "--nthreads", "1", "--nworkers", "1", "--no-dashboard", "--host", "127.0.0.1"], log)


def slow_scenario(tmp_path: Path) -> Path:
    """livelock, long enough per point that a worker can be killed mid-sweep."""
    d = hostsim.load(LIVELOCK)
    d["duration_ms"] = 2500
    d["sweep"] = {"traffic.load.rate_pps": [10000, 50000, 100000, 200000, 300000, 500000]}
    p = tmp_path / "slow.toml"
    p.write_text(hostsim._native.json_to_toml(__import__("json").dumps(d)))
    return p


def test_dask_sweep_matches_the_cli(scheduler, tmp_path, hostsim_bin):
    w = worker(scheduler, tmp_path / "w.log")
    try:
        wait_for_workers(scheduler, 1)
        df = hostsim.sweep(LIVELOCK, dask=scheduler, out=tmp_path / "dask", timeout_s=300)
    finally:
        stop(w)
    cli(hostsim_bin, "sweep", LIVELOCK, "--jobs", 2, "--out", tmp_path / "cli")
    assert df.attrs["computed"] == 24
    assert (tmp_path / "dask" / "results.csv").read_text() == (tmp_path / "cli" / "results.csv").read_text()


def test_a_dead_worker_loses_no_finished_point(scheduler, tmp_path, hostsim_bin):
    sc = slow_scenario(tmp_path)
    out = tmp_path / "out"
    w = worker(scheduler, tmp_path / "w1.log")
    wait_for_workers(scheduler, 1)
    code = f"import hostsim; hostsim.sweep({str(sc)!r}, dask={scheduler!r}, out={str(out)!r})"
    client = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while len(list((out / "points").glob("*.json"))) < 2 and time.monotonic() < deadline:
            assert client.poll() is None, "the sweep ended before the worker could be killed"
            time.sleep(0.02)
        stop(w, signal.SIGKILL)  # the worker dies mid-sweep ...
    finally:
        stop(client, signal.SIGKILL)  # ... and so does the client waiting on it
        stop(w, signal.SIGKILL)
    done = len(list((out / "points").glob("*.json")))
    assert 2 <= done < 12, f"{done} points finished: not mid-sweep"
    w2 = worker(scheduler, tmp_path / "w2.log")
    try:
        wait_for_workers(scheduler, 1)
        df = hostsim.sweep(sc, dask=scheduler, out=out, resume=True, timeout_s=300)
    finally:
        stop(w2)
    assert df.attrs["computed"] == 12 - done
    cli(hostsim_bin, "sweep", sc, "--jobs", 2, "--out", tmp_path / "cli")
    assert (out / "results.csv").read_text() == (tmp_path / "cli" / "results.csv").read_text()


def test_dask_local_cluster(tmp_path):
    df = hostsim.sweep(LIVELOCK, dask="local", jobs=2, timeout_s=300)
    ref = hostsim.sweep(LIVELOCK, jobs=2)
    assert df.attrs["csv"] == ref.attrs["csv"]
