"""`hostsim run --trace` streams a Perfetto trace with bounded memory, readable by Perfetto.

The trace of a 60-simulated-second run must not grow memory (peak RSS within 2x of the same run
untraced) and must hold exactly the slices the model recorded (`run.json` `trace_slices`, one per
unit run), properly nested per CPU and in time order. The file is parsed with Perfetto's own
schema (`perfetto.protos...perfetto_trace_pb2` from the `perfetto` package on PyPI). Loading it
in `trace_processor` needs Perfetto's `trace_processor_shell` binary, which the `perfetto` package
downloads from Google's storage at run time (not a package registry, so not reachable here): that
check runs when the binary is present (HOSTSIM_TRACE_PROCESSOR=/path/to/trace_processor_shell, or
the package's own cache) and is skipped otherwise, saying why.
"""

import json
import os
from pathlib import Path

import pytest
from conftest import LIVELOCK, cli

# 2,000 pkt/s for 60 s: ~1 M slices, ~40 MB of trace (an in-memory trace would be ~30 MB of RSS).
ARGS = [LIVELOCK, "--variant", "legacy", "--set", "traffic.load.rate_pps=2000", "--set", "duration_ms=60000"]


@pytest.fixture(scope="module")
def traced(hostsim_bin, tmp_path_factory):
    d = tmp_path_factory.mktemp("traced")
    cli(hostsim_bin, "run", *ARGS, "--trace", "--out", d)
    return d


def test_trace_memory_flat(hostsim_bin, traced, tmp_path):
    cli(hostsim_bin, "run", *ARGS, "--out", tmp_path)
    untraced = json.loads((tmp_path / "run.json").read_text())
    run = json.loads((traced / "run.json").read_text())
    assert run["trace_slices"] > 500_000
    size = (traced / "trace.perfetto-trace").stat().st_size
    assert run["peak_rss_bytes"] <= 2 * untraced["peak_rss_bytes"], (
        run["peak_rss_bytes"],
        untraced["peak_rss_bytes"],
        size,
    )
    # Tracing never changes the results.
    assert (traced / "summary.json").read_text() == (tmp_path / "summary.json").read_text()


def test_trace_parses_with_perfettos_schema(traced):
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    t = pb.Trace()
    t.ParseFromString((traced / "trace.perfetto-trace").read_bytes())
    run = json.loads((traced / "run.json").read_text())
    tracks = {p.track_descriptor.uuid: p.track_descriptor for p in t.packet if p.HasField("track_descriptor")}
    names = {}
    for p in t.packet:
        if p.HasField("interned_data"):
            names.update({n.iid: n.name for n in p.interned_data.event_names})
    assert {"tick", "NET_RX", "sink"} <= set(names.values())
    depth, last, begins = {}, {}, 0
    for p in t.packet:
        if not p.HasField("track_event"):
            continue
        e = p.track_event
        assert e.track_uuid in tracks
        assert p.timestamp >= last.get(e.track_uuid, 0), "time order per track"
        last[e.track_uuid] = p.timestamp
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            begins += 1
            assert e.name_iid in names
            depth[e.track_uuid] = depth.get(e.track_uuid, 0) + 1
        else:
            assert e.type == pb.TrackEvent.TYPE_SLICE_END
            depth[e.track_uuid] -= 1
            assert depth[e.track_uuid] >= 0, "an end without a begin"
    assert begins == run["trace_slices"]
    assert all(d == 0 for d in depth.values()), "every slice ends"


def _trace_processor_shell():
    p = os.environ.get("HOSTSIM_TRACE_PROCESSOR")
    if p and Path(p).is_file():
        return p
    cache = Path.home() / ".local" / "share" / "perfetto" / "prebuilts"
    found = sorted(cache.glob("trace_processor_shell*")) if cache.is_dir() else []
    return str(found[0]) if found else None


def test_trace_opens_in_trace_processor(traced):
    shell = _trace_processor_shell()
    if shell is None:
        pytest.skip(
            "trace_processor_shell not available: the perfetto package fetches it from "
            "Google's storage at run time, outside the package registries this machine reaches"
        )
    from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig

    run = json.loads((traced / "run.json").read_text())
    tp = TraceProcessor(trace=str(traced / "trace.perfetto-trace"), config=TraceProcessorConfig(bin_path=shell))
    try:
        n = next(iter(tp.query("select count(*) as n from slice"))).n
    finally:
        tp.close()
    assert n == run["trace_slices"]
