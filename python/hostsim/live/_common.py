"""What the live analysis tools share: results.csv rows, numbers that may be missing, means, tables
and runs of the model."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path


def checkout() -> Path:
    """The hostsim checkout: the one this package sits in (python/hostsim/live), else the first
    directory above the current one that has `scenarios/` and `Cargo.toml`."""
    for d in [Path(__file__).resolve().parents[3], *Path.cwd().resolve().parents, Path.cwd().resolve()]:
        if (d / "scenarios").is_dir() and (d / "Cargo.toml").is_file():
            return d
    raise SystemExit("not in a hostsim checkout: run from one (its scenarios/ and calibration/ are read)")


def default_hostsim() -> str:
    return os.environ.get("HOSTSIM_BIN") or str(checkout() / "target" / "release" / "hostsim")


def rows(path: str | Path) -> list[dict[str, str]]:
    """A results.csv as its rows (column -> text)."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(row: dict, key: str) -> float:
    """Column `key` as a number; NaN when it is absent, empty or not a number."""
    try:
        return float(row[key])
    except (KeyError, TypeError, ValueError):
        return math.nan


def finite(xs: Iterable[float]) -> list[float]:
    return [x for x in xs if not math.isnan(x)]


def mean(xs: Iterable[float]) -> float:
    """The mean of the numbers that are not NaN (NaN when there is none)."""
    v = finite(xs)
    return sum(v) / len(v) if v else math.nan


def mean_sd(rs: Sequence[dict], key: str) -> tuple[float, float]:
    """Mean and population standard deviation of a column over rows (NaN-free)."""
    v = finite(num(r, key) for r in rs)
    if not v:
        return math.nan, math.nan
    m = sum(v) / len(v)
    return m, math.sqrt(sum((x - m) ** 2 for x in v) / len(v))


def cell(rs: Sequence[dict], key: str, fmt: str, spread: bool = True) -> str:
    """A column's mean over rows, formatted, with `[min-max]` when there are several values."""
    v = finite(num(r, key) for r in rs)
    if not v:
        return "-"
    out = fmt.format(sum(v) / len(v))
    if spread and len(v) > 1:
        out += f" [{fmt.format(min(v))}-{fmt.format(max(v))}]"
    return out


def by_variant_and(live_rows: Sequence[dict], key: str) -> list[tuple[tuple[str, float], list[dict]]]:
    """The rows grouped by (variant, value of column `key`): variants in their order of first
    appearance, values ascending within each."""
    groups: dict[tuple[str, float], list[dict]] = {}
    variants: list[str] = []
    for r in live_rows:
        if r["variant"] not in variants:
            variants.append(r["variant"])
        groups.setdefault((r["variant"], num(r, key)), []).append(r)
    return sorted(groups.items(), key=lambda kv: (variants.index(kv[0][0]), kv[0][1]))


def table(head: Sequence[str], body: Sequence[Sequence[str]], markdown: bool = True, right: bool = False) -> str:
    """A Markdown table, or columns padded to their widest cell."""
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(c) + " |" for c in body]
        return "\n".join(lines)
    w = [max([len(h)] + [len(c[i]) for c in body]) for i, h in enumerate(head)]

    def pad(x: str, i: int) -> str:
        return x.rjust(w[i]) if right else x.ljust(w[i])

    return "\n".join("  ".join(pad(x, i) for i, x in enumerate(c)) for c in [list(head), *body])


def run_model(hostsim: str, scenario: str | Path, variant: str, seed: int, sets: dict[str, object]) -> dict:
    """One `hostsim run` of `scenario`'s `variant` with these `--set`s: its summary.json."""
    with tempfile.TemporaryDirectory() as d:
        args = [hostsim, "run", str(scenario), "--variant", variant, "--seed", str(seed), "--out", d]
        for k, v in sets.items():
            args += ["--set", f"{k}={v}"]
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(args)}: {r.stderr.strip()}")
        return json.loads((Path(d) / "summary.json").read_text())
