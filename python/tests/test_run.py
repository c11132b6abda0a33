"""hostsim.run: the same bytes as `hostsim run` for the same seed; dicts; the GIL is released."""

import threading

import hostsim
import pandas as pd
import pytest
from conftest import LIVELOCK, cli


def test_run_is_identical_to_the_cli(hostsim_bin, tmp_path):
    cli(
        hostsim_bin,
        "run",
        LIVELOCK,
        "--seed",
        7,
        "--variant",
        "legacy",
        "--set",
        "traffic.load.rate_pps=150000",
        "--out",
        tmp_path / "cli",
    )
    r = hostsim.run(LIVELOCK, seed=7, variant="legacy", set={"traffic.load.rate_pps": 150000})
    assert r.summary_json == (tmp_path / "cli" / "summary.json").read_text()
    assert r.timeseries_csv == (tmp_path / "cli" / "timeseries.csv").read_text()
    assert r.run["seed"] == 7
    assert r.metrics["offered_pps"] > 100000
    assert isinstance(r.timeseries, pd.DataFrame) and "time_ms" in r.timeseries
    assert r.summary["sim_time_ns"] == 600_000_000


def test_seeds_differ_and_repeat():
    a = hostsim.run(LIVELOCK, seed=1).summary_json
    assert hostsim.run(LIVELOCK, seed=1).summary_json == a
    assert hostsim.run(LIVELOCK, seed=2).summary_json != a


def test_a_dict_scenario_runs_like_its_file():
    d = hostsim.load(LIVELOCK)
    assert d["profile"] == "pentium3-800"
    same = hostsim.run(d, seed=4, path=LIVELOCK)
    assert same.summary_json == hostsim.run(LIVELOCK, seed=4).summary_json
    d["process"][0]["work_ns"] = 20000  # modified as a dict
    slower = hostsim.run(d, seed=4)
    assert slower.metrics["cpu_user_frac"] > same.metrics["cpu_user_frac"]


def test_errors_name_the_key():
    with pytest.raises(ValueError, match="kernel.rx_path"):
        hostsim.run(LIVELOCK, set={"kernel.rx_path": "fast"})
    d = hostsim.load(LIVELOCK)
    d["kernel"]["bogus"] = 1
    with pytest.raises(ValueError, match="unknown key `bogus`"):
        hostsim.run(d)


def test_the_gil_is_released_during_a_run():
    # While a long run is in Rust, this thread must keep running Python.
    d = hostsim.load(LIVELOCK)
    d["duration_ms"] = 3000
    d["traffic"][0]["rate_pps"] = 200000
    done = threading.Event()
    t = threading.Thread(target=lambda: (hostsim.run(d, path=LIVELOCK), done.set()))
    ticks = 0
    t.start()
    while not done.is_set() and ticks < 10_000_000:
        ticks += 1
    t.join(timeout=120)
    assert done.is_set()
    assert ticks > 1000, f"main thread starved during the run ({ticks} ticks): GIL held?"
