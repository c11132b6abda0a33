"""hostsim.sweep on threads: results.csv and the claims as `hostsim sweep` writes them; resume."""

import json

import hostsim
import pytest
from conftest import LIVELOCK, cli


def test_sweep_is_identical_to_the_cli(hostsim_bin, tmp_path):
    cli(hostsim_bin, "sweep", LIVELOCK, "--jobs", 2, "--out", tmp_path / "cli")
    df = hostsim.sweep(LIVELOCK, jobs=2, out=tmp_path / "py")
    assert (tmp_path / "py" / "results.csv").read_text() == (tmp_path / "cli" / "results.csv").read_text()
    assert (tmp_path / "py" / "expectations.json").read_text() == (tmp_path / "cli" / "expectations.json").read_text()
    assert df.attrs["csv"] == (tmp_path / "cli" / "results.csv").read_text()
    assert list(df.columns[:2]) == ["variant", "traffic.load.rate_pps"]
    assert len(df) == 24 and set(df["variant"]) == {"legacy", "napi"}
    assert all(e["pass"] for e in df.attrs["expectations"])


def test_resume_computes_only_missing_points(tmp_path):
    full = hostsim.sweep(LIVELOCK, jobs=2, out=tmp_path)
    pts = sorted((tmp_path / "points").glob("*.json"))
    assert len(pts) == 24
    for p in pts[3:6]:
        p.unlink()
    pts[0].write_text("{ torn")  # an interrupted write is recomputed
    again = hostsim.sweep(LIVELOCK, jobs=2, out=tmp_path, resume=True)
    assert again.attrs["computed"] == 4
    assert again.attrs["csv"] == full.attrs["csv"]
    nothing = hostsim.sweep(LIVELOCK, jobs=2, out=tmp_path, resume=True)
    assert nothing.attrs["computed"] == 0


def test_resume_refuses_points_of_another_scenario(tmp_path):
    hostsim.sweep(LIVELOCK, jobs=2, out=tmp_path)
    with pytest.raises(ValueError, match="another scenario"):
        hostsim.sweep(LIVELOCK, jobs=2, out=tmp_path, resume=True, set={"kernel.hz": 250})


def test_sweep_of_a_dict_and_info():
    d = hostsim.load(LIVELOCK)
    d["sweep"] = {"traffic.load.rate_pps": [20000, 400000]}
    d["expect"] = []
    df = hostsim.sweep(d, jobs=2, path=LIVELOCK)
    assert list(df["traffic.load.rate_pps"]) == [20000, 400000, 20000, 400000]
    inf = hostsim.info(d)
    assert [r["variant"] for r in inf["runs"]] == ["legacy", "legacy", "napi", "napi"]
    assert json.loads(json.dumps(inf))["sweep"][0][0] == "traffic.load.rate_pps"


def test_two_swept_keys_and_no_variants_match_the_cli(hostsim_bin, tmp_path):
    # Each point is run on its own (as a Dask task would): its index must name the CLI's point.
    d = hostsim.load(LIVELOCK)
    d["sweep"] = {"traffic.load.rate_pps": [20000, 100000, 400000], "kernel.netdev_max_backlog": [50, 300]}
    d["variant"] = []
    d["expect"] = []
    f = tmp_path / "two.toml"
    f.write_text(hostsim._native.json_to_toml(json.dumps(d)))
    cli(hostsim_bin, "sweep", f, "--jobs", 2, "--out", tmp_path / "cli")
    df = hostsim.sweep(f, jobs=2)
    assert df.attrs["csv"] == (tmp_path / "cli" / "results.csv").read_text()
    assert list(df["kernel.netdev_max_backlog"]) == [50, 300] * 3
    assert set(df["variant"]) == {"base"}
