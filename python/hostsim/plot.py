"""Plots of sweep results with a paper's published values on the same axes (used by the report,
usable in a notebook):

    df = hostsim.sweep("scenarios/ozaki-pbq-throughput.toml")
    hostsim.plot.figure(df, y="bw_rx_pps", x="traffic.floodclients.rate_pps",
                        marks=[{"x": 190000, "label": "crossover"}])

Rows that differ only in other keys (e.g. seeds) are averaged; the band around a line is the
range of those rows (min to max over the seeds), and the legend says so. ``at={key: value}``
keeps only the rows at those sweep coordinates. ``kind="histogram"`` draws the column family
``<y>_h<lo>`` (counts per bin) as bars, one series per value of ``series`` (or per variant):

    hostsim.plot.figure(df, y="sink_gap_us", kind="histogram", series="process.sender.speed_pct",
                        at={"process.sender.unit_bytes": 1024})

What a figure does so that it cannot mislead (the report's tests check each on the rendered SVG):
- a linear vertical axis of values that are never negative starts at 0 (a collapse or a ratio is
  seen at its true size);
- every mark (the paper's values) has an entry in the legend, which sits below the axes, so no
  label is drawn over the data or over another label;
- a point whose metric is undefined on any seed (NaN: e.g. no long gap to measure) is a gap in
  its line, not a zero, and the legend says what a gap means;
- a series identical to one drawn before it is drawn dashed with hollow markers and labelled
  "same as ...", so that both show.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Iterable, Mapping
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

PAPER_COLOR = "black"
# The paper's marks: vertical lines and points are told apart by dash and marker, all in black.
_VLINE_STYLES = ["--", "-.", ":", (0, (5, 1, 1, 1, 1, 1))]
_HLINE_STYLES = [":", (0, (1, 3)), (0, (8, 2)), "-."]
_POINT_MARKERS = ["*", "D", "^", "s", "v", "P"]
LEGEND_FONTSIZE = 7.5


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _at(df: pd.DataFrame, at: Mapping[str, Any] | None) -> pd.DataFrame:
    for k, v in (at or {}).items():
        if k in df:
            df = (
                df[df[k].astype(str) == str(v)]
                if not isinstance(v, (int, float))
                else df[df[k].astype(float) == float(v)]
            )
    return df


def histogram_columns(df: pd.DataFrame, y: str) -> list[tuple[float, str]]:
    """The bins of histogram ``y``: (lower edge, column) for every column ``<y>_h<lo>``, in order."""
    pat = re.compile(re.escape(y) + r"_h(\d+(?:\.\d+)?)$")
    cols = [(float(m.group(1)), c) for c in df.columns if (m := pat.match(str(c)))]
    return sorted(cols)


def defined_mean(s: pd.Series) -> float:
    """The mean over the rows (seeds) if the value is defined on every one of them, else NaN: a
    mean over the seeds that happen to have a value would stand for a population it is not."""
    return float(s.mean()) if len(s) and s.notna().all() else float("nan")


def figure(
    df: pd.DataFrame,
    y: str,
    x: str | None = None,
    variants: Iterable[str] | None = None,
    title: str | None = None,
    marks: Iterable[Mapping[str, Any]] = (),
    xlabel: str | None = None,
    ylabel: str | None = None,
    paper: str | None = None,
    ax=None,
    kind: str | None = None,
    at: Mapping[str, Any] | None = None,
    series: str | None = None,
    log_y: bool = False,
    measured: pd.DataFrame | None = None,
    measured_label: str | None = None,
    measured_x: str | None = None,
    measured_y: str | None = None,
    thumbnail: bool = False,
    **_ignored,
):
    """Draw metric ``y`` per variant against swept key ``x`` (lines), or one bar per variant when
    ``x`` is None; ``marks`` are the paper's values: ``{x, y}`` a point, ``{x}`` a vertical line,
    ``{y}`` a horizontal line, ``{variant, y}`` a bar's published value. ``measured`` (a frame
    shaped like results.csv, e.g. a live run) is drawn dashed on the same axes, each variant in
    its simulated line's colour, labelled ``measured_label``, its column ``measured_y`` (default
    ``y``) against its column ``measured_x`` (default ``x``). ``thumbnail`` draws the same data small and without any text (the report's
    summary). Returns the Figure; save it with ``bbox_inches="tight"`` (the legend is below the
    axes)."""
    if ax is None:
        size = (1.7, 0.75) if thumbnail else (7.0, 4.2)
        fig, ax = plt.subplots(figsize=size, dpi=100)
    else:
        fig = ax.figure
    df = _at(df, at)
    allv = list(dict.fromkeys(df["variant"])) if "variant" in df else ["base"]
    vs = [v for v in (list(variants) if variants else allv) if v in allv]
    marks = list(marks or [])
    notes: list[Any] = []  # legend entries that explain the drawing (bands, gaps)
    values: list[float] = []  # everything plotted, to decide where the axis starts
    if kind == "histogram":
        values += _histogram(
            ax,
            df,
            y,
            vs,
            series,
            marks,
            thumbnail,
            _at(measured, at) if measured is not None else None,
            measured_label or "measured",
        )
        if log_y:
            ax.set_yscale("symlog", linthresh=1.0)
        xlabel_default, ylabel_default = y, "count"
    elif y not in df:
        ax.text(0.5, 0.5, f"no metric `{y}` in the results", ha="center", va="center", transform=ax.transAxes)
        xlabel_default, ylabel_default = x or "variant", y
    elif x is not None:
        colors, v1, n1 = _lines(ax, df, x, y, vs, notes)
        values += v1
        if measured is not None:
            values += _measured(
                ax,
                _at(measured, at),
                measured_x or x,
                x,
                measured_y or y,
                vs,
                colors,
                measured_label or "measured",
                notes,
            )
        values += _marks(ax, [_resolve_ratio(m, df, x, y) for m in marks])
        xlabel_default, ylabel_default = x, y
    else:
        values += _bars(ax, df, y, vs, marks, notes, thumbnail)
        xlabel_default, ylabel_default = "variant", y
    if log_y and kind != "histogram":
        ax.set_yscale("log")
    _y_from_zero(ax, values, log_y)
    if thumbnail:
        ax.set_xticks([])
        ax.set_yticks([])
        for s in ("top", "right"):
            ax.spines[s].set_visible(False)
        fig.subplots_adjust(left=0.02, right=0.98, bottom=0.04, top=0.96)
        return fig
    ax.set_xlabel(xlabel or xlabel_default)
    ax.set_ylabel(ylabel or ylabel_default)
    if title:
        ax.set_title("\n".join(textwrap.wrap(title, 70) + ([f"({paper})"] if paper else [])), fontsize=9.5)
    ax.grid(True, alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    for n in notes:
        handles.append(n)
        labels.append(n.get_label())
    fig.tight_layout()
    _unclash_ticks(fig, ax)
    if handles:
        # Below everything the x axis draws (tick labels, its label), so that it covers nothing.
        fig.canvas.draw()
        below = ax.xaxis.get_tightbbox(fig.canvas.get_renderer())
        y0 = ax.transAxes.inverted().transform((0, below.y0))[1] if below is not None else -0.2
        ncol = 2 if len(handles) > 3 and max(len(t) for t in labels) <= 48 else 1
        ax.legend(
            handles,
            labels,
            fontsize=LEGEND_FONTSIZE,
            loc="upper center",
            bbox_to_anchor=(0.5, y0 - 0.02),
            ncol=ncol,
            frameon=False,
        )
    return fig


def _y_from_zero(ax, values: list[float], log_y: bool) -> None:
    """A linear axis of values that are never negative starts at 0."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if log_y or not finite or min(finite) < 0:
        return
    top = ax.get_ylim()[1]
    if top <= 0:
        top = 1.0
    ax.set_ylim(0, top)


def _unclash_ticks(fig, ax) -> None:
    """Tilt the x tick labels if any two of them overlap as drawn (long variant names, long
    numbers): first by 30 degrees, and upright if the tilted boxes still overlap (many long
    names side by side: a tilted label's box reaches under its neighbour's)."""

    def clash() -> bool:
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        boxes = [t.get_window_extent(r) for t in ax.get_xticklabels() if t.get_text() and t.get_visible()]
        return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])

    for angle in (30, 90):
        if not clash():
            return
        for t in ax.get_xticklabels():
            t.set_rotation(angle)
            t.set_horizontalalignment("right" if angle < 90 else "center")
        fig.tight_layout()


def _band_note(n: int) -> Patch:
    return Patch(facecolor="grey", alpha=0.25, label=f"band: range over the {n} seeds (min to max)")


def _gap_note() -> Line2D:
    return Line2D(
        [], [], color="grey", ls="none", marker="", label="gap in a line: undefined on a seed (no value to average)"
    )


def _same_as(mean: pd.Series, drawn: list[tuple[str, pd.Series]]) -> str | None:
    for name, other in drawn:
        if list(other.index) == list(mean.index) and np.allclose(
            other.values, mean.values, rtol=1e-9, atol=0.0, equal_nan=True
        ):
            return name
    return None


def _lines(ax, df, x, y, vs, notes):
    colors, values, drawn = {}, [], []
    seeds_max, gaps = 1, False
    for v in vs:
        d = df[df["variant"] == v] if "variant" in df else df
        g = d.groupby(x, sort=True)[y]
        mean, lo, hi = g.apply(defined_mean), g.min(), g.max()
        gaps |= bool(mean.isna().any() and g.count().gt(0).any())
        twin = _same_as(mean, drawn)
        style = dict(marker="o", ms=4)
        label = f"simulated: {v}"
        if twin is not None:
            # Drawn over its twin: dashed with hollow, larger markers, so that both show.
            style = dict(marker="o", ms=7, mfc="none", ls="--")
            label += f" (same as {twin})"
        (line,) = ax.plot(mean.index, mean.values, label=label, **style)
        colors[v] = line.get_color()
        drawn.append((v, mean))
        values += [float(z) for z in mean.values]
        n = int(g.count().max()) if len(g.count()) else 1
        if n > 1:
            seeds_max = max(seeds_max, n)
            ok = mean.notna()
            ax.fill_between(mean.index[ok], lo.values[ok], hi.values[ok], color=line.get_color(), alpha=0.2)
            values += [float(z) for z in lo.values[ok]]
    if seeds_max > 1:
        notes.append(_band_note(seeds_max))
    if gaps:
        notes.append(_gap_note())
    return colors, values, seeds_max


def measured_series(m: pd.DataFrame, vs: Iterable[str]) -> list[tuple[str, str, str | None, pd.DataFrame]]:
    """The measured rows to draw beside each simulated variant: (simulated variant, measured
    variant, placement, rows). A measured frame with several placements of the receive work
    (`placement`, hostsim live ozaki-pbq) is split by placement, never averaged across them; a
    simulated variant named ``<placement>-<variant>`` (a model twin with one variant per
    placement) takes that placement's rows of that variant, any other simulated variant the rows
    of its own name in every placement. Without a simulated variant in the measured frame, every
    measured variant is drawn (in no simulated line's colour)."""
    mv = list(dict.fromkeys(m["variant"])) if "variant" in m else ["base"]
    places = [str(p) for p in dict.fromkeys(m["placement"])] if "placement" in m else [None]
    pairs: list[tuple[str, str, str | None]] = []
    for v in vs:
        split = next(((p, v[len(p) + 1 :]) for p in places if p is not None and v.startswith(p + "-")), None)
        if split is not None and split[1] in mv:
            pairs.append((v, split[1], split[0]))
        elif v in mv:
            pairs += [(v, v, p) for p in places]
    if not pairs:
        pairs = [(w, w, p) for w in mv for p in places]
    out = []
    for v, w, p in pairs:
        d = m[m["variant"] == w] if "variant" in m else m
        d = d[d["placement"].astype(str) == p] if p is not None else d
        if not d.empty:
            out.append((v, w, p, d))
    return out


def valid_rows(d: pd.DataFrame) -> pd.DataFrame:
    """The rows of a measured frame that offered what they claim: a live run marks a point
    ``valid`` = 0 when its generator fell below its rate (hostsim live ozaki-pbq, takeuchi-symbiose),
    and such a point is never averaged in. A frame without the column is valid throughout."""
    return d[d["valid"].astype(float) != 0] if "valid" in d else d


def _measured(ax, m, mx, x, y, vs, colors, label, notes):
    """Valid measured rows averaged per point of the swept key ``x`` (repetitions), drawn at
    the mean of their column ``mx``; invalid ones are left out, and a note says how many."""
    if mx not in m or y not in m:
        return []
    key = x if x in m else mx
    places = list(dict.fromkeys(m["placement"].astype(str))) if "placement" in m else [None]
    values, reps, invalid = [], 1, 0
    for v, w, p, d in measured_series(m, vs):
        i = places.index(p) if p is not None else 0
        ok = valid_rows(d)
        invalid += len(d) - len(ok)
        if ok.empty:
            continue
        g = ok.groupby(key, sort=True)
        pts = pd.DataFrame({"x": g[mx].mean(), "mean": g[y].mean(), "lo": g[y].min(), "hi": g[y].max()}).sort_values(
            "x"
        )
        (line,) = ax.plot(
            pts["x"].values,
            pts["mean"].values,
            ls="--",
            marker="sov^"[i % 4],
            ms=4,
            color=colors.get(v),
            label=f"{label}: {w}" + (f" ({p})" if p is not None else ""),
        )
        values += [float(z) for z in pts["lo"].values]
        if (g.size() > 1).any():
            reps = max(reps, int(g.size().max()))
            ax.fill_between(
                pts["x"].values, pts["lo"].values, pts["hi"].values, color=line.get_color(), alpha=0.1, hatch="//"
            )
    if reps > 1:
        notes.append(
            Patch(
                facecolor="white", edgecolor="grey", hatch="//", label=f"hatched: {label} range over {reps} repetitions"
            )
        )
    if invalid:
        notes.append(
            Patch(
                facecolor="white",
                edgecolor="white",
                label=f"{invalid} invalid {label} repetitions left out (generator below its rate)",
            )
        )
    return values


def measured_vs_model(
    df: pd.DataFrame,
    m: pd.DataFrame,
    x: str,
    mx: str | None,
    ys: Iterable[str | tuple[str, str]],
    variants: Iterable[str] | None = None,
) -> pd.DataFrame:
    """Each measured point beside the model's prediction for it: one row per (simulated
    variant, measured variant, placement, measured point of ``x``), with the measured rows'
    mean of ``mx`` (where the live generator got to; default ``x``) and, for each metric of
    ``ys``, the measured mean (``<y>``) and the model's (``<y>_model``): the simulated
    variant's mean curve over ``x`` (seeds averaged) read at the measured ``mx`` by linear
    interpolation between its swept points, NaN outside them (never extrapolated).
    ``reps`` counts the measured rows averaged, ``invalid`` those left out (``valid`` = 0: the
    generator fell below its rate; a point with none valid has NaN values). An item of ``ys`` may be a pair (the model's
    metric, the measured column that stands for it: a figure's ``measured_y``); the row names
    both values after the model's metric."""
    mx = mx or x
    pairs = [(y, y) if isinstance(y, str) else (y[0], y[1]) for y in ys]
    pairs = [(y, my) for y, my in pairs if my in m and y in df]
    allv = list(dict.fromkeys(df["variant"])) if "variant" in df else ["base"]
    vs = [v for v in (list(variants) if variants else allv) if v in allv]
    key = x if x in m else mx
    rows = []
    for v, w, p, d in measured_series(m, vs):
        sim = df[df["variant"] == v] if "variant" in df else df
        curves = {y: sim.groupby(x, sort=True)[y].mean() for y, _ in pairs}
        for k, g_all in d.groupby(key, sort=True):
            g = valid_rows(g_all)
            at = float(g[mx].mean()) if len(g) else float("nan")
            row = {
                "variant": v,
                "measured_variant": w,
                "placement": p,
                x if key == x else mx: k,
                "measured_x": at,
                "reps": len(g),
                "invalid": len(g_all) - len(g),
            }
            for y, my in pairs:
                c = curves[y].dropna()
                xs = c.index.astype(float).values
                inside = len(xs) > 0 and xs.min() <= at <= xs.max()
                row[y] = float(g[my].mean()) if len(g) else float("nan")
                row[y + "_model"] = float(np.interp(at, xs, c.values)) if inside else float("nan")
            rows.append(row)
    return pd.DataFrame(rows)


def _resolve_ratio(m: Mapping[str, Any], df: pd.DataFrame, x: str, y: str) -> Mapping[str, Any]:
    """A mark given as a ratio to another variant (`ratio`, `of`) as the point (or, without `x`,
    the line) it stands for on these axes: the ratio times that variant's simulated mean at `x`
    (or its maximum)."""
    r, of = _num(m.get("ratio")), m.get("of")
    if r is None or of is None or y not in df:
        return m
    d = df[df["variant"] == of] if "variant" in df else df
    mx = _num(m.get("x"))
    if mx is None:
        base = d.groupby(x)[y].mean().max() if len(d) else float("nan")
        return {"y": r * base, "label": m.get("label", "")}
    at = d[d[x].astype(float) == mx][y]
    return {"x": mx, "y": r * float(at.mean()) if len(at) else float("nan"), "label": m.get("label", "")}


def _marks(ax, marks) -> list[float]:
    """The paper's values, each with its own legend entry; none is written on the axes."""
    values = []
    nv = nh = npt = 0
    last_v = None
    for m in marks:
        mx, my, label = _num(m.get("x")), _num(m.get("y")), m.get("label", "")
        tag = "paper: " + label if label else "paper"
        if mx is not None and my is not None:
            # A point without a label is another point of the labelled one before it.
            k = npt if label or npt == 0 else npt - 1
            ax.plot(
                [mx],
                [my],
                marker=_POINT_MARKERS[k % len(_POINT_MARKERS)],
                ms=11 if k == 0 else 7,
                color=PAPER_COLOR,
                ls="none",
                label=tag if label or npt == 0 else None,
                zorder=5,
            )
            npt = k + 1
            values.append(my)
        elif mx is not None:
            # A mark without a label is the far edge of the labelled one before it (a range).
            style = _VLINE_STYLES[nv % len(_VLINE_STYLES)] if label or last_v is None else last_v
            ax.axvline(mx, color=PAPER_COLOR, ls=style, lw=1, label=tag if label else None)
            if label or last_v is None:
                nv += 1
            last_v = style
        elif my is not None:
            ax.axhline(my, color=PAPER_COLOR, ls=_HLINE_STYLES[nh % len(_HLINE_STYLES)], lw=1.2, label=tag)
            nh += 1
            values.append(my)
    return values


def _histogram(ax, df, y, vs, series, marks, thumbnail, measured=None, measured_label="measured") -> list[float]:
    """Bars of the simulated histogram ``y`` per variant (and per value of ``series``); with
    ``measured`` (rows shaped like results.csv, already restricted to the figure's ``at``), the
    same groups' measured means per bin drawn over their bars as dashed lines with hollow markers,
    in the bars' colours: live and model on the same axes."""
    cols = histogram_columns(df, y)
    if not cols:
        ax.text(0.5, 0.5, f"no histogram `{y}_h*` in the results", ha="center", va="center", transform=ax.transAxes)
        return []
    edges = [lo for lo, _ in cols]
    width = (edges[1] - edges[0]) if len(edges) > 1 else 1.0
    groups = []
    for v in vs:
        d = df[df["variant"] == v] if "variant" in df else df
        if series and series in d:
            for s in sorted(d[series].unique(), key=lambda z: (str(type(z)), z)):
                groups.append(
                    (
                        f"{v}, {series.rsplit('.', 1)[-1]} = {s}"
                        if len(vs) > 1
                        else f"{series.rsplit('.', 1)[-1]} = {s}",
                        d[d[series] == s],
                    )
                )
        else:
            groups.append((v, d))
    n = max(len(groups), 1)
    values = []
    for i, (label, d) in enumerate(groups):
        means = [d[c].mean() for _, c in cols]
        xs = [lo + width * (i + 0.5) / n for lo in edges]
        bars = ax.bar(xs, means, width=width / n, label=f"simulated: {label} (mean over {len(d)} runs)", alpha=0.85)
        values += [float(z) for z in means]
        if measured is not None:
            values += _histogram_measured(
                ax,
                measured,
                d,
                cols,
                xs,
                series,
                label,
                bars.patches[0].get_facecolor() if bars.patches else None,
                measured_label,
            )
    # The paper's counts: one legend entry per group of marks (the label's part before ':'),
    # which lists the group's values and their bins, so that no number is written on the axes.
    points: dict[str, list[tuple[float, float]]] = {}
    for m in marks:
        mx, my, label = _num(m.get("x")), _num(m.get("y")), m.get("label", "")
        if mx is not None and my is not None:
            points.setdefault(label.split(":")[0].strip() if label else "", []).append((mx, my))
    for k, (group, pts) in enumerate(points.items()):
        listed = ", ".join(f"{y:g} at {x:g}" for x, y in pts)
        ax.plot(
            [x + width / 2 for x, _ in pts],
            [y for _, y in pts],
            marker=_POINT_MARKERS[k % len(_POINT_MARKERS)],
            ms=9,
            color=PAPER_COLOR,
            ls="none",
            zorder=5,
            label=f"paper: {group}: {listed}" if group else f"paper: {listed}",
        )
        values += [y for _, y in pts]
    last_v = None
    nv = 0
    for m in marks:
        mx, my, label = _num(m.get("x")), _num(m.get("y")), m.get("label", "")
        if mx is not None and my is not None:
            continue
        elif mx is not None:
            style = _VLINE_STYLES[nv % len(_VLINE_STYLES)] if label or last_v is None else last_v
            ax.axvline(mx, color=PAPER_COLOR, ls=style, lw=1, label=("paper: " + label) if label else None)
            if label or last_v is None:
                nv += 1
            last_v = style
    return values


def _histogram_measured(ax, m, d, cols, xs, series, label, color, measured_label) -> list[float]:
    """The measured rows of the simulated group ``d`` (same variant and ``series`` value), their
    mean per bin at the group's bar positions ``xs``."""
    if "variant" in m and "variant" in d and len(d):
        m = m[m["variant"].astype(str) == str(d["variant"].iloc[0])]
    if series and series in m and series in d and len(d):
        m = m[m[series].astype(float) == float(d[series].iloc[0])]
    if m.empty or any(c not in m for _, c in cols):
        return []
    means = [float(m[c].mean()) for _, c in cols]
    ax.plot(
        xs,
        means,
        ls="--",
        lw=0.9,
        marker="o",
        ms=4,
        mfc="white",
        color=color,
        zorder=4,
        label=f"{measured_label}: {label} (mean over {len(m)} runs)",
    )
    return means


def _bars(ax, df, y, vs, marks, notes, thumbnail) -> list[float]:
    pos = range(len(vs))
    values, seeds_max, undefined = [], 1, False
    labels: list[tuple[int, float]] = []  # (bar, mean) to print once the scale is known
    for i, v in enumerate(vs):
        d = df[df["variant"] == v][y] if "variant" in df else df[y]
        mean = defined_mean(d)
        if math.isnan(mean):
            undefined = True
            if not thumbnail:
                ax.annotate(
                    "undefined",
                    (i, 0),
                    textcoords="offset points",
                    xytext=(0, 3),
                    ha="center",
                    fontsize=7,
                    color="grey",
                )
            continue
        ax.bar([i], [mean], width=0.6, label="simulated (mean over seeds)" if i == 0 else None, color="C0", alpha=0.8)
        values.append(mean)
        if len(d) > 1:
            seeds_max = max(seeds_max, len(d))
            # The seeds' range around the mean; when they all agree, the float mean can fall a
            # rounding step outside it (ten times 0.1 averages to 0.0999...), and matplotlib
            # refuses a negative error.
            lo, hi = max(mean - d.min(), 0.0), max(d.max() - mean, 0.0)
            ax.errorbar([i], [mean], yerr=[[lo], [hi]], color="C0", capsize=4)
        if not thumbnail:
            labels.append((i, mean))
    ax.set_xticks(list(pos), vs)
    if seeds_max > 1:
        notes.append(
            Line2D(
                [],
                [],
                color="C0",
                marker="_",
                ms=10,
                ls="-",
                label=f"error bar: range over the {seeds_max} seeds (min to max)",
            )
        )
    if undefined:
        notes.append(_gap_note())
    labelled: set[str] = set()
    nh = 0
    for m in marks:
        my, label = _num(m.get("y")), m.get("label", "")
        if my is None:
            continue
        if m.get("variant") in vs:
            i = vs.index(m["variant"])
            tag = f"paper: {label}" if label else "paper (published value)"
            ax.plot(
                [i - 0.35, i + 0.35],
                [my, my],
                color=PAPER_COLOR,
                lw=2.5,
                label=None if tag in labelled else tag,
                zorder=5,
            )
            labelled.add(tag)
            values.append(my)
        elif m.get("variant") is None:
            ax.axhline(
                my,
                color=PAPER_COLOR,
                ls=_HLINE_STYLES[nh % len(_HLINE_STYLES)],
                lw=1.2,
                label="paper: " + (label or f"{my:g}"),
            )
            nh += 1
            values.append(my)
    top = max([v for v in values if math.isfinite(v)] or [1.0])
    for i, mean in labels:
        if mean >= 0.15 * top:
            # Inside a tall bar, where no paper mark or error bar is drawn.
            ax.annotate(
                f"{mean:.4g}", (i, mean / 2), ha="center", va="center", fontsize=8, color="white", fontweight="bold"
            )
        else:
            # A short bar: beside it, clear of the axis and of the tick label below.
            ax.annotate(
                f"{mean:.4g}",
                (i, mean),
                textcoords="offset points",
                xytext=(22, 4),
                ha="left",
                va="bottom",
                fontsize=8,
                color="C0",
            )
    return values
