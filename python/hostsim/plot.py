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

One visual grammar, the same in every figure (the report's tests check each rule on the drawn
figures):
- the paper's values are black: its points are black markers, a value it gives as a threshold or
  a level a thin black line;
- the model is solid lines with filled markers, the range over its seeds a light band;
- live measurements (``measured``) are dashed lines with open markers, in the colour of the model
  variant they are measured beside, the range over their repetitions a hatched band;
- a variant has one colour in every figure of an experiment (``colors``: variant -> colour;
  the report gives each experiment's variants theirs);
- at most ``max_series`` (6) lines per panel: more are split into small multiples on shared axes;
- where the paper and the model differ by more than ``GAP_LOG`` (5x) on the value axis, that
  axis is logarithmic, so that neither is a sliver;
- a quantity the model does not simulate (``not_modelled``: why) is drawn as absent, hatched and
  labelled, never as 0;
- axis labels say what is drawn in words with units (metrics.py's table), unless the figure
  names its own;
- a linear vertical axis of values that are never negative starts at 0;
- every mark has an entry in the legend, which sits below the axes, so no label is drawn over
  the data or over another label; no value is written inside a bar (it could not fit);
- a point whose metric is undefined on any seed (NaN) is a gap in its line, not a zero, and the
  legend says what a gap means;
- a model series identical to one drawn before it is drawn over it with another marker and
  labelled "same as ...", so that both show.

The Figure returned carries ``fig.hostsim``, a `Drawn` record of what was drawn (series, marks,
bands, scale and why), from which `caption` writes the figure's caption and the report the CSV
of the drawn values.
"""

from __future__ import annotations

import math
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

from . import metrics  # noqa: E402
from ._series import (  # noqa: E402, F401 (measured_series, measured_vs_model, valid_rows: the public API)
    _absent,
    _bars,
    _histogram,
    _lines,
    _marks,
    _measured,
    _resolve_ratio,
    measured_series,
    measured_vs_model,
    valid_rows,
)
from ._style import (  # noqa: E402, F401 (the names a notebook uses)
    FONT,
    GAP_LOG,
    LEGEND_FONTSIZE,
    MAX_SERIES,
    PALETTE,
    PAPER_COLOR,
    Drawn,
    _at,
    _ticks,
    defined_mean,
    fmt_num,
    histogram_columns,
    variant_colors,
)


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
    colors: Mapping[str, str] | None = None,
    not_modelled: str | None = None,
    max_series: int = MAX_SERIES,
    **_ignored,
):
    """Draw metric ``y`` per variant against swept key ``x`` (lines), or one bar per variant when
    ``x`` is None; ``marks`` are the paper's values: ``{x, y}`` a point, ``{x}`` a vertical line,
    ``{y}`` a horizontal line, ``{variant, y}`` a bar's published value. ``measured`` (a frame
    shaped like results.csv, e.g. a live run) is drawn dashed on the same axes, each variant in
    its model line's colour, labelled ``measured_label``, its column ``measured_y`` (default
    ``y``) against its column ``measured_x`` (default ``x``). ``colors`` fixes variants'
    colours; ``not_modelled`` says why the model has no value of ``y`` (drawn as absent).
    ``thumbnail`` draws the same data small and without any text (the report's summary).
    Returns the Figure (with ``fig.hostsim``, the `Drawn` record); save it with
    ``bbox_inches="tight"`` (the legend is below the axes)."""
    df_all = df
    df = _at(df, at)
    allv = list(dict.fromkeys(df["variant"])) if "variant" in df else ["base"]
    vs = [v for v in (list(variants) if variants else allv) if v in allv]
    all_variants = list(dict.fromkeys(df_all["variant"])) if "variant" in df_all else ["base"]
    cmap = variant_colors(all_variants, colors)
    marks = [_resolve_ratio(m, df, x, y) if x is not None else m for m in (marks or [])]
    meas = _at(measured, at) if measured is not None else None
    kind = "histogram" if kind == "histogram" else ("line" if x is not None else "bar")
    d = Drawn(kind=kind, x=x, y=y, live_label=measured_label or "measured", not_modelled=not_modelled)
    groups = [vs]
    if kind == "line" and ax is None and not thumbnail and not_modelled is None:
        groups = _panels(vs, meas, max_series)
    d.panels = len(groups)
    if ax is None:
        fig, axes = _canvas(len(groups), thumbnail)
    else:
        fig, axes = ax.figure, [ax]
    notes: list[Any] = []
    values: list[float] = []
    for i, (axp, g) in enumerate(zip(axes, groups, strict=False)):
        # The paper's marks go on every panel, but count once.
        pd_ = d if i == 0 else Drawn(ids=d.ids)
        if kind == "histogram":
            values += _histogram(axp, df, y, g, series, marks, thumbnail, meas, d, df_all, cmap)
        elif y not in df:
            axp.text(0.5, 0.5, f"no metric `{y}` in the results", ha="center", va="center", transform=axp.transAxes)
        elif kind == "line":
            if not_modelled is None:
                values += _lines(axp, df, x, y, g, cmap, d)
                if meas is not None:
                    values += _measured(axp, meas, measured_x or x, x, measured_y or y, g, cmap, d)
            else:
                _absent(axp, d)
            values += _marks(axp, marks, pd_)
        else:
            values += _bars(axp, df, y, g, marks, thumbnail, cmap, d)
    if len(groups) > 1:
        for axp, g in zip(axes, groups, strict=False):
            axp.set_title(", ".join(g), fontsize=FONT["legend"], loc="left")
    _notes(d, notes)
    d.gap = paper_model_gap(axes)
    _scale(axes, values, log_y, d, kind)
    xl = xlabel or (metrics.label(x) if x else ("variant" if kind == "bar" else metrics.label(y)))
    yl = ylabel or (metrics.label(y) if kind != "histogram" else "count")
    d.xlabel, d.ylabel = metrics.units(xl), metrics.units(yl)
    fig.hostsim = d
    for axp in axes:
        for axis, lim in ((axp.xaxis, axp.get_xlim()), (axp.yaxis, axp.get_ylim())):
            if axis.get_scale() == "linear" and not (axis is axp.xaxis and kind == "bar"):
                axis.set_major_formatter(_ticks(max(abs(lim[0]), abs(lim[1]))))
    if thumbnail:
        for axp in axes:
            axp.set_xticks([])
            axp.set_yticks([], minor=False)
            axp.set_yticks([], minor=True)
            for s in ("top", "right"):
                axp.spines[s].set_visible(False)
        fig.subplots_adjust(left=0.02, right=0.98, bottom=0.04, top=0.96)
        return fig
    cols = min(len(axes), 3)
    for i, axp in enumerate(axes):
        if i % cols == 0:
            axp.set_ylabel("\n".join(textwrap.wrap(d.ylabel, 46 if len(axes) == 1 else 40)))
        if i >= len(axes) - cols:
            axp.set_xlabel("\n".join(textwrap.wrap(d.xlabel, 80 if len(axes) == 1 else 52)))
        axp.grid(True, alpha=0.3)
    if title:
        head = textwrap.wrap(metrics.units(title), 80 if len(axes) == 1 else 150) + (
            [f"({metrics.units(paper)})"] if paper else []
        )
        fig.suptitle("\n".join(head), fontsize=FONT["title"])
    if kind == "bar":
        _unclash_ticks(fig, axes[0])
    _legend(fig, axes, notes, d, cmap)
    return fig


def _canvas(n: int, thumbnail: bool):
    if thumbnail:
        fig, ax = plt.subplots(figsize=(1.7, 0.75), dpi=100)
        return fig, [ax]
    if n == 1:
        fig, ax = plt.subplots(figsize=(6.3, 3.3), dpi=100, layout="constrained")
        return fig, [ax]
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axs = plt.subplots(
        rows, cols, figsize=(4.3 * cols, 3.0 * rows + 0.3), dpi=100, sharex=True, sharey=True, layout="constrained"
    )
    axes = list(np.ravel(axs))
    for extra in axes[n:]:
        extra.set_visible(False)
    return fig, axes[:n]


def _panels(vs: list[str], meas: pd.DataFrame | None, max_series: int) -> list[list[str]]:
    """The variants split into panels of at most `max_series` lines each (a variant's model line
    and its live lines stay together), as evenly as the order allows."""
    live = {v: 0 for v in vs}
    if meas is not None:
        for v, _w, _p, _d in measured_series(meas, vs):
            if v in live:
                live[v] += 1
    sizes = [1 + live[v] for v in vs]
    total = sum(sizes)
    if total <= max_series:
        return [vs]
    n = math.ceil(total / max_series)
    target = math.ceil(total / n)
    out: list[list[str]] = [[]]
    used = 0
    for v, s in zip(vs, sizes, strict=True):
        if out[-1] and (used + s > max_series or used >= target):
            out.append([])
            used = 0
        out[-1].append(v)
        used += s
    return out


def _legend_entries(axes, notes, d: Drawn, cmap) -> tuple[list, list[str]]:
    """The legend's entries, in the order a reader needs them: the model (per variant, or once for
    bars), the live measurements' style, the paper's values, then what the bands and gaps mean.
    With live series, a variant's colour is given once and the two styles once (model solid,
    live dashed with open markers), instead of every series twice."""
    drawn: list[tuple[Any, str]] = []
    for axp in axes:
        for h, lab in zip(*axp.get_legend_handles_labels(), strict=True):
            if lab not in [x for _, x in drawn]:
                drawn.append((h, lab))
    model = [(h, lab) for h, lab in drawn if lab.startswith("model")]
    live = [(h, lab) for h, lab in drawn if lab.startswith(d.live_label + ":")]
    paper = [(h, lab) for h, lab in drawn if lab.startswith("paper")]
    other = [(h, lab) for h, lab in drawn if (h, lab) not in model + live + paper]
    out: list[tuple[Any, str]] = []
    if d.kind == "bar" and model and d.not_modelled is None:
        out.append((Patch(facecolor="#999999", alpha=0.85), "model: mean over its seeds (one bar per variant)"))
        out += [x for x in model if not x[1].startswith("model: ")]
    elif d.kind == "line" and live:
        for v in d.model:
            if v not in d.same_as:
                out.append((Line2D([], [], color=cmap.get(v), lw=3), v))
        out.append((Line2D([], [], color="#444444", marker="o", ms=4, ls="-"), "model (solid, filled markers)"))
        shapes = {}
        for h, lab in live:
            shapes.setdefault(h.get_marker(), lab)
        for mk, lab in shapes.items():
            place = lab[lab.rfind("(") :] if lab.endswith(")") and len(shapes) > 1 else ""
            out.append(
                (
                    Line2D([], [], color="#444444", marker=mk, ms=5, mfc="white", ls="--"),
                    f"{d.live_label} {place} (dashed, open markers)".replace("  ", " "),
                )
            )
        out += [(h, lab) for h, lab in model if "same as" in lab]
    else:
        out += model + live
    out += paper + other
    out += [(n, n.get_label()) for n in notes]
    return [h for h, _ in out], [metrics.units(lab) for _, lab in out]


def _legend(fig, axes, notes, d: Drawn, cmap) -> None:
    """One legend for the figure, below everything the axes draw, so that it covers nothing; the
    figure grows by the legend's height, so that the axes keep theirs."""
    handles, labels = _legend_entries(axes, notes, d, cmap)
    if not handles:
        return
    if fig.get_layout_engine() is None:  # axes given by the caller: their own legend
        axes[0].legend(handles, labels, fontsize=FONT["legend"])
        return
    width_pt = fig.get_size_inches()[0] * 72
    # The most columns that fit: matplotlib fills them top to bottom, each as wide as its longest
    # entry (about 0.55 em a character of the legend's font, plus the handle and the gap).
    ncol = 1
    for n in range(min(len(handles), 4), 1, -1):
        rows = math.ceil(len(handles) / n)
        widths = [max(len(t) for t in labels[c * rows : (c + 1) * rows] or [""]) for c in range(n)]
        if sum(w * 0.55 * FONT["legend"] + 45 for w in widths) <= width_pt:
            ncol = n
            break
    rows = math.ceil(len(handles) / ncol)
    w, h = fig.get_size_inches()
    fig.set_size_inches(w, h + rows * FONT["legend"] * 1.45 / 72 + 0.15)
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False, fontsize=FONT["legend"])


def _unclash_ticks(fig, ax) -> None:
    """Tilt the x tick labels if any two of them overlap as drawn (long variant names): by 30
    degrees, upright if the tilted boxes still overlap."""

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
            t.set_rotation_mode("anchor" if angle < 90 else "default")


def _notes(d: Drawn, notes: list) -> None:
    if d.seeds > 1 and d.kind == "line":
        notes.append(
            Patch(facecolor="grey", alpha=0.25, label=f"band: model range over the {d.seeds} seeds (min to max)")
        )
    if d.live and d.live_reps > 1:
        notes.append(
            Patch(
                facecolor="white",
                edgecolor="grey",
                hatch="//",
                label=f"hatched: {d.live_label} range over {d.live_reps} repetitions",
            )
        )
    if d.live_invalid:
        notes.append(
            Patch(
                facecolor="white",
                edgecolor="white",
                label=f"{d.live_invalid} invalid {d.live_label} repetitions left out (generator below its rate)",
            )
        )
    if d.undefined:
        notes.append(
            _gap_note() if d.kind == "line" else _gap_note("no bar: undefined on a seed (no value to average)")
        )


def _gap_note(text: str = "gap in a line: undefined on a seed (no value to average)") -> Line2D:
    return Line2D([], [], color="grey", ls="none", marker="", label=text)


def _positive(values: list[float]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v) and v > 0]


def _scale(axes, values: list[float], log_y: bool, d: Drawn, kind: str) -> None:
    """Logarithmic where asked or where the paper and the model differ by more than `GAP_LOG`;
    else linear, from 0 for values never negative."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    want_log = log_y or (d.gap is not None and d.gap > GAP_LOG)
    if want_log:
        d.scale_why = "requested" if log_y else "gap"
        pos = _positive(finite)
        if kind == "histogram" or not pos or min(finite, default=1.0) <= 0:
            d.scale = "symlog"
            thresh = 1.0 if kind == "histogram" or not pos else min(pos)
            for axp in axes:
                axp.set_yscale("symlog", linthresh=thresh)
        else:
            d.scale = "log"
            for axp in axes:
                axp.set_yscale("log")
                lo, hi = min(pos), max(pos)
                axp.set_ylim(lo / 2.0, hi * (3.0 if kind == "bar" else 1.6))
        return
    if not finite or min(finite) < 0:
        return
    for axp in axes:
        top = axp.get_ylim()[1]
        if kind == "bar" and finite:
            top = max(top, max(finite) * 1.15)  # room for the values printed over the bars
        axp.set_ylim(0, top if top > 0 else 1.0)


def paper_model_gap(axes) -> float | None:
    """The largest ratio between a paper value and the model's value it is drawn against, on the
    value axis: each paper point against the model line nearest to it at its x (each within its
    range, linearly interpolated), each paper bar value against its bar; None without a pair.
    Read from what the axes draw (artists' gids), so that it measures the figure as drawn."""
    worst = None
    for axp in axes:
        model = [ln for ln in axp.lines if str(ln.get_gid()).startswith("model-line")]
        for ln in axp.lines:
            kind = str(ln.get_gid()).rsplit("-", 1)[0]
            if kind not in ("paper-point", "paper-bar"):
                continue
            for px, py in zip(ln.get_xdata(), ln.get_ydata(), strict=True):
                px, py = float(px), float(py)
                if not (math.isfinite(py) and py > 0):
                    continue
                cands = []
                if kind == "paper-bar":
                    cands = [
                        float(h)
                        for p, h in getattr(axp, "_hostsim_bars", [])
                        if abs(p - px) < 1e-9 and math.isfinite(h)
                    ]
                else:
                    for m in model:
                        xs = np.asarray(m.get_xdata(), dtype=float)
                        ys = np.asarray(m.get_ydata(), dtype=float)
                        ok = np.isfinite(ys)
                        if ok.sum() and xs[ok].min() <= px <= xs[ok].max():
                            cands.append(float(np.interp(px, xs[ok], ys[ok])))
                ratios = [max(c / py, py / c) for c in cands if c > 0]
                if cands and not ratios:
                    ratios = [math.inf]  # the model is 0 where the paper is not
                if ratios:
                    r = min(ratios)
                    worst = r if worst is None else max(worst, r)
    return worst


def caption(d: Drawn, fmt=fmt_num, extension: bool = False) -> str:
    """The figure's caption from what it drew (nothing it did not draw is named). `extension`: the
    figure carries a paper's experiment further, so its black marks are the paper's inputs, not
    values the paper measured in this setting."""
    parts = []
    if d.not_modelled is not None:
        parts.append(f"Hatched: the model does not simulate this quantity ({d.not_modelled}); it is not drawn as 0")
    elif d.kind == "histogram":
        parts.append("Bars: the model's counts per bin (mean over its runs)")
    elif d.kind == "bar" and d.model:
        parts.append("Bars: the model (mean over its seeds" + (", with their range)" if d.seeds > 1 else ")"))
    elif d.model:
        parts.append(
            "Solid lines: the model (mean over its seeds"
            + (f"; the light band spans the {d.seeds} seeds' range)" if d.seeds > 1 else ")")
        )
    if d.same_as:
        parts.append(
            "Crosses: a model series identical to another, drawn over it ("
            + ", ".join(f"{a} = {b}" for a, b in d.same_as.items())
            + ")"
        )
    if d.live:
        s = f"Dashed lines, open markers: {d.live_label} measurements"
        if d.live_reps > 1:
            s += f" (mean of up to {d.live_reps} repetitions; the hatched band their range)"
        if d.live_invalid:
            s += f", {d.live_invalid} invalid repetitions left out"
        parts.append(s)
    paper = []
    if d.paper_points:
        paper.append(f"{d.paper_points} published value{'s' if d.paper_points > 1 else ''} (markers)")
    if d.paper_bars:
        paper.append(f"{d.paper_bars} published value{'s' if d.paper_bars > 1 else ''} (diamonds)")
    if d.paper_lines:
        paper.append(
            f"{d.paper_lines} published threshold{'s' if d.paper_lines > 1 else ''} or level{'s' if d.paper_lines > 1 else ''} (lines)"
        )
    if paper:
        if extension:
            parts.append("Black: values taken from the paper (no paper measured this setting): " + " and ".join(paper))
        else:
            parts.append("Black: the paper's " + " and ".join(paper))
    else:
        parts.append("No paper value is drawn (the paper gives none on these axes)")
    if d.scale != "linear":
        if d.scale_why == "gap" and d.gap is not None:
            g = "∞" if math.isinf(d.gap) else f"{d.gap:.0f}×" if d.gap >= 10 else f"{d.gap:.1f}×"
            parts.append(f"Logarithmic value axis: the paper and the model differ by up to {g}")
        else:
            parts.append("Logarithmic value axis" + (" (linear near 0)" if d.scale == "symlog" else ""))
    elif d.gap is not None and d.gap > 1.5:
        parts.append(f"The paper and the model differ by up to {d.gap:.1f}×")
    if d.undefined:
        parts.append("A gap in a line (or a missing bar) is a value undefined on some seed, not a 0")
    if d.panels > 1:
        parts.append(f"{d.panels} panels on shared axes, at most {MAX_SERIES} lines each")
    return ". ".join(parts) + "."
