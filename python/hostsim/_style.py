"""The figures' shared vocabulary (plot.py's visual grammar): colours, marker and line styles, font
sizes at which a figure is legible at the report's width, the record of what a figure drew
(`Drawn`), and number formats."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import matplotlib
import pandas as pd
from matplotlib.ticker import FuncFormatter

PAPER_COLOR = "black"


# Colour-blind-safe qualitative colours (Okabe & Ito without its black and its yellow, then Paul
# Tol's "muted" darker ones): one per variant of an experiment, in the order of its variants.
PALETTE = [
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#E69F00",
    "#332288",
    "#882255",
    "#999933",
    "#44AA99",
    "#AA4499",
    "#661100",
]


# The paper's marks: vertical lines and points are told apart by dash and marker, all in black.
_VLINE_STYLES = ["--", "-.", ":", (0, (5, 1, 1, 1, 1, 1))]


_HLINE_STYLES = [":", (0, (1, 3)), (0, (8, 2)), "-."]


_POINT_MARKERS = ["*", "D", "^", "s", "v", "P"]


# Sizes in points, drawn at 1:1 (a point is a pixel in the report's SVG): legible at the page's width.
FONT = {"base": 10.0, "legend": 9.5, "title": 10.5, "tick": 9.5}


LEGEND_FONTSIZE = FONT["legend"]


GAP_LOG = 5.0


MAX_SERIES = 6


STYLE = {
    "font.size": FONT["base"],
    "axes.titlesize": FONT["title"],
    "axes.labelsize": FONT["base"],
    "xtick.labelsize": FONT["tick"],
    "ytick.labelsize": FONT["tick"],
    "legend.fontsize": FONT["legend"],
    "font.family": "DejaVu Sans",
    "svg.fonttype": "none",  # text stays text (searchable; the report embeds the font)
    "axes.formatter.useoffset": False,
}


matplotlib.rcParams.update(STYLE)


@dataclass
class Drawn:
    """What a figure drew (for its caption, its CSV and the report's tests)."""

    kind: str = "line"
    x: str | None = None
    y: str = ""
    xlabel: str = ""
    ylabel: str = ""
    model: list[str] = field(default_factory=list)  # model series (variants or groups) drawn
    same_as: dict[str, str] = field(default_factory=dict)
    live: list[str] = field(default_factory=list)  # live series drawn
    live_label: str = "live"
    seeds: int = 1  # the model's band spans this many seeds (1: no band)
    live_reps: int = 1
    live_invalid: int = 0
    paper_points: int = 0
    paper_lines: int = 0  # vertical lines (x) and levels (y)
    paper_bars: int = 0
    undefined: bool = False  # a gap in a line, or a bar without a value
    scale: str = "linear"  # linear | log | symlog
    scale_why: str = ""  # "requested" | "gap"
    gap: float | None = None  # the largest paper/model ratio on the value axis
    not_modelled: str | None = None
    panels: int = 1
    rows: list[dict] = field(default_factory=list)  # the drawn values (the figure's CSV)
    ids: list[int] = field(default_factory=lambda: [0])  # numbers the artists' gids, unique in the figure

    def gid(self, kind: str) -> str:
        """A unique id for an artist of `kind` (model-line, live-line, paper-point, ...): the SVG's
        group id, which the report's tests select by kind."""
        self.ids[0] += 1
        return f"{kind}-{self.ids[0]}"


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


def fmt_num(v: float) -> str:
    """As the report prints numbers: thousands separators from 10,000 (and whole numbers from
    1,000), else 4 significant digits; never an exponent below 10^15."""
    if v != v:
        return "NaN"
    if 1e4 <= abs(v) < 1e15 or (1e3 <= abs(v) < 1e4 and v == round(v)):
        return f"{v:,.0f}"
    if v != 0 and abs(v) < 1e-3:
        return f"{v:.2g}"
    s = f"{v:.4g}"
    return s if "e" not in s else f"{v:,.0f}"


def _ticks(top: float) -> FuncFormatter:
    """Tick labels for an axis reaching `top`, in one style: 0.25, 12,000, or from 100,000 on
    250k and 1.5M (no offset, no exponent)."""

    def tick(v: float, _pos=None) -> str:
        a = abs(v)
        if top >= 1e5 and a >= 1e6:
            return f"{v / 1e6:g}M"
        if top >= 1e5 and a >= 1e3:
            return f"{v / 1e3:g}k"
        if a >= 1e3:
            return f"{v:,.0f}"
        return f"{v:g}"

    return FuncFormatter(tick)


def histogram_columns(df: pd.DataFrame, y: str) -> list[tuple[float, str]]:
    """The bins of histogram ``y``: (lower edge, column) for every column ``<y>_h<lo>``, in order."""
    pat = re.compile(re.escape(y) + r"_h(\d+(?:\.\d+)?)$")
    cols = [(float(m.group(1)), c) for c in df.columns if (m := pat.match(str(c)))]
    return sorted(cols)


def defined_mean(s: pd.Series) -> float:
    """The mean over the rows (seeds) if the value is defined on every one of them, else NaN: a
    mean over the seeds that happen to have a value would stand for a population it is not."""
    return float(s.mean()) if len(s) and s.notna().all() else float("nan")


def variant_colors(variants: Iterable[str], colors: Mapping[str, str] | None = None) -> dict[str, str]:
    """One colour per variant, in order: those of `colors` kept, the others the next unused ones."""
    out = dict(colors or {})
    free = [c for c in PALETTE if c not in out.values()]
    for v in variants:
        if v not in out:
            out[v] = free.pop(0) if free else PALETTE[len(out) % len(PALETTE)]
    return out
