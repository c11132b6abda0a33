"""Nothing a caller passes crashes the interpreter: bad arguments, bad scenarios, unwritable
outputs and damaged resume files raise hostsim.HostsimError (an Exception) with the message the
`hostsim` command prints; resume recomputes exactly the points whose files do not match."""

import json
import subprocess

import pytest

import hostsim
from conftest import LIVELOCK

SHORT = {"duration_ms": 30, "warmup_ms": 0}


def cli_error(hostsim_bin, *args) -> str:
    r = subprocess.run([str(hostsim_bin), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("error: "), r.stderr
    return line[len("error: "):]


def test_errors_are_exceptions_with_the_cli_message(hostsim_bin, tmp_path):
    assert issubclass(hostsim.HostsimError, Exception)
    bad = tmp_path / "bad.toml"
    bad.write_text('profile = "ideal-4"\nduration_ms = 100\n[[nic]]\nname = "eth0"\nrate_mbps = 1000\nrx_ring = 100000\n')
    with pytest.raises(hostsim.HostsimError) as e:
        hostsim.run(bad)
    assert str(e.value) == cli_error(hostsim_bin, "run", bad, "--out", tmp_path / "o")
    assert "bad.toml:6: key `nic[0].rx_ring`" in str(e.value) and "1..=8192" in str(e.value)
    with pytest.raises(hostsim.HostsimError) as e:
        hostsim.run(tmp_path / "missing.toml")
    assert str(e.value) == cli_error(hostsim_bin, "run", tmp_path / "missing.toml", "--out", tmp_path / "o")
    with pytest.raises(hostsim.HostsimError) as e:
        hostsim.run(LIVELOCK, set={"traffic.load.rate_pps": float("nan")})
    assert str(e.value) == cli_error(hostsim_bin, "run", LIVELOCK, "--set", "traffic.load.rate_pps=nan", "--out", tmp_path / "o")


@pytest.mark.parametrize("call", [
    lambda: hostsim.run(12345),
    lambda: hostsim.run(LIVELOCK, seed="one"),
    lambda: hostsim.run(LIVELOCK, seed=-1),
    lambda: hostsim.run(LIVELOCK, seed=2**70),
    lambda: hostsim.run(LIVELOCK, set=[1, 2]),
    lambda: hostsim.run(LIVELOCK, set={"kernel.hz": object()}),
    lambda: hostsim.run(LIVELOCK, variant="nosuch"),
    lambda: hostsim.run(LIVELOCK, variant=3),
    lambda: hostsim.run({"profile": "ideal-4", "duration_ms": float("inf")}),
    lambda: hostsim.run({"profile": "ideal-4"}),
    lambda: hostsim.sweep(LIVELOCK, jobs=0),
    lambda: hostsim.sweep(LIVELOCK, jobs=-2),
    lambda: hostsim.sweep(LIVELOCK, max_runs=3),
    lambda: hostsim.sweep(LIVELOCK, resume=True),
    lambda: hostsim.info(LIVELOCK, max_runs=-1),
    lambda: hostsim.load("/nonexistent/scenario.toml"),
])
def test_bad_arguments_raise_hostsim_error(call):
    with pytest.raises(hostsim.HostsimError):
        call()


def test_too_many_runs_is_refused_before_anything_runs(hostsim_bin, tmp_path):
    d = hostsim.load(LIVELOCK)
    d["sweep"] = {"traffic.load.rate_pps": list(range(1000, 101000, 1)), "kernel.netdev_max_backlog": list(range(1, 1001))}
    with pytest.raises(hostsim.HostsimError, match="= 200_000_000 runs, more than the limit of 10000"):
        hostsim.sweep(d, path=LIVELOCK)


def test_an_unwritable_output_directory_is_an_error_before_running(hostsim_bin, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    out = blocker / "out"
    with pytest.raises(hostsim.HostsimError) as e:
        hostsim.sweep(LIVELOCK, out=out, set=SHORT)
    assert str(e.value) == cli_error(hostsim_bin, "sweep", LIVELOCK, "--out", out)
    r = hostsim.run(LIVELOCK, set=SHORT)
    with pytest.raises(hostsim.HostsimError) as e:
        r.write(out)
    assert str(e.value) == cli_error(hostsim_bin, "run", LIVELOCK, "--out", out)


def test_resume_recomputes_damaged_foreign_and_stray_points(tmp_path):
    full = hostsim.sweep(LIVELOCK, jobs=2, out=tmp_path, set=SHORT)
    pts = sorted((tmp_path / "points").glob("*.json"))
    assert len(pts) == 24
    pts[0].write_text("{}")                                   # parses, but is no point
    pts[1].write_text(pts[1].read_text()[:40])                # truncated
    pts[2].write_bytes(b"\xff\xfe garbage")                   # not even text
    pts[3].write_text(pts[4].read_text())                     # another run's point under this name
    (tmp_path / "points" / "1.json").write_text("{}")        # a stray file
    (tmp_path / "sweep.json").write_text("{ torn")            # a damaged manifest
    again = hostsim.sweep(LIVELOCK, jobs=2, out=tmp_path, resume=True, set=SHORT)
    assert again.attrs["computed"] == 4
    assert again.attrs["csv"] == full.attrs["csv"]


def test_resume_never_reuses_points_of_another_scenario(tmp_path):
    hostsim.sweep(LIVELOCK, jobs=2, out=tmp_path, set=SHORT)
    (tmp_path / "sweep.json").unlink()                        # nothing says whose points these are...
    other = dict(SHORT, **{"kernel.hz": 250})
    again = hostsim.sweep(LIVELOCK, jobs=2, out=tmp_path, resume=True, set=other)
    assert again.attrs["computed"] == 24                      # ...but each point's fingerprint does
    pt = json.loads(sorted((tmp_path / "points").glob("*.json"))[0].read_text())
    assert set(pt) == {"fingerprint", "summary"} and "metrics" in pt["summary"]
