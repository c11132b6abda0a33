"""hostsim from Python: run scenarios, sweep them (threads or a Dask cluster), plot, report.

    import hostsim
    r = hostsim.run("scenarios/examples/livelock.toml", seed=3, set={"traffic.load.rate_pps": 50000})
    r.metrics["delivered_pps"]; r.timeseries.plot(x="time_ms", y="delivered_pps")
    df = hostsim.sweep("scenarios/examples/livelock.toml", jobs=2)      # like results.csv
    df = hostsim.sweep(sc, dask="tcp://127.0.0.1:8786", out="runs/ll", resume=True)
    hostsim.calibrate(["scenarios/goda-rfs-migrations.toml"])   # fit [[calibrate]] to calibration claims

A scenario is a path, the name of a built-in scenario, or a dict (``hostsim.load(path)`` gives
one to modify). The simulation runs in Rust with the GIL released; the same seed gives the same
bytes as the ``hostsim`` command.

Every failure (a bad scenario or argument, an unwritable output directory, an unreachable Dask
scheduler, a run that stalls or fails its conservation checks, a bug inside) raises
:class:`HostsimError`, a ``ValueError`` (so an ``Exception``), with the message the ``hostsim``
command prints; anything else that goes wrong inside a call is raised as a ``HostsimError`` too,
naming the original exception (kept as ``__cause__``). Only ``KeyboardInterrupt`` and
``SystemExit`` pass through.
"""

from __future__ import annotations

import functools
import io
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from . import _native
from ._native import HostsimError


def _errors(f):
    """Every failure of `f` as a HostsimError (an Exception): its own, or any other exception
    (named, and kept as ``__cause__``), a pyo3 PanicException (a BaseException) included. Only
    KeyboardInterrupt, SystemExit and GeneratorExit pass through."""

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except HostsimError:
            raise
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as e:  # noqa: BLE001 (the point: nothing else escapes)
            raise HostsimError(f"{type(e).__name__}: {e}") from e

    return wrapped


from . import plot as plot  # noqa: E402  (hostsim.plot.figure)
from ._sweep import sweep as _sweep_impl  # noqa: E402

sweep = _errors(_sweep_impl)

__all__ = ["run", "sweep", "calibrate", "load", "info", "Result", "Scenario", "HostsimError"]
__version__ = _native.__version__
DEFAULT_MAX_RUNS = _native.DEFAULT_MAX_RUNS


@dataclass(frozen=True)
class Scenario:
    """A scenario as the native module takes it: a path (for the profile lookup and messages),
    optionally its text, and ``--set`` overrides as strings."""

    path: str
    text: str | None = None
    sets: tuple = ()

    def args(self) -> dict:
        return {"text": self.text, "sets": list(self.sets)}


def _set_value(v: Any) -> str:
    """A Python value as ``--set`` would be written (parsed as a TOML value by hostsim)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return v
    return json.dumps(v)


@_errors
def scenario(
    src: Any, seed: int | None = None, set: Mapping[str, Any] | None = None, path: str | os.PathLike | None = None
) -> Scenario:
    """Normalise a path / built-in name / dict (+ seed and overrides) into a :class:`Scenario`."""
    if isinstance(src, Scenario):
        sc = src
    elif isinstance(src, Mapping):
        try:
            text = _native.json_to_toml(json.dumps(src, allow_nan=False))
        except (TypeError, ValueError) as e:
            if isinstance(e, HostsimError):
                raise
            raise HostsimError(f"scenario dict: {e}") from None
        name = src.get("name", "scenario")
        sc = Scenario(path=str(path or Path.cwd() / f"{name}.toml"), text=text)
    elif isinstance(src, (str, os.PathLike)):
        sc = Scenario(path=os.fspath(src))
    else:
        raise HostsimError(f"a scenario is a path, a built-in scenario's name or a dict, not {type(src).__name__}")
    if set is not None and not isinstance(set, Mapping):
        raise HostsimError(f"set: expected a dict of key paths to values, not {type(set).__name__}")
    try:
        sets = list(sc.sets) + [(str(k), _set_value(v)) for k, v in (set or {}).items()]
    except (TypeError, ValueError) as e:
        raise HostsimError(f"set: {e}") from None
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise HostsimError(f"seed: expected a whole number, not {seed!r}")
        sets.append(("seed", str(seed)))
    return Scenario(sc.path, sc.text, tuple(sets))


@_errors
def load(path: str | os.PathLike) -> dict:
    """A scenario file as a dict, to modify and pass to :func:`run` or :func:`sweep`."""
    import tomllib

    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise HostsimError(f"{os.fspath(path)}: cannot read scenario: {e}") from None


@_errors
def info(src: Any, set: Mapping[str, Any] | None = None, max_runs: int = DEFAULT_MAX_RUNS) -> dict:
    """Name, description, sweep, variants, claims, figures and the list of runs of a scenario."""
    sc = scenario(src, set=set)
    return json.loads(_native.scenario_info(sc.path, max_runs=_max_runs(max_runs), **sc.args()))


def _max_runs(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise HostsimError(f"max_runs: expected a whole number >= 0, not {n!r}")
    return min(n, 2**64 - 1)


@dataclass
class Result:
    """One run: ``summary`` (summary.json as dicts), ``metrics`` (its flat measurement-window
    values), ``timeseries`` (timeseries.csv as a DataFrame), ``run`` (run.json: wall-clock facts),
    the exact texts the command line would write, and with ``trace=True`` ``trace_path``, the
    trace file streamed to disk during the run (as ``hostsim run --trace`` does)."""

    summary: dict
    timeseries: pd.DataFrame
    run: dict
    summary_json: str = field(repr=False)
    timeseries_csv: str = field(repr=False)
    trace_path: Path | None = None

    @property
    def metrics(self) -> dict:
        return self.summary["metrics"]

    @property
    def trace_json(self) -> str | None:
        """The Chrome JSON trace's text, read from ``trace_path`` (for small traces; a long
        run's trace is better opened from its file)."""
        if self.trace_path is None or self.trace_path.suffix != ".json":
            return None
        return self.trace_path.read_text()

    @_errors
    def write(self, out: str | os.PathLike) -> Path:
        """Write summary.json, run.json, timeseries.csv (and the trace) as ``hostsim run`` does,
        each atomically (a reader never sees half a file)."""
        from ._sweep import _write_atomic

        d = Path(out)
        _native.prepare_out(os.fspath(d))
        _write_atomic(d / "summary.json", self.summary_json)
        _write_atomic(d / "run.json", json.dumps(self.run, indent=2) + "\n")
        _write_atomic(d / "timeseries.csv", self.timeseries_csv)
        if self.trace_path is not None and self.trace_path.parent.resolve() != d.resolve():
            tmp = d / f".{self.trace_path.name}.{os.getpid()}.tmp"
            try:
                shutil.copyfile(self.trace_path, tmp)
                os.replace(tmp, d / self.trace_path.name)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
        return d


@_errors
def run(
    src: Any,
    seed: int | None = None,
    set: Mapping[str, Any] | None = None,
    variant: str | None = None,
    trace: bool = False,
    path: str | os.PathLike | None = None,
    max_runs: int = DEFAULT_MAX_RUNS,
    trace_format: str = "json",
    trace_dir: str | os.PathLike | None = None,
) -> Result:
    """Run a scenario's base configuration (no sweep; a variant only if named), like ``hostsim run``.

    ``trace=True`` streams a trace of what every CPU ran to disk as the run goes (memory stays
    flat, as on the command line): ``trace.json`` (Chrome JSON, ``trace_format="json"``) or
    ``trace.perfetto-trace`` (``"perfetto"``) in ``trace_dir`` (default: a new temporary
    directory); ``Result.trace_path`` names it.
    """
    sc = scenario(src, seed=seed, set=set, path=path)
    if variant is not None and not isinstance(variant, str):
        raise HostsimError(f"variant: expected a name, not {variant!r}")
    if trace_format not in ("json", "perfetto"):
        raise HostsimError(f'trace_format: expected "json" or "perfetto", not {trace_format!r}')
    tdir = None
    if trace:
        tdir = os.fspath(trace_dir) if trace_dir is not None else tempfile.mkdtemp(prefix="hostsim-trace-")
    summary, ts, runinfo, tr = _native.run(
        sc.path, variant=variant, trace_dir=tdir, trace_format=trace_format, max_runs=_max_runs(max_runs), **sc.args()
    )
    return Result(
        summary=json.loads(summary),
        timeseries=pd.read_csv(io.StringIO(ts)),
        run=json.loads(runinfo),
        summary_json=summary,
        timeseries_csv=ts,
        trace_path=Path(tr) if tr is not None else None,
    )


@_errors
def calibrate(paths, **kwargs) -> dict:
    """Fit scenarios' ``[[calibrate]]`` parameters to their calibration claims and write the overlay;
    see :func:`hostsim.calibration.calibrate` (imported on use: it needs scipy)."""
    from .calibration import calibrate as _calibrate

    return _calibrate(paths, **kwargs)
