"""What plot.py's figures are made of: the model's lines and bars, the live measurements beside
them, the paper's marks, histograms, and a quantity the model does not simulate drawn as absent.
Each draws on one axes and records what it drew in the figure's `Drawn`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.patches import Rectangle

from . import metrics
from ._style import (
    _HLINE_STYLES,
    _POINT_MARKERS,
    _VLINE_STYLES,
    FONT,
    PALETTE,
    PAPER_COLOR,
    Drawn,
    _num,
    defined_mean,
    fmt_num,
    histogram_columns,
)


def _same_as(mean: pd.Series, drawn: list[tuple[str, pd.Series]]) -> str | None:
    for name, other in drawn:
        if list(other.index) == list(mean.index) and np.allclose(
            other.values, mean.values, rtol=1e-9, atol=0.0, equal_nan=True
        ):
            return name
    return None


def _lines(ax, df, x, y, vs, cmap, d: Drawn) -> list[float]:
    values, drawn = [], []
    for v in vs:
        sub = df[df["variant"] == v] if "variant" in df else df
        g = sub.groupby(x, sort=True)[y]
        mean, lo, hi = g.apply(defined_mean), g.min(), g.max()
        d.undefined |= bool(mean.isna().any() and g.count().gt(0).any())
        twin = _same_as(mean, drawn)
        style = dict(marker="o", ms=4, ls="-", lw=1.5)
        label = f"model: {v}"
        if twin is not None:
            # Drawn over its twin with another marker and a thinner line, so that both show.
            style = dict(marker="x", ms=8, mew=1.6, ls="-", lw=0.9)
            label += f" (same as {twin})"
            d.same_as[v] = twin
        (line,) = ax.plot(mean.index, mean.values, label=label, color=cmap.get(v), gid=d.gid("model-line"), **style)
        drawn.append((v, mean))
        d.model.append(v)
        values += [float(z) for z in mean.values]
        n = int(g.count().max()) if len(g.count()) else 1
        for k in mean.index:
            d.rows.append({"series": "model", "name": v, "x": k, "y": mean[k], "lo": lo[k], "hi": hi[k]})
        if n > 1:
            d.seeds = max(d.seeds, n)
            ok = mean.notna()
            ax.fill_between(mean.index[ok], lo.values[ok], hi.values[ok], color=line.get_color(), alpha=0.18, lw=0)
            values += [float(z) for z in lo.values[ok]]
    return values


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


def _measured(ax, m, mx, x, y, vs, cmap, d: Drawn) -> list[float]:
    """Valid measured rows averaged per point of the swept key ``x`` (repetitions), drawn at
    the mean of their column ``mx``; invalid ones are left out, and a note says how many."""
    if mx not in m or y not in m:
        return []
    key = x if x in m else mx
    places = list(dict.fromkeys(m["placement"].astype(str))) if "placement" in m else [None]
    values = []
    for v, w, p, rows in measured_series(m, vs):
        i = places.index(p) if p is not None else 0
        ok = valid_rows(rows)
        d.live_invalid += len(rows) - len(ok)
        if ok.empty:
            continue
        g = ok.groupby(key, sort=True)
        pts = pd.DataFrame({"x": g[mx].mean(), "mean": g[y].mean(), "lo": g[y].min(), "hi": g[y].max()}).sort_values(
            "x"
        )
        label = f"{d.live_label}: {w}" + (f" ({p})" if p is not None else "")
        (line,) = ax.plot(
            pts["x"].values,
            pts["mean"].values,
            ls="--",
            lw=1.3,
            marker="osD^"[i % 4],
            ms=5,
            mfc="white",
            mew=1.3,
            color=cmap.get(v),
            label=label,
            gid=d.gid("live-line"),
        )
        d.live.append(label[len(d.live_label) + 2 :])
        values += [float(z) for z in pts["lo"].values] + [float(z) for z in pts["mean"].values]
        for _, r in pts.iterrows():
            d.rows.append(
                {"series": d.live_label, "name": label, "x": r["x"], "y": r["mean"], "lo": r["lo"], "hi": r["hi"]}
            )
        if (g.size() > 1).any():
            d.live_reps = max(d.live_reps, int(g.size().max()))
            ax.fill_between(
                pts["x"].values, pts["lo"].values, pts["hi"].values, color=line.get_color(), alpha=0.1, hatch="//", lw=0
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


def _paper_tag(label: str) -> str:
    return "paper: " + metrics.units(label) if label else "paper"


def _marks(ax, marks, d: Drawn) -> list[float]:
    """The paper's values, each with its own legend entry; none is written on the axes."""
    values = []
    nh = npt = 0
    for m in marks:
        mx, my, label = _num(m.get("x")), _num(m.get("y")), m.get("label", "")
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
                label=_paper_tag(label) if label or npt == 0 else None,
                zorder=5,
                gid=d.gid("paper-point"),
            )
            npt = k + 1
            d.paper_points += 1
            values.append(my)
            d.rows.append({"series": "paper", "name": label, "x": mx, "y": my, "lo": None, "hi": None})
        elif my is not None and mx is None:
            ax.axhline(
                my,
                color=PAPER_COLOR,
                ls=_HLINE_STYLES[nh % len(_HLINE_STYLES)],
                lw=1.2,
                label=_paper_tag(label),
                gid=d.gid("paper-y"),
            )
            nh += 1
            d.paper_lines += 1
            values.append(my)
            d.rows.append({"series": "paper", "name": label, "x": None, "y": my, "lo": None, "hi": None})
    _vlines(ax, marks, d)
    return values


def _absent(ax, d: Drawn) -> None:
    """The model has no value of this quantity: a hatched field, said in words, never a 0."""
    ax.add_patch(
        Rectangle(
            (0, 0),
            1,
            1,
            transform=ax.transAxes,
            facecolor="none",
            edgecolor="#999999",
            hatch="xx",
            lw=0,
            zorder=0,
            gid=d.gid("absent"),
            label="model: not simulated",
        )
    )
    ax.text(
        0.5,
        0.5,
        "not simulated by the model",
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize=FONT["base"],
        color="#555555",
        bbox=dict(facecolor="white", edgecolor="none", pad=2),
    )


def _histogram(ax, df, y, vs, series, marks, thumbnail, measured, d: Drawn, df_all, cmap) -> list[float]:
    """Bars of the simulated histogram ``y`` per variant (and per value of ``series``); with
    ``measured`` (rows shaped like results.csv, already restricted to the figure's ``at``), the
    same groups' measured means per bin drawn over their bars as dashed lines with open markers,
    in the bars' colours: live and model on the same axes."""
    cols = histogram_columns(df, y)
    if not cols:
        ax.text(0.5, 0.5, f"no histogram `{y}_h*` in the results", ha="center", va="center", transform=ax.transAxes)
        return []
    edges = [lo for lo, _ in cols]
    width = (edges[1] - edges[0]) if len(edges) > 1 else 1.0
    every = sorted(df_all[series].unique(), key=lambda z: (str(type(z)), z)) if series and series in df_all else []
    groups = []
    for v in vs:
        sub = df[df["variant"] == v] if "variant" in df else df
        if series and series in sub:
            for s in sorted(sub[series].unique(), key=lambda z: (str(type(z)), z)):
                name = f"{series.rsplit('.', 1)[-1]} = {s}"
                color = PALETTE[(every.index(s) if s in every else 0) % len(PALETTE)] if len(vs) == 1 else None
                groups.append((f"{v}, {name}" if len(vs) > 1 else name, sub[sub[series] == s], color))
        else:
            groups.append((v, sub, cmap.get(v)))
    n = max(len(groups), 1)
    values = []
    for i, (label, sub, color) in enumerate(groups):
        means = [sub[c].mean() for _, c in cols]
        xs = [lo + width * (i + 0.5) / n for lo in edges]
        bars = ax.bar(
            xs,
            means,
            width=width / n,
            label=f"model: {label} (mean over {len(sub)} runs)",
            alpha=0.85,
            color=color,
        )
        d.model.append(label)
        d.seeds = max(d.seeds, 1)
        values += [float(z) for z in means]
        for lo, m in zip(edges, means, strict=True):
            d.rows.append({"series": "model", "name": label, "x": lo, "y": m, "lo": None, "hi": None})
        if measured is not None:
            values += _histogram_measured(
                ax, measured, sub, cols, xs, series, label, bars.patches[0].get_facecolor() if bars.patches else None, d
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
            label=metrics.units(f"paper: {group}: {listed}" if group else f"paper: {listed}"),
            gid=d.gid("paper-hist"),
        )
        d.paper_points += len(pts)
        values += [y for _, y in pts]
        for px, py in pts:
            d.rows.append({"series": "paper", "name": group, "x": px, "y": py, "lo": None, "hi": None})
    _vlines(ax, marks, d)
    return values


def _vlines(ax, marks, d: Drawn) -> None:
    """The paper's values given as an x alone: vertical black lines, told apart by their dash; a
    mark without a label is the far edge of the labelled one before it (a range: same dash)."""
    last_v = None
    nv = 0
    for m in marks:
        mx, my, label = _num(m.get("x")), _num(m.get("y")), m.get("label", "")
        if mx is None or my is not None:
            continue
        style = _VLINE_STYLES[nv % len(_VLINE_STYLES)] if label or last_v is None else last_v
        ax.axvline(
            mx, color=PAPER_COLOR, ls=style, lw=1, label=_paper_tag(label) if label else None, gid=d.gid("paper-x")
        )
        if label or last_v is None:
            nv += 1
        last_v = style
        d.paper_lines += 1
        d.rows.append({"series": "paper", "name": label, "x": mx, "y": None, "lo": None, "hi": None})


def _histogram_measured(ax, m, sub, cols, xs, series, label, color, d: Drawn) -> list[float]:
    """The measured rows of the simulated group ``sub`` (same variant and ``series`` value), their
    mean per bin at the group's bar positions ``xs``."""
    if "variant" in m and "variant" in sub and len(sub):
        m = m[m["variant"].astype(str) == str(sub["variant"].iloc[0])]
    if series and series in m and series in sub and len(sub):
        m = m[m[series].astype(float) == float(sub[series].iloc[0])]
    if m.empty or any(c not in m for _, c in cols):
        return []
    means = [float(m[c].mean()) for _, c in cols]
    ax.plot(
        xs,
        means,
        ls="--",
        lw=1.1,
        marker="o",
        ms=4.5,
        mfc="white",
        color=color,
        zorder=4,
        label=f"{d.live_label}: {label} (mean over {len(m)} runs)",
        gid=d.gid("live-line"),
    )
    d.live.append(f"{label} (mean over {len(m)} runs)")
    for (lo, _), v in zip(cols, means, strict=True):
        d.rows.append({"series": d.live_label, "name": label, "x": lo, "y": v, "lo": None, "hi": None})
    return means


def _bars(ax, df, y, vs, marks, thumbnail, cmap, d: Drawn) -> list[float]:
    pos = range(len(vs))
    values = []
    bars: list[tuple[float, float]] = []
    labels: list[tuple[int, float]] = []  # (bar, mean) to print once the scale is known
    absent = d.not_modelled is not None
    for i, v in enumerate(vs):
        col = df[df["variant"] == v][y] if "variant" in df else df[y]
        mean = defined_mean(col)
        color = cmap.get(v)
        if absent:
            ax.axvspan(
                i - 0.3,
                i + 0.3,
                facecolor="none",
                edgecolor="#888888",
                hatch="xx",
                lw=0.8,
                label="model: not simulated" if i == 0 else None,
                gid=d.gid("absent"),
            )
            if not thumbnail:
                ax.text(
                    i,
                    0.5,
                    "not simulated",
                    transform=ax.get_xaxis_transform(),
                    rotation=90,
                    ha="center",
                    va="center",
                    fontsize=FONT["tick"],
                    color="#555555",
                    bbox=dict(facecolor="white", edgecolor="none", pad=1.5),
                )
            d.rows.append({"series": "model", "name": v, "x": None, "y": None, "lo": None, "hi": None})
            continue
        d.rows.append({"series": "model", "name": v, "x": None, "y": mean, "lo": col.min(), "hi": col.max()})
        if math.isnan(mean):
            d.undefined = True
            if not thumbnail:
                ax.annotate(
                    "undefined",
                    (i, 0),
                    textcoords="offset points",
                    xytext=(0, 3),
                    ha="center",
                    fontsize=8,
                    color="grey",
                )
            continue
        ax.bar([i], [mean], width=0.6, label=f"model: {v}", color=color, alpha=0.85, gid=d.gid("model-bar"))
        d.model.append(v)
        bars.append((float(i), mean))
        values.append(mean)
        if len(col) > 1:
            d.seeds = max(d.seeds, len(col))
            # The seeds' range around the mean; when they all agree, the float mean can fall a
            # rounding step outside it (ten times 0.1 averages to 0.0999...), and matplotlib
            # refuses a negative error.
            lo, hi = max(mean - col.min(), 0.0), max(col.max() - mean, 0.0)
            ax.errorbar([i], [mean], yerr=[[lo], [hi]], color="#333333", capsize=4, lw=1)
        if not thumbnail:
            labels.append((i, mean))
    ax._hostsim_bars = bars
    ax.set_xticks(list(pos), vs)
    if d.seeds > 1:
        ax.plot(
            [],
            [],
            color="#333333",
            marker="_",
            ms=10,
            ls="-",
            label=f"error bar: model range over the {d.seeds} seeds (min to max)",
        )
    labelled: set[str] = set()
    nh = 0
    for m in marks:
        my, label = _num(m.get("y")), m.get("label", "")
        if my is None:
            continue
        if m.get("variant") in vs:
            i = vs.index(m["variant"])
            tag = _paper_tag(label) if label else "paper (published value)"
            ax.plot(
                [i],
                [my],
                marker="D",
                ms=8,
                color=PAPER_COLOR,
                ls="none",
                label=None if tag in labelled else tag,
                zorder=5,
                gid=d.gid("paper-bar"),
            )
            labelled.add(tag)
            d.paper_bars += 1
            values.append(my)
            d.rows.append({"series": "paper", "name": m["variant"], "x": None, "y": my, "lo": None, "hi": None})
        elif m.get("variant") is None:
            ax.axhline(
                my,
                color=PAPER_COLOR,
                ls=_HLINE_STYLES[nh % len(_HLINE_STYLES)],
                lw=1.2,
                label=_paper_tag(label or f"{my:g}"),
                gid=d.gid("paper-y"),
            )
            nh += 1
            d.paper_lines += 1
            values.append(my)
            d.rows.append({"series": "paper", "name": label, "x": None, "y": my, "lo": None, "hi": None})
    for i, mean in labels:
        # Over the bar (beside its error bar), never inside it: a number that cannot fit a bar
        # is cut; the axis leaves room above the tallest one.
        ax.annotate(
            fmt_num(mean),
            (i, mean),
            textcoords="offset points",
            xytext=(9, 3),
            ha="left",
            va="bottom",
            fontsize=FONT["tick"],
            color="#222222",
            gid=d.gid("bar-value"),
        )
    return values
