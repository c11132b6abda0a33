"""Plots of sweep results with a paper's published values on the same axes (used by the report,
usable in a notebook):

    df = hostsim.sweep("scenarios/ozaki-pbq-throughput.toml")
    hostsim.plot.figure(df, y="bw_rx_pps", x="traffic.floodclients.rate_pps",
                        marks=[{"x": 190000, "label": "crossover"}])

Rows that differ only in other keys (e.g. seeds) are averaged; their min-max spread is drawn.
``at={key: value}`` keeps only the rows at those sweep coordinates. ``kind="histogram"`` draws the
column family ``<y>_h<lo>`` (counts per bin) as bars, one series per value of ``series`` (or per
variant):

    hostsim.plot.figure(df, y="sink_gap_us", kind="histogram", series="process.sender.speed_pct",
                        at={"process.sender.unit_bytes": 1024})
"""

from __future__ import annotations

import re

import math
from typing import Any, Iterable, Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

PAPER_COLOR = "black"


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _at(df: pd.DataFrame, at: Mapping[str, Any] | None) -> pd.DataFrame:
    for k, v in (at or {}).items():
        if k in df:
            df = df[df[k].astype(str) == str(v)] if not isinstance(v, (int, float)) else df[df[k].astype(float) == float(v)]
    return df


def histogram_columns(df: pd.DataFrame, y: str) -> list[tuple[float, str]]:
    """The bins of histogram ``y``: (lower edge, column) for every column ``<y>_h<lo>``, in order."""
    pat = re.compile(re.escape(y) + r"_h(\d+(?:\.\d+)?)$")
    cols = [(float(m.group(1)), c) for c in df.columns if (m := pat.match(str(c)))]
    return sorted(cols)


def figure(df: pd.DataFrame, y: str, x: str | None = None, variants: Iterable[str] | None = None,
           title: str | None = None, marks: Iterable[Mapping[str, Any]] = (), xlabel: str | None = None,
           ylabel: str | None = None, paper: str | None = None, ax=None, kind: str | None = None,
           at: Mapping[str, Any] | None = None, series: str | None = None, log_y: bool = False,
           measured: pd.DataFrame | None = None, measured_label: str | None = None,
           measured_x: str | None = None, **_ignored):
    """Draw metric ``y`` per variant against swept key ``x`` (lines), or one bar per variant when
    ``x`` is None; ``marks`` are the paper's values: ``{x, y}`` a point, ``{x}`` a vertical line,
    ``{y}`` a horizontal line, ``{variant, y}`` a bar's published value. ``measured`` (a frame
    shaped like results.csv, e.g. a live run) is drawn dashed on the same axes, each variant in
    its simulated line's colour, labelled ``measured_label``, against its column ``measured_x``
    (default ``x``). Returns the Figure."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.0, 4.2), dpi=100)
    else:
        fig = ax.figure
    df = _at(df, at)
    allv = list(dict.fromkeys(df["variant"])) if "variant" in df else ["base"]
    vs = [v for v in (list(variants) if variants else allv) if v in allv]
    if kind == "histogram":
        _histogram(ax, df, y, vs, series, list(marks or []))
        if log_y:
            ax.set_yscale("symlog", linthresh=1.0)
        ax.set_xlabel(xlabel or y)
        ax.set_ylabel(ylabel or "count")
        if title:
            ax.set_title(title + (f"\n({paper})" if paper else ""), fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="best")
        fig.tight_layout()
        return fig
    if y not in df:
        ax.text(0.5, 0.5, f"no metric `{y}` in the results", ha="center", va="center", transform=ax.transAxes)
        vs = []
    marks = list(marks or [])
    if x is not None:
        colors = _lines(ax, df, x, y, vs, marks)
        if measured is not None:
            _measured(ax, measured, measured_x or x, x, y, vs, colors, measured_label or "measured")
        ax.set_xlabel(xlabel or x)
    else:
        _bars(ax, df, y, vs, marks)
        ax.set_xlabel(xlabel or "variant")
    ax.set_ylabel(ylabel or y)
    if log_y:
        ax.set_yscale("log")
    if title:
        ax.set_title(title + (f"\n({paper})" if paper else ""), fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def _measured(ax, m, mx, x, y, vs, colors, label):
    """Measured rows averaged per point of the swept key ``x`` (repetitions), drawn at the mean
    of their column ``mx``."""
    if mx not in m or y not in m:
        return
    key = x if x in m else mx
    mv = list(dict.fromkeys(m["variant"])) if "variant" in m else ["base"]
    for v in [v for v in vs if v in mv] or mv:
        d = m[m["variant"] == v] if "variant" in m else m
        g = d.groupby(key, sort=True)
        pts = pd.DataFrame({"x": g[mx].mean(), "mean": g[y].mean(), "lo": g[y].min(), "hi": g[y].max()}).sort_values("x")
        mean = pd.Series(pts["mean"].values, index=pts["x"].values)
        lo, hi = pts["lo"], pts["hi"]
        (line,) = ax.plot(mean.index, mean.values, ls="--", marker="s", ms=4, color=colors.get(v),
                          label=f"{label}: {v}")
        if (g.size() > 1).any():
            ax.fill_between(mean.index, lo.values, hi.values, color=line.get_color(), alpha=0.1, hatch="//")


def _lines(ax, df, x, y, vs, marks):
    colors = {}
    for v in vs:
        d = df[df["variant"] == v] if "variant" in df else df
        g = d.groupby(x, sort=True)[y]
        mean, lo, hi = g.mean(), g.min(), g.max()
        (line,) = ax.plot(mean.index, mean.values, marker="o", ms=4, label=f"simulated: {v}")
        colors[v] = line.get_color()
        if (g.count() > 1).any():
            ax.fill_between(mean.index, lo.values, hi.values, color=line.get_color(), alpha=0.2)
    labelled = False
    for m in marks:
        mx, my, label = _num(m.get("x")), _num(m.get("y")), m.get("label", "")
        tag = "paper: " + label if label else "paper"
        if mx is not None and my is not None:
            ax.plot([mx], [my], marker="*", ms=14, color=PAPER_COLOR, ls="none",
                    label=tag if not labelled or label else None, zorder=5)
            labelled = True
        elif mx is not None:
            ax.axvline(mx, color=PAPER_COLOR, ls="--", lw=1)
            ax.annotate(tag, (mx, 1.0), xycoords=("data", "axes fraction"), rotation=90, va="top",
                        ha="right", fontsize=7)
        elif my is not None:
            ax.axhline(my, color=PAPER_COLOR, ls=":", lw=1.2, label=tag)
    return colors


def _histogram(ax, df, y, vs, series, marks):
    cols = histogram_columns(df, y)
    if not cols:
        ax.text(0.5, 0.5, f"no histogram `{y}_h*` in the results", ha="center", va="center", transform=ax.transAxes)
        return
    edges = [lo for lo, _ in cols]
    width = (edges[1] - edges[0]) if len(edges) > 1 else 1.0
    groups = []
    for v in vs:
        d = df[df["variant"] == v] if "variant" in df else df
        if series and series in d:
            for s in sorted(d[series].unique(), key=lambda z: (str(type(z)), z)):
                groups.append((f"{v}, {series.rsplit('.', 1)[-1]} = {s}" if len(vs) > 1 else f"{series.rsplit('.', 1)[-1]} = {s}",
                               d[d[series] == s]))
        else:
            groups.append((v, d))
    n = max(len(groups), 1)
    for i, (label, d) in enumerate(groups):
        means = [d[c].mean() for _, c in cols]
        xs = [lo + width * (i + 0.5) / n for lo in edges]
        ax.bar(xs, means, width=width / n, label=f"simulated: {label}", alpha=0.85)
    labelled = False
    for m in marks:
        mx, my, label = _num(m.get("x")), _num(m.get("y")), m.get("label", "")
        if mx is not None and my is not None:
            ax.plot([mx + width / 2], [my], marker="*", ms=12, color=PAPER_COLOR, ls="none",
                    label=None if labelled else "paper (published value)", zorder=5)
            if label:
                ax.annotate(label, (mx + width / 2, my), textcoords="offset points", xytext=(4, 4), fontsize=7)
            labelled = True
        elif mx is not None:
            ax.axvline(mx, color=PAPER_COLOR, ls="--", lw=1)
            ax.annotate("paper: " + label if label else "paper", (mx, 1.0), xycoords=("data", "axes fraction"),
                        rotation=90, va="top", ha="right", fontsize=7)


def _bars(ax, df, y, vs, marks):
    pos = range(len(vs))
    for i, v in enumerate(vs):
        d = df[df["variant"] == v][y] if "variant" in df else df[y]
        mean = d.mean()
        ax.bar([i], [mean], width=0.6, label="simulated" if i == 0 else None, color="C0", alpha=0.8)
        if len(d) > 1:
            # The seeds' range around the mean; when they all agree, the float mean can fall a
            # rounding step outside it (ten times 0.1 averages to 0.0999...), and matplotlib
            # refuses a negative error.
            lo, hi = max(mean - d.min(), 0.0), max(d.max() - mean, 0.0)
            ax.errorbar([i], [mean], yerr=[[lo], [hi]], color="C0", capsize=4)
        if _num(mean) is not None:
            ax.annotate(f"{mean:.4g}", (i, mean), textcoords="offset points", xytext=(-14, 3), fontsize=8, color="C0")
    ax.set_xticks(list(pos), vs)
    labelled = False
    for m in marks:
        my, label = _num(m.get("y")), m.get("label", "")
        if my is None:
            continue
        if m.get("variant") in vs:
            i = vs.index(m["variant"])
            ax.plot([i - 0.35, i + 0.35], [my, my], color=PAPER_COLOR, lw=2.5,
                    label=None if labelled else "paper (published value)", zorder=5)
            ax.annotate(label or f"{my:g}", (i + 0.36, my), fontsize=8, va="center")
            labelled = True
        elif m.get("variant") is None:
            ax.axhline(my, color=PAPER_COLOR, ls=":", lw=1.2, label="paper: " + (label or f"{my:g}"))
