"""Nothing a caller passes crashes the interpreter: bad arguments, bad scenarios, unwritable
outputs and damaged resume files raise hostsim.HostsimError (an Exception) with the message the
`hostsim` command prints; resume recomputes exactly the points whose files do not match (their
fingerprint, model-source id or content hash); traces stream to disk."""

import json
import subprocess
import sys

import hostsim
import pytest
from conftest import LIVELOCK

SHORT = {"duration_ms": 30, "warmup_ms": 0}


def cli_error(hostsim_bin, *args) -> str:
    r = subprocess.run([str(hostsim_bin), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("error: "), r.stderr
    return line[len("error: ") :]


def test_errors_are_exceptions_with_the_cli_message(hostsim_bin, tmp_path):
    assert issubclass(hostsim.HostsimError, Exception)
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'profile = "ideal-4"\nduration_ms = 100\n[[nic]]\nname = "eth0"\nrate_mbps = 1000\nrx_ring = 100000\n'
    )
    with pytest.raises(hostsim.HostsimError) as e:
        hostsim.run(bad)
    assert str(e.value) == cli_error(hostsim_bin, "run", bad, "--out", tmp_path / "o")
    assert "bad.toml:6: key `nic[0].rx_ring`" in str(e.value) and "1..=8192" in str(e.value)
    with pytest.raises(hostsim.HostsimError) as e:
        hostsim.run(tmp_path / "missing.toml")
    assert str(e.value) == cli_error(hostsim_bin, "run", tmp_path / "missing.toml", "--out", tmp_path / "o")
    with pytest.raises(hostsim.HostsimError) as e:
        hostsim.run(LIVELOCK, set={"traffic.load.rate_pps": float("nan")})
    assert str(e.value) == cli_error(
        hostsim_bin, "run", LIVELOCK, "--set", "traffic.load.rate_pps=nan", "--out", tmp_path / "o"
    )


@pytest.mark.parametrize(
    "call",
    [
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
    ],
)
def test_bad_arguments_raise_hostsim_error(call):
    with pytest.raises(hostsim.HostsimError):
        call()


def test_too_many_runs_is_refused_before_anything_runs(hostsim_bin, tmp_path):
    d = hostsim.load(LIVELOCK)
    d["sweep"] = {
        "traffic.load.rate_pps": list(range(1000, 101000, 1)),
        "kernel.netdev_max_backlog": list(range(1, 1001)),
    }
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
    pts[0].write_text("{}")  # parses, but is no point
    pts[1].write_text(pts[1].read_text()[:40])  # truncated
    pts[2].write_bytes(b"\xff\xfe garbage")  # not even text
    pts[3].write_text(pts[4].read_text())  # another run's point under this name
    (tmp_path / "points" / "1.json").write_text("{}")  # a stray file
    (tmp_path / "sweep.json").write_text("{ torn")  # a damaged manifest
    again = hostsim.sweep(LIVELOCK, jobs=2, out=tmp_path, resume=True, set=SHORT)
    assert again.attrs["computed"] == 4
    assert again.attrs["csv"] == full.attrs["csv"]


def test_resume_never_reuses_points_of_another_scenario(tmp_path):
    hostsim.sweep(LIVELOCK, jobs=2, out=tmp_path, set=SHORT)
    (tmp_path / "sweep.json").unlink()  # nothing says whose points these are...
    other = dict(SHORT, **{"kernel.hz": 250})
    again = hostsim.sweep(LIVELOCK, jobs=2, out=tmp_path, resume=True, set=other)
    assert again.attrs["computed"] == 24  # ...but each point's fingerprint does
    pt = json.loads(sorted((tmp_path / "points").glob("*.json"))[0].read_text())
    assert set(pt) == {"fingerprint", "model_source_id", "sha256", "summary"} and "metrics" in pt["summary"]


# Issue 25: failures that escaped as other types (TypeError, IsADirectoryError, OSError,
# ValueError) before every public function turned them into HostsimError.
@pytest.mark.parametrize(
    "name, call",
    [
        ("load(None)", lambda tmp: hostsim.load(None)),
        ("sweep(out=123)", lambda tmp: hostsim.sweep(LIVELOCK, out=123, set=SHORT)),
        ("Result.write(None)", lambda tmp: hostsim.run(LIVELOCK, set=SHORT).write(None)),
        ("calibrate([])", lambda tmp: hostsim.calibrate([])),
        ("calibrate of a scenario without [[calibrate]]", lambda tmp: hostsim.calibrate([LIVELOCK])),
        (
            "an unreachable Dask scheduler",
            lambda tmp: hostsim.sweep(LIVELOCK, set=SHORT, dask="tcp://127.0.0.1:1", timeout_s=2),
        ),
        ("run(trace_format='svg')", lambda tmp: hostsim.run(LIVELOCK, set=SHORT, trace=True, trace_format="svg")),
        ("a trace into a file", lambda tmp: hostsim.run(LIVELOCK, set=SHORT, trace=True, trace_dir=tmp / "f" / "x")),
    ],
)
def test_every_failure_is_a_hostsim_error(name, call, tmp_path):
    (tmp_path / "f").write_text("a file, not a directory")
    with pytest.raises(hostsim.HostsimError):
        call(tmp_path)


def test_other_exceptions_keep_their_cause():
    with pytest.raises(hostsim.HostsimError) as e:
        hostsim.load(None)
    assert isinstance(e.value.__cause__, TypeError) and "TypeError" in str(e.value)


def test_resume_recomputes_swapped_edited_and_other_model_points(tmp_path):
    full = hostsim.sweep(LIVELOCK, jobs=2, out=tmp_path, set=SHORT)
    assert not (tmp_path / "INCOMPLETE").exists()
    pts = sorted((tmp_path / "points").glob("*.json"))
    a, b = json.loads(pts[5].read_text()), json.loads(pts[6].read_text())
    a["summary"], b["summary"] = b["summary"], a["summary"]  # swapped, fingerprints kept
    pts[5].write_text(json.dumps(a))
    pts[6].write_text(json.dumps(b))
    c = json.loads(pts[7].read_text())
    c["summary"]["metrics"]["delivered_pps"] += 1  # edited, fingerprint kept
    pts[7].write_text(json.dumps(c))
    d = json.loads(pts[8].read_text())
    d["model_source_id"] = "0" * 16  # written by another model
    pts[8].write_text(json.dumps(d))
    again = hostsim.sweep(LIVELOCK, jobs=2, out=tmp_path, resume=True, set=SHORT)
    assert again.attrs["computed"] == 4
    assert again.attrs["csv"] == full.attrs["csv"]


def test_run_trace_streams_to_disk_with_flat_memory(tmp_path):
    """As on the command line (test_trace.py): 60 simulated seconds at 2,000 pkt/s, ~1 M slices.
    Each run in its own interpreter, so each reports its own peak RSS."""
    code = (
        "import hostsim, json, sys; r = hostsim.run(sys.argv[1], variant='legacy', trace=sys.argv[2] == '1', "
        "trace_dir=sys.argv[3], set={'traffic.load.rate_pps': 2000, 'duration_ms': 60000}); "
        "print(json.dumps({'run': r.run, 'trace': str(r.trace_path) if r.trace_path else None}))"
    )
    out = {}
    for traced in ("0", "1"):
        p = subprocess.run(
            [sys.executable, "-c", code, str(LIVELOCK), traced, str(tmp_path / traced)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert p.returncode == 0, p.stderr
        out[traced] = json.loads(p.stdout)
    traced, plain = out["1"], out["0"]
    trace = tmp_path / "1" / "trace.json"
    assert traced["trace"] == str(trace) and trace.stat().st_size > 50_000_000
    assert traced["run"]["trace_slices"] > 500_000
    # The trace (~100 MB of JSON) never sits in memory: peak RSS within 1.25x of the untraced run.
    assert traced["run"]["peak_rss_bytes"] <= 1.25 * plain["run"]["peak_rss_bytes"], (traced["run"], plain["run"])
    assert plain["trace"] is None
    assert [f.name for f in (tmp_path / "1").iterdir()] == ["trace.json"], "a temporary left beside the trace"
