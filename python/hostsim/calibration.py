"""`hostsim calibrate`: fit scenarios' `[[calibrate]]` parameters to their *calibration* claims.

    python -m hostsim.calibration scenarios/ozaki-pbq-*.toml --seeds 5 --jobs 2
    hostsim.calibrate(["scenarios/goda-rfs-migrations.toml"], trials=16, refine=16)

Only claims with ``role = "calibration"`` (about the baseline system), and of a paper sentence read
several ways (``claim_id``) only its primary reading, enter the objective, and
only the runs they need are simulated (their variants and sweep points, every seed). The
objective is the sum of each claim's `calibration_loss` (crates/scenario/src/expect.rs), which is
at least 1 exactly when the claim fails on its mean: the objective counts the calibration claims
the fit misses, shaped by how far each one misses (and, for met ``approx`` claims, how close it
is to the paper's value). It is deterministic for fixed seeds (common random numbers), so the
search is repeatable.

The search, over the parameters scaled to [0, 1] within their bounds: the scenario's current
values, then a scrambled Sobol sample (``scipy.stats.qmc``, seed 0) of ``trials`` points, then
``scipy.optimize.minimize`` (Nelder-Mead with bounds) from the best of them for at most
``refine`` evaluations. Every evaluation's runs go out in parallel, on threads (the GIL is
released) or on a Dask cluster (``dask="tcp://..."`` or ``"local"``).

All scenarios of one call must name the same overlay (``calibration = "NAME"``); a parameter
declared by several scenarios must have the same bounds in each. The overlay is written to
``calibration/NAME.toml`` with the fitted values and how they were obtained (date, optimiser,
seeds, objective before and after, each calibration claim's verdict at the fitted values).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from . import _native


def _fmt_value(v: float, integer: bool) -> str:
    return str(int(round(v))) if integer else repr(float(v))


class _Problem:
    """The scenarios, their parameters and the runs the calibration claims need."""

    def __init__(self, paths: Sequence[str], seeds: int | None, sets: Sequence[tuple[str, str]]):
        self.paths = [os.fspath(p) for p in paths]
        self.base_sets = [tuple(s) for s in sets]
        if seeds is not None:
            self.base_sets.append(("seeds", str(int(seeds))))
        self.infos = [json.loads(_native.scenario_info(p, sets=list(self.base_sets))) for p in self.paths]
        names = {(i["calibration"] or {}).get("name") for i in self.infos}
        if None in names or not all(i["calibrate"] for i in self.infos):
            bad = [p for p, i in zip(self.paths, self.infos, strict=True) if not i["calibrate"] or not i["calibration"]]
            raise ValueError(f"{', '.join(bad)}: no [[calibrate]] parameters / calibration overlay to fit")
        if len(names) != 1:
            raise ValueError(f"the scenarios name different calibration overlays: {sorted(names)}")
        self.overlay_name = names.pop()
        self.overlay_path = Path(self.infos[0]["calibration"]["path"])
        self.params: dict[str, dict] = {}
        for path, inf in zip(self.paths, self.infos, strict=True):
            for p in inf["calibrate"]:
                q = self.params.setdefault(p["name"], dict(p, start=p["value"]))
                if (q["min"], q["max"], q["integer"]) != (p["min"], p["max"], p["integer"]):
                    raise ValueError(f"{path}: parameter `{p['name']}` has other bounds than in another scenario")
                if q["start"] is None:
                    q["start"] = p["value"]
        self.names = sorted(self.params)
        self.runs = [inf["calibration_runs"] for inf in self.infos]
        if not any(self.runs):
            raise ValueError('no claim has role = "calibration": nothing to fit to')
        self.seeds = sorted({s for inf in self.infos for s in inf["seed_list"]})

    def to_values(self, u: Sequence[float]) -> dict[str, float]:
        out = {}
        for n, x in zip(self.names, u, strict=True):
            p = self.params[n]
            v = p["min"] + min(max(float(x), 0.0), 1.0) * (p["max"] - p["min"])
            out[n] = float(round(v)) if p["integer"] else v
        return out

    def to_unit(self, values: dict[str, float]) -> list[float]:
        u = []
        for n in self.names:
            p = self.params[n]
            v = values.get(n)
            if v is None or not math.isfinite(v):
                v = (p["min"] + p["max"]) / 2
            u.append(min(max((v - p["min"]) / (p["max"] - p["min"]), 0.0), 1.0))
        return u

    def sets_for(self, k: int, values: dict[str, float]) -> list[tuple[str, str]]:
        sets = list(self.base_sets)
        for p in self.infos[k]["calibrate"]:
            v = values[p["name"]] + (p["offset"] or 0.0)
            sets.append((p["key"], _fmt_value(v, p["integer"])))
        return sets


def _mapper(jobs: int | None, dask: str | None):
    """A function running `(path, index, sets)` tasks in parallel, returning summaries in order."""
    if dask:
        from distributed import Client, LocalCluster

        cluster = (
            LocalCluster(n_workers=jobs or 2, threads_per_worker=1, processes=True, dashboard_address=None)
            if dask == "local"
            else None
        )
        client = Client(cluster) if cluster else Client(dask, timeout=30)

        def run_all(tasks):
            futs = [client.submit(_native.run_point, p, i, sets=s, pure=False) for p, i, s in tasks]
            # run_point gives (summary, fingerprint): the summaries are what calibration reads.
            return [summary for summary, _fp in client.gather(futs)]

        def close():
            client.close()
            if cluster is not None:
                cluster.close()

        return run_all, close
    pool = ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1)

    def run_all(tasks):
        return [summary for summary, _fp in pool.map(lambda t: _native.run_point(t[0], t[1], sets=t[2]), tasks)]

    return run_all, pool.shutdown


def calibrate(
    paths: Sequence[str | os.PathLike],
    seeds: int | None = None,
    trials: int = 16,
    refine: int = 24,
    jobs: int | None = None,
    dask: str | None = None,
    sets: Sequence[tuple[str, str]] = (),
    start: dict[str, float] | None = None,
    write: bool = True,
    log: Callable[[str], None] | None = None,
) -> dict:
    """Fit the parameters; returns (and with ``write``, writes) the overlay as a dict with
    ``values``, ``fit`` and ``path``. ``start`` overrides the starting values (by parameter name;
    default: the values the scenarios have now, from the overlay if there is one)."""
    start_values = start
    import numpy as np
    from scipy.optimize import minimize
    from scipy.stats import qmc

    log = log or (lambda m: print(m, file=sys.stderr))
    prob = _Problem([os.fspath(p) for p in paths], seeds, sets)
    run_all, close = _mapper(jobs, dask)
    cache: dict[tuple, dict] = {}

    def evaluate(u) -> dict:
        values = prob.to_values(u)
        key = tuple(values[n] for n in prob.names)
        if key in cache:
            return cache[key]
        tasks, owners = [], []
        for k, path in enumerate(prob.paths):
            s = prob.sets_for(k, values)
            for i in prob.runs[k]:
                tasks.append((path, i, s))
                owners.append(k)
        summaries = run_all(tasks)
        claims, loss = [], 0.0
        for k, path in enumerate(prob.paths):
            mine = [sm for sm, o in zip(summaries, owners, strict=True) if o == k]
            if not prob.runs[k]:
                continue
            r = json.loads(_native.evaluate_calibration(path, prob.runs[k], mine, sets=prob.sets_for(k, values)))
            loss += r["objective"]
            for c, claim_loss in zip(r["claims"], r["loss"], strict=True):
                claims.append(dict(c, loss=claim_loss))
        res = {"values": values, "objective": loss, "claims": claims}
        cache[key] = res
        shown = ", ".join(f"{n}={values[n]:g}" for n in prob.names)
        log(f"  [{len(cache):3d}] objective {loss:10.4f}  {shown}")
        return res

    try:
        start = {n: prob.params[n]["start"] for n in prob.names}
        for n, v in dict(start_values or {}).items():
            if n not in prob.params:
                raise ValueError(f"--start {n}: no such parameter (have: {', '.join(prob.names)})")
            start[n] = float(v)
        log(
            f"calibrating {', '.join(prob.names)} on {sum(map(len, prob.runs))} runs per evaluation "
            f"({len(prob.seeds)} seeds), overlay {prob.overlay_path}"
        )
        first = evaluate(prob.to_unit(start))
        pts = qmc.Sobol(d=len(prob.names), scramble=True, seed=0).random(max(trials, 1)) if trials else []
        best_u, best = prob.to_unit(start), first
        for u in pts:
            r = evaluate(list(u))
            if r["objective"] < best["objective"]:
                best_u, best = list(u), r
        method = f"start + {trials} scrambled Sobol points (scipy.stats.qmc, seed 0)"
        if refine > 0 and best["objective"] > 0:
            d = len(prob.names)
            simplex = [list(best_u)]
            for i in range(d):
                v = list(best_u)
                v[i] = v[i] + 0.1 if v[i] + 0.1 <= 1.0 else v[i] - 0.1
                simplex.append(v)
            res = minimize(
                lambda u: evaluate(list(u))["objective"],
                np.array(best_u),
                method="Nelder-Mead",
                bounds=[(0.0, 1.0)] * d,
                options={"maxfev": refine, "xatol": 1e-3, "fatol": 1e-4, "initial_simplex": np.array(simplex)},
            )
            r = evaluate(list(res.x))
            if r["objective"] < best["objective"]:
                best = r
            method += f", then scipy.optimize.minimize (Nelder-Mead, bounds, at most {refine} evaluations)"
    finally:
        close()

    fit = {
        "date": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        "command": "hostsim calibrate "
        + " ".join(shlex.quote(p) for p in prob.paths)
        + (f" --seeds {seeds}" if seeds else "")
        + f" --trials {trials} --refine {refine}"
        + "".join(f" --start {n}={v:g}" for n, v in dict(start_values or {}).items()),
        "hostsim_version": _native.__version__,
        "model_source_id": _native.MODEL_SOURCE_ID,
        "optimizer": method,
        "evaluations": len(cache),
        "scenarios": [inf["name"] for inf in prob.infos],
        "seeds": prob.seeds,
        "objective": best["objective"],
        "objective_start": first["objective"],
        "start": {n: start[n] for n in prob.names if start[n] is not None},
        "bounds": {n: [prob.params[n]["min"], prob.params[n]["max"]] for n in prob.names},
        "claims": [
            {
                "scenario": c["scenario"],
                "claim": c["claim"],
                "verdict": c["verdict"],
                "sim": c.get("sim"),
                "target": c.get("rhs"),
                "loss": c["loss"],
            }
            for c in best["claims"]
        ],
    }
    overlay = {
        "values": {n: (int(best["values"][n]) if prob.params[n]["integer"] else best["values"][n]) for n in prob.names},
        "fit": fit,
        "path": str(prob.overlay_path),
    }
    if write:
        prob.overlay_path.parent.mkdir(parents=True, exist_ok=True)
        prob.overlay_path.write_text(render_overlay(overlay))
        log(f"objective {first['objective']:.4f} -> {best['objective']:.4f}; wrote {prob.overlay_path}")
    return overlay


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else "nan"
    if v is None:
        return '"none"'
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {v!r} as TOML")


def render_overlay(o: dict) -> str:
    """The overlay file: `[values]` (read by the scenario loader) and `[fit]` (the record)."""
    fit = o["fit"]
    lines = [
        f"# Calibration overlay written by `{fit['command']}`",
        "# on " + fit["date"] + ". Do not edit by hand: re-run the command. The scenarios that name this",
        "# overlay (`calibration = ...`) apply [values] to their [[calibrate]] keys when loaded.",
        "",
        "[values]",
    ]
    for n, v in o["values"].items():
        lines.append(f"{n} = {_toml_value(v)}")
    lines += ["", "[fit]"]
    for k in [
        "date",
        "command",
        "hostsim_version",
        "model_source_id",
        "optimizer",
        "evaluations",
        "scenarios",
        "seeds",
        "objective",
        "objective_start",
        "start",
        "bounds",
    ]:
        lines.append(f"{k} = {_toml_value(fit[k])}")
    for c in fit["claims"]:
        lines += ["", "[[fit.claims]]"] + [f"{k} = {_toml_value(v)}" for k, v in c.items()]
    return "\n".join(lines) + "\n"


def stale_module_error() -> str | None:
    """Why this fit would run another model than the `hostsim` CLI that started it, or None.

    `hostsim calibrate` passes its own `MODEL_SOURCE_ID` (a hash of the model's sources, taken when
    it was built) in HOSTSIM_CLI_MODEL_SOURCE_ID; the fit runs through this package's `_native`
    module, which is built separately (scripts/setup.sh) and may be older than the CLI.
    """
    cli = os.environ.get("HOSTSIM_CLI_MODEL_SOURCE_ID")
    if cli is None or cli == _native.MODEL_SOURCE_ID:
        return None
    return (
        f"the Python module hostsim._native was built from other model sources ({_native.MODEL_SOURCE_ID}) "
        f"than this hostsim CLI ({cli}): the fit would calibrate a different model. Rebuild the module "
        f"(`bash scripts/setup.sh`, or `maturin develop --release` in the .venv) and run again"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hostsim.calibration", description=__doc__.split("\n\n")[0])
    ap.add_argument("scenarios", nargs="+", help="scenario files sharing one calibration overlay")
    ap.add_argument("--seeds", type=int, help="seeds per run (default: each scenario's `seeds`)")
    ap.add_argument("--trials", type=int, default=16, help="Sobol points before refining (default 16)")
    ap.add_argument("--refine", type=int, default=24, help="Nelder-Mead evaluations (default 24; 0 = none)")
    ap.add_argument("--jobs", type=int, help="parallel runs (default: CPUs)")
    ap.add_argument("--dask", help="tcp://HOST:PORT of a Dask scheduler, or `local`")
    ap.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an override applied to every run (like hostsim --set)",
    )
    ap.add_argument(
        "--start",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a parameter's starting value (default: its current value)",
    )
    ap.add_argument("--dry-run", action="store_true", help="fit but do not write the overlay; print it")
    a = ap.parse_args(argv)
    stale = stale_module_error()
    if stale:
        print(f"error: {stale}", file=sys.stderr)
        return 2
    sets = []
    for s in a.sets:
        if "=" not in s:
            ap.error(f"--set {s!r}: expected KEY=VALUE")
        k, v = s.split("=", 1)
        sets.append((k.strip(), v.strip()))
    try:
        start = {}
        for s in a.start:
            if "=" not in s:
                ap.error(f"--start {s!r}: expected NAME=VALUE")
            k, v = s.split("=", 1)
            start[k.strip()] = float(v)
        o = calibrate(
            a.scenarios,
            seeds=a.seeds,
            trials=a.trials,
            refine=a.refine,
            jobs=a.jobs,
            dask=a.dask,
            sets=sets,
            start=start,
            write=not a.dry_run,
        )
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if a.dry_run:
        print(render_overlay(o), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
