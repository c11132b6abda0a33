"""Sweeps from Python: every point × variant of a scenario on threads (the GIL is released) or on
a Dask cluster (one task per run), written as they arrive so an interrupted sweep resumes."""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from . import _native


def _point(path: str, index: int, text: str | None, sets: list) -> tuple[int, str]:
    """One run of a sweep (a Dask task): its index and summary.json text."""
    return index, _native.run_point(path, index, text=text, sets=[tuple(s) for s in sets])


def _fingerprint(sc) -> str:
    if sc.text is not None:
        src = sc.text
    elif os.path.exists(sc.path):
        src = Path(sc.path).read_text()
    else:
        src = sc.path  # a built-in scenario's name
    return hashlib.sha256(json.dumps([src, list(map(list, sc.sets))]).encode()).hexdigest()


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
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def sweep(src: Any, jobs: int | None = None, dask: str | None = None, out: str | os.PathLike | None = None,
          resume: bool = False, set: Mapping[str, Any] | None = None, progress: bool | None = None,
          path: str | os.PathLike | None = None, timeout_s: float | None = None) -> pd.DataFrame:
    """Run every sweep point × variant; a DataFrame shaped like ``results.csv``.

    ``jobs``: parallel runs (threads, or LocalCluster workers with ``dask="local"``).
    ``dask``: ``"tcp://HOST:PORT"`` of a running scheduler, or ``"local"`` to start a LocalCluster.
    ``out``: directory for ``results.csv``, ``expectations.json`` and ``points/`` (each run's
    summary.json as it arrives). ``resume=True`` reuses the points already in ``out`` and computes
    only the missing ones. ``df.attrs`` holds ``expectations`` (the claims' verdicts), ``computed``
    (runs computed by this call) and ``csv`` (the exact results.csv text).
    """
    from . import scenario as _scenario

    sc = _scenario(src, set=set, path=path)
    inf = json.loads(_native.scenario_info(sc.path, **sc.args()))
    n = len(inf["runs"])
    summaries: dict[int, str] = {}
    pdir = None
    if out is not None:
        outdir = Path(out)
        pdir = outdir / "points"
        pdir.mkdir(parents=True, exist_ok=True)
        manifest = outdir / "sweep.json"
        fp = _fingerprint(sc)
        if resume and manifest.exists():
            old = json.loads(manifest.read_text()).get("fingerprint")
            if old != fp:
                raise ValueError(f"{outdir}: holds points of another scenario or overrides; resume needs the same")
        if resume:
            for f in sorted(pdir.glob("*.json")):
                try:
                    i = int(f.stem)
                    text = f.read_text()
                    json.loads(text)
                except (ValueError, OSError):
                    continue  # a torn or foreign file: recompute that point
                if 0 <= i < n:
                    summaries[i] = text
        else:
            for f in pdir.glob("*.json"):
                f.unlink()
        _write_atomic(manifest, json.dumps({"scenario": inf["name"], "runs": n, "fingerprint": fp}, indent=2) + "\n")
    elif resume:
        raise ValueError("resume=True needs out=DIR (where the finished points are)")

    todo = [i for i in range(n) if i not in summaries]
    show = sys.stderr.isatty() if progress is None else progress
    prog = _Progress(inf["name"], n, len(todo), show)

    def arrived(i: int, text: str) -> None:
        summaries[i] = text
        if pdir is not None:
            _write_atomic(pdir / f"{i:05d}.json", text)
        prog.step()

    if todo:
        if dask:
            _run_dask(sc, todo, dask, jobs, arrived, timeout_s)
        else:
            _run_threads(sc, todo, jobs, arrived)
    prog.close()

    csv, expectations = _native.finish(sc.path, [summaries[i] for i in range(n)], **sc.args())
    if out is not None:
        _write_atomic(Path(out) / "results.csv", csv)
        _write_atomic(Path(out) / "expectations.json", expectations)
    df = pd.read_csv(io.StringIO(csv))
    df.attrs["expectations"] = json.loads(expectations)
    df.attrs["computed"] = len(todo)
    df.attrs["csv"] = csv
    df.attrs["scenario"] = inf["name"]
    return df


def _run_threads(sc, todo: list[int], jobs: int | None, arrived) -> None:
    from concurrent.futures import ThreadPoolExecutor, as_completed

    jobs = jobs or os.cpu_count() or 1
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futs = [pool.submit(_point, sc.path, i, sc.text, list(sc.sets)) for i in todo]
        for f in as_completed(futs):
            arrived(*f.result())


def _run_dask(sc, todo: list[int], address: str, jobs: int | None, arrived, timeout_s: float | None) -> None:
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    if address == "local":
        cluster = LocalCluster(n_workers=jobs or 2, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(address, timeout=30)
    try:
        tag = uuid.uuid4().hex[:8]
        sets = [list(s) for s in sc.sets]
        futs = [client.submit(_point, sc.path, i, sc.text, sets, key=f"hostsim-{tag}-{i}", pure=False) for i in todo]
        for f in as_completed(futs, timeout=timeout_s):
            arrived(*f.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
