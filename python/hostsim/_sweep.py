"""Sweeps from Python: every point × variant of a scenario on threads (the GIL is released) or on
a Dask cluster (one task per run), written as they arrive so an interrupted sweep resumes.

A point file ``points/NNNNN.json`` holds ``{"fingerprint": …, "model_source_id": …, "sha256": …,
"summary": {…}}``: the fingerprint (from the native module) covers the run's whole configuration,
its metric aliases and the model's sources (``MODEL_SOURCE_ID``, not a version number: a rebuilt
model is another model); ``sha256`` is the hash of the summary's content. Resuming reuses a point
only if its file parses, carries the fingerprint of the run it is named for and this build's
model-source id, and its summary still has the hash it was written with; anything else (torn,
truncated, ``{}``, another scenario's, edited, swapped with another point's summary) is
recomputed. Files are written atomically (a temporary file renamed into place); until the sweep
is complete ``out/INCOMPLETE`` says so, as the command line's does."""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from . import _native


def _point(path: str, index: int, text: str | None, sets: list, max_runs: int) -> tuple[int, str, str]:
    """One run of a sweep (a Dask task): its index, summary.json text and fingerprint."""
    summary, fp = _native.run_point(path, index, text=text, sets=[tuple(s) for s in sets], max_runs=max_runs)
    return index, summary, fp


def _fingerprint(runs: list) -> str:
    """The sweep's fingerprint: its runs' fingerprints together."""
    return hashlib.sha256("\n".join(r["fingerprint"] for r in runs).encode()).hexdigest()


def _content_hash(summary: Any) -> str:
    """The hash of a summary's content (canonical JSON: sorted keys, no spaces)."""
    text = json.dumps(summary, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _read_point(f: Path, want: str) -> str | None:
    """The summary text of a point file if it is complete, of the run with fingerprint `want`,
    of this model (its source id) and unaltered (its content hash); None (recompute it)
    otherwise."""
    try:
        obj = json.loads(f.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(obj, dict) or obj.get("fingerprint") != want:
        return None
    if obj.get("model_source_id") != _native.MODEL_SOURCE_ID:
        return None
    summary = obj.get("summary")
    if not isinstance(summary, dict) or not isinstance(summary.get("metrics"), dict):
        return None
    if obj.get("sha256") != _content_hash(summary):
        return None
    return json.dumps(summary)


def _point_text(summary: str, fp: str) -> str:
    h = _content_hash(json.loads(summary))
    return (
        '{"fingerprint": '
        + json.dumps(fp)
        + ', "model_source_id": '
        + json.dumps(_native.MODEL_SOURCE_ID)
        + ', "sha256": '
        + json.dumps(h)
        + ', "summary": '
        + summary.rstrip()
        + "}\n"
    )


class _Progress:
    """`name [done/total] elapsed, ETA` on a terminal; silent when piped."""

    def __init__(self, name: str, total: int, todo: int, show: bool):
        self.name, self.total, self.todo, self.show = name, total, todo, show
        self.done, self.t0 = 0, time.monotonic()

    def step(self) -> None:
        self.done += 1
        if not self.show:
            return
        el = time.monotonic() - self.t0
        eta = el / self.done * (self.todo - self.done)
        have = self.total - self.todo + self.done
        sys.stderr.write(f"\r{self.name}: {have}/{self.total} runs, {el:.0f} s elapsed, ETA {eta:.0f} s ")
        sys.stderr.flush()

    def close(self) -> None:
        if self.show and self.todo:
            sys.stderr.write("\n")


def _write_atomic(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path` and rename it into place: a reader (or a
    resumed sweep) sees the old file, none, or the whole new one, never half of it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException as e:  # an interrupt too: never leave the temporary
        try:
            tmp.unlink()
        except OSError:
            pass
        if not isinstance(e, OSError):
            raise
        from . import HostsimError

        raise HostsimError(f"writing {path}: {e}") from None


def sweep(
    src: Any,
    jobs: int | None = None,
    dask: str | None = None,
    out: str | os.PathLike | None = None,
    resume: bool = False,
    set: Mapping[str, Any] | None = None,
    progress: bool | None = None,
    path: str | os.PathLike | None = None,
    timeout_s: float | None = None,
    max_runs: int | None = None,
) -> pd.DataFrame:
    """Run every sweep point × variant; a DataFrame shaped like ``results.csv``.

    ``jobs``: parallel runs (threads, or LocalCluster workers with ``dask="local"``).
    ``dask``: ``"tcp://HOST:PORT"`` of a running scheduler, or ``"local"`` to start a LocalCluster.
    ``out``: directory for ``results.csv``, ``expectations.json`` and ``points/`` (each run's
    summary.json as it arrives). ``resume=True`` reuses the points already in ``out`` whose
    fingerprint matches their run and computes the rest. ``max_runs``: refuse a sweep of more runs
    (default ``hostsim.DEFAULT_MAX_RUNS``, as ``--max-runs`` on the command line). ``df.attrs``
    holds ``expectations`` (the claims' verdicts), ``computed`` (runs computed by this call) and
    ``csv`` (the exact results.csv text).
    """
    from . import DEFAULT_MAX_RUNS, HostsimError, _max_runs
    from . import scenario as _scenario

    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise HostsimError(f"jobs: expected a whole number >= 1, not {jobs!r}")
    if timeout_s is not None and not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
        raise HostsimError(f"timeout_s: expected a number of seconds > 0, not {timeout_s!r}")
    max_runs = _max_runs(DEFAULT_MAX_RUNS if max_runs is None else max_runs)
    sc = _scenario(src, set=set, path=path)
    inf = json.loads(_native.scenario_info(sc.path, max_runs=max_runs, **sc.args()))
    runs = inf["runs"]
    n = len(runs)
    summaries: dict[int, str] = {}
    pdir = None
    if out is not None:
        outdir = Path(out)
        pdir = outdir / "points"
        _native.prepare_out(os.fspath(outdir))
        _native.prepare_out(os.fspath(pdir))
        manifest = outdir / "sweep.json"
        fp = _fingerprint(runs)
        if resume and manifest.exists():
            try:
                old = json.loads(manifest.read_text()).get("fingerprint")
            except (OSError, ValueError, AttributeError):
                old = None  # a torn manifest: the points' own fingerprints decide
            if old is not None and old != fp:
                raise HostsimError(f"{outdir}: holds points of another scenario or overrides; resume needs the same")
        _write_atomic(
            outdir / "INCOMPLETE",
            "The outputs in this directory are not complete: they must not be read as "
            f"results.\nhostsim.sweep of {inf['name']} (pid {os.getpid()}): in progress, or interrupted; "
            "points/ holds the finished runs (resume=True goes on from them).\n",
        )
        for stale in ("results.csv", "expectations.json"):
            (outdir / stale).unlink(missing_ok=True)
        if resume:
            for i, r in enumerate(runs):
                text = _read_point(pdir / f"{i:05d}.json", r["fingerprint"])
                if text is not None:
                    summaries[i] = text
        else:
            for f in pdir.glob("*.json"):
                if f.is_file():
                    f.unlink()
        _write_atomic(manifest, json.dumps({"scenario": inf["name"], "runs": n, "fingerprint": fp}, indent=2) + "\n")
    elif resume:
        raise HostsimError("resume=True needs out=DIR (where the finished points are)")

    todo = [i for i in range(n) if i not in summaries]
    show = sys.stderr.isatty() if progress is None else progress
    prog = _Progress(inf["name"], n, len(todo), show)

    def arrived(i: int, text: str, fp: str) -> None:
        summaries[i] = text
        if pdir is not None:
            _write_atomic(pdir / f"{i:05d}.json", _point_text(text, fp))
        prog.step()

    if todo:
        if dask:
            _run_dask(sc, todo, dask, jobs, arrived, timeout_s, max_runs)
        else:
            _run_threads(sc, todo, jobs, arrived, max_runs)
    prog.close()

    csv, expectations = _native.finish(sc.path, [summaries[i] for i in range(n)], max_runs=max_runs, **sc.args())
    if out is not None:
        _write_atomic(Path(out) / "results.csv", csv)
        _write_atomic(Path(out) / "expectations.json", expectations)
        (Path(out) / "INCOMPLETE").unlink(missing_ok=True)
    df = pd.read_csv(io.StringIO(csv))
    df.attrs["expectations"] = json.loads(expectations)
    df.attrs["computed"] = len(todo)
    df.attrs["csv"] = csv
    df.attrs["scenario"] = inf["name"]
    return df


def _run_threads(sc, todo: list[int], jobs: int | None, arrived, max_runs: int) -> None:
    from concurrent.futures import ThreadPoolExecutor, as_completed

    jobs = min(jobs or os.cpu_count() or 1, len(todo))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futs = [pool.submit(_point, sc.path, i, sc.text, list(sc.sets), max_runs) for i in todo]
        try:
            for f in as_completed(futs):
                arrived(*f.result())
        except BaseException:
            for f in futs:
                f.cancel()
            raise


def _run_dask(
    sc, todo: list[int], address: str, jobs: int | None, arrived, timeout_s: float | None, max_runs: int
) -> None:
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    if address == "local":
        cluster = LocalCluster(n_workers=jobs or 2, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(address, timeout=timeout_s if timeout_s is not None else 30)
    try:
        tag = uuid.uuid4().hex[:8]
        sets = [list(s) for s in sc.sets]
        futs = [
            client.submit(_point, sc.path, i, sc.text, sets, max_runs, key=f"hostsim-{tag}-{i}", pure=False)
            for i in todo
        ]
        for f in as_completed(futs, timeout=timeout_s):
            arrived(*f.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
