"""Every figure of a full `hostsim reproduce` (the session's `reproduced`) checked on what it
draws (matplotlib's objects) and on its SVG as Chromium lays it out: it cannot hide a gap (no
paper/model ratio over 5x on a linear axis, computed here from the results and the paper's
values, not by the code that draws), live and model follow one grammar (dashed open markers,
solid filled), a variant keeps its colour in every figure of its experiment, no panel carries
more than 6 lines, axis labels say what they draw with a unit, the caption names only what is
drawn, and no two labels overlap."""

import math
import re
from pathlib import Path

import hostsim
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from browser import Browser
from hostsim import metrics, plot, report


def scenario_dirs(out):
    return sorted(p for p in out.iterdir() if (p / "results.csv").exists())


def _figures(out):
    """Every figure as the report draws it: (where, spec, results, Figure)."""
    for d in scenario_dirs(out):
        inf = hostsim.info(d / "scenario.toml")
        df = pd.read_csv(d / "results.csv")
        colors = plot.variant_colors(list(dict.fromkeys(df["variant"])))
        for k, spec in enumerate(report.figures_of(inf)):
            s = dict(spec)
            meas = d / Path(s["measured"]).name if s.get("measured") else None
            s["measured"] = pd.read_csv(meas) if meas is not None and meas.exists() else None
            fig = plot.figure(df, colors=colors, not_modelled=report.not_simulated(inf).get(spec["y"]), **s)
            yield f"{d.name} figure {k + 1} ({spec['title']})", spec, df, fig


@pytest.fixture(scope="module")
def drawn(reproduced):
    plt.rcParams["figure.max_open_warning"] = 0  # all of them, open for the module
    figs = list(_figures(reproduced))
    yield figs
    for *_, f in figs:
        plt.close(f)


def _gap(spec, df) -> float:
    """The largest ratio between a paper value and the model's, from the results: a point mark
    against each variant's mean curve at its x (the closest variant), a bar mark against its
    variant's mean."""
    worst = 1.0
    if spec.get("kind") == "histogram" or spec["y"] not in df:
        return worst
    for m in spec.get("marks", []):
        y = m.get("y")
        if y is None or y <= 0:
            continue
        if spec.get("x") is None and m.get("variant") is not None:
            sim = [df[df["variant"] == m["variant"]][spec["y"]].mean()]
        elif spec.get("x") is not None and m.get("x") is not None:
            sim = []
            for v, g in df.groupby("variant"):
                if spec.get("variants") and v not in spec["variants"]:
                    continue
                c = g.groupby(spec["x"])[spec["y"]].mean().dropna()
                if len(c) and c.index.min() <= m["x"] <= c.index.max():
                    sim.append(float(np.interp(m["x"], c.index.astype(float), c.values)))
        else:
            continue
        r = [max(s / y, y / s) if s > 0 else math.inf for s in sim if s == s]
        if r:
            worst = max(worst, min(r))
    return worst


def test_no_gap_over_5x_on_a_linear_axis(drawn, reproduced):
    for where, spec, df, fig in drawn:
        if fig.hostsim.not_modelled:
            continue
        g = _gap(spec, plot._at(df, spec.get("at")))
        if g > plot.GAP_LOG:
            assert fig.axes[0].get_yscale() != "linear", f"{where}: paper and model differ {g:.0f}x on a linear axis"
    by = {w.split(" (")[0]: f for w, _, _, f in drawn}
    assert by["goda-rfs-migrations figure 3"].axes[0].get_yscale() == "log"


def test_one_visual_grammar(drawn):
    for where, spec, _df, fig in drawn:
        lines = [ln for ax in fig.axes for ln in ax.lines]
        for ln in lines:
            gid = str(ln.get_gid())
            if gid.startswith("live-line"):
                assert ln.get_linestyle() == "--" and ln.get_markerfacecolor() in ("white", "#ffffff", (1, 1, 1, 1)), (
                    where
                )
            elif gid.startswith("model-line"):
                assert ln.get_linestyle() == "-", f"{where}: a model line not solid"
            elif gid.startswith(("paper-point", "paper-bar", "paper-hist")):
                assert ln.get_color() == "black", f"{where}: a paper value not black"
        for ax in fig.axes:
            n = sum(str(ln.get_gid()).startswith(("model-line", "live-line")) for ln in ax.lines)
            assert n <= plot.MAX_SERIES, f"{where}: {n} lines in one panel"
        if spec.get("measured") is not None and fig.hostsim.kind == "line":
            # Each live line in the colour of the model variant it is measured beside.
            model = {
                str(ln.get_label())[len("model: ") :].split(" (same")[0]: ln.get_color()
                for ax in fig.axes
                for ln in ax.lines
                if str(ln.get_gid()).startswith("model-line")
            }
            for ln in lines:
                if str(ln.get_gid()).startswith("live-line"):
                    assert ln.get_color() in model.values(), f"{where}: {ln.get_label()} in no model variant's colour"


def test_a_variant_has_one_colour_in_every_figure_of_its_experiment(drawn):
    seen: dict[tuple[str, str], str] = {}
    for where, _spec, _df, fig in drawn:
        scen = where.split(" figure")[0]
        for ax in fig.axes:
            for ln in ax.lines:
                if str(ln.get_gid()).startswith("model-line") and "same as" not in str(ln.get_label()):
                    v = str(ln.get_label())[len("model: ") :]
                    c = seen.setdefault((scen, v), ln.get_color())
                    assert c == ln.get_color(), f"{where}: {v} changes colour"


def test_axis_labels_say_what_they_draw_with_a_unit(drawn):
    for where, spec, _df, fig in drawn:
        for key, explicit in ((spec.get("x"), spec.get("xlabel")), (spec["y"], spec.get("ylabel"))):
            if key and not explicit and fig.hostsim.kind != "histogram":
                assert metrics.known(key), f"{where}: {key} is not in metrics.py's table"
        for ax in fig.axes:
            for label in (ax.get_xlabel(), ax.get_ylabel()):
                flat = label.replace("\n", " ")
                # No results.csv column (a metric or a swept key) as a name: words.
                raw = [t for t in re.findall(r"[\w.]+", flat) if t in _df.columns and ("_" in t or "." in t)]
                assert not raw, f"{where}: raw names {raw} in {flat!r}"
                assert not re.search(r"[\d(]\s?us\b", flat), f"{where}: {flat!r}"


def test_captions_name_only_what_is_drawn(drawn):
    for where, _spec, _df, fig in drawn:
        d = fig.hostsim
        cap = plot.caption(d)
        gids = [str(a.get_gid()) for ax in fig.axes for a in ax.lines + ax.patches]
        paper = any(g.startswith("paper-") for g in gids) or any(
            str(c.get_gid()).startswith("paper-") for ax in fig.axes for c in ax.get_children()
        )
        assert ("Black: " in cap) == paper, f"{where}: {cap}"
        assert ("No paper value is drawn" in cap) == (not paper), f"{where}: {cap}"
        live = any(g.startswith("live-line") for g in gids)
        assert ("Dashed lines, open markers" in cap) == live, f"{where}: {cap}"
        if d.scale != "linear":
            assert "Logarithmic" in cap, where


def test_every_value_the_paper_gives_is_marked_on_its_figure(reproduced):
    """A claim's paper value on the metric a figure draws is on that figure: a mark at that value
    or a ratio mark of it (live twins' values are the measured lines themselves)."""
    missing = []
    for d in scenario_dirs(reproduced):
        inf = hostsim.info(d / "scenario.toml")
        figs = [f for f in report.figures_of(inf) if not f.get("measured")]
        for e in inf["expects"]:
            pv = e.get("paper_value")
            on = [f for f in figs if f["y"] == e["metric"]]
            if pv is None or not on:
                continue
            if not any(
                abs(float(m.get("y") if m.get("y") is not None else m.get("ratio", float("nan"))) - pv)
                <= 1e-9 * max(1, abs(pv))
                for f in on
                for m in f.get("marks", [])
            ):
                missing.append(f"{d.name}: {e['claim']} ({pv:g})")
    assert not missing, "paper values not marked:\n" + "\n".join(missing)


def test_figures_cannot_mislead(drawn):
    for where, spec, _df, fig in drawn:
        legend = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
        for ax in fig.axes:
            if ax.get_yscale() == "linear":
                lo, hi = ax.get_ylim()
                assert lo <= 0 <= hi, f"{where}: the vertical axis does not reach 0 ({lo:g} to {hi:g})"
        for m in spec.get("marks", []):
            if not m.get("label"):
                continue
            if spec.get("kind") == "histogram" and m.get("y") is not None:
                # A histogram lists a group's counts in one entry: "paper: 1024 B: 2 at 100, ...".
                group, _, value = m["label"].partition(":")
                assert any(
                    t.startswith(f"paper: {metrics.units(group)}:") and f"{value.strip()} at {m['x']:g}" in t
                    for t in legend
                ), f"{where}: mark {m['label']!r} not in the legend"
            else:
                assert any(metrics.units(m["label"]) in t for t in legend), (
                    f"{where}: mark {m['label']!r} not in the legend"
                )
        ax = fig.axes[0]
        if any(type(c).__name__ in ("PolyCollection", "FillBetweenPolyCollection") for c in ax.collections):
            assert any(t.startswith(("band:", "hatched:")) for t in legend), (
                f"{where}: a band that does not say what it is"
            )
        sims = [ln for a in fig.axes for ln in a.lines if str(ln.get_gid()).startswith("model-line")]
        for i, a in enumerate(sims):
            for b in sims[:i]:
                same = len(a.get_ydata()) == len(b.get_ydata()) and all(
                    (x == y) or (x != x and y != y) for x, y in zip(a.get_ydata(), b.get_ydata(), strict=True)
                )
                if same and a.axes is b.axes:
                    assert "same as" in a.get_label(), f"{where}: {a.get_label()} hides {b.get_label()}"
            if any(y != y for y in a.get_ydata()):
                assert any(t.startswith("gap in a line") for t in legend), (
                    f"{where}: an undefined point drawn without saying so"
                )


def test_no_two_labels_overlap_on_any_rendered_figure(reproduced, tmp_path):
    figs = sorted((reproduced / "report" / "figures").glob("*.svg"))
    assert len(figs) >= 40
    # Each of matplotlib's text groups (titles, tick labels, axis labels, legend entries) as
    # Chromium lays it out; two boxes may touch but not overlap by more than half a pixel.
    js = """(() => {
      const g = [...document.querySelectorAll('g[id^="text_"], g[id^="legend"] > g[id^="text"], g[id^="bar-value"]')]
        .filter(e => !e.parentElement.closest('g[id^="text_"]'));
      const b = g.map(e => { const r = e.getBoundingClientRect(); return [e.id, r.left, r.top, r.right, r.bottom]; })
        .filter(r => r[3] - r[1] > 0 && r[4] - r[2] > 0);
      const out = [];
      for (let i = 0; i < b.length; i++) for (let j = i + 1; j < b.length; j++) {
        const w = Math.min(b[i][3], b[j][3]) - Math.max(b[i][1], b[j][1]);
        const h = Math.min(b[i][4], b[j][4]) - Math.max(b[i][2], b[j][2]);
        if (w > 0.5 && h > 0.5) out.push(b[i][0] + ' / ' + b[j][0]);
      }
      return [b.length, out];
    })()"""
    with Browser(tmp_path / "chromium") as b:
        for f in figs:
            b.open(f.as_uri(), 1400, 1000)
            n, clashes = b.eval(js)
            if not f.name.startswith("thumb-"):
                assert n >= 3, f"{f.name}: no text found ({n})"
            assert not clashes, f"{f.name}: labels overlap: {clashes}"


def test_plot_figure_in_a_notebook():
    df = pd.DataFrame({"variant": ["a", "a", "b", "b"], "x": [1, 2, 1, 2], "m": [1.0, 2.0, 1.5, float("nan")]})
    fig = hostsim.plot.figure(df, y="m", x="x", title="t", marks=[{"x": 1, "y": 1.2, "label": "paper"}, {"x": 2}])
    assert len(fig.axes[0].lines) >= 3
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(t.startswith("gap in a line") for t in labels), "b's undefined point is a gap, said so"
    fig = hostsim.plot.figure(df, y="m", marks=[{"variant": "a", "y": 1.0}])
    assert len([p for p in fig.axes[0].patches if str(p.get_gid()).startswith("model-bar")]) == 1, "b: no bar"


def test_identical_series_are_both_visible_and_a_ratio_mark_lands_on_its_variant():
    df = pd.DataFrame({"variant": ["a", "a", "b", "b"], "x": [1, 2, 1, 2], "m": [1.0, 2.0, 1.0, 2.0]})
    fig = hostsim.plot.figure(df, y="m", x="x", marks=[{"x": 2, "ratio": 0.5, "of": "a", "label": "half of a"}])
    ax = fig.axes[0]
    twin = [ln for ln in ax.lines if ln.get_label() == "model: b (same as a)"][0]
    assert twin.get_linestyle() == "-" and twin.get_marker() == "x", "solid, another marker: never dashed as live"
    star = [ln for ln in ax.lines if ln.get_label() == "paper: half of a"][0]
    assert list(star.get_xdata()) == [2.0] and list(star.get_ydata()) == [1.0]
    assert ax.get_ylim()[0] == 0


def test_a_gap_over_5x_gets_a_log_axis_and_an_absent_quantity_no_bar():
    df = pd.DataFrame({"variant": ["a"] * 3 + ["b"] * 3, "m": [60000.0, 61000, 62000, 30000, 31000, 32000]})
    fig = plot.figure(df, y="m", marks=[{"variant": "a", "y": 2200}, {"variant": "b", "y": 20000}])
    assert fig.axes[0].get_yscale() == "log" and fig.hostsim.gap == pytest.approx(61000 / 2200)
    assert "differ by up to 28×" in plot.caption(fig.hostsim)
    fig = plot.figure(df, y="m", marks=[{"variant": "a", "y": 50000}])
    assert fig.axes[0].get_yscale() == "linear"
    zero = df.assign(m=0.0)
    fig = plot.figure(zero, y="m", marks=[{"variant": "a", "y": 7000}], not_modelled="no LLC traffic modelled")
    ax = fig.axes[0]
    assert not [p for p in ax.patches if str(p.get_gid()).startswith("model-bar")], "no bar at 0"
    assert "not simulated" in " ".join(t.get_text() for t in ax.texts)
    assert plot.caption(fig.hostsim).startswith("Hatched: the model does not simulate this quantity")


def test_many_variants_are_split_into_panels_of_at_most_six_lines():
    rows = [{"variant": f"v{i}", "x": x, "m": float(i + x)} for i in range(10) for x in (1, 2)]
    fig = plot.figure(pd.DataFrame(rows), y="m", x="x")
    assert len(fig.axes) == 2 and fig.hostsim.panels == 2
    assert all(len(ax.lines) <= 6 for ax in fig.axes)
    assert fig.axes[0].get_shared_y_axes().joined(fig.axes[0], fig.axes[1]), "panels on shared axes"


def test_bars_whose_seeds_all_agree_draw_with_a_zero_range():
    # Equal values whose float mean lies a rounding step outside them (pandas: seven 0.1s
    # average below 0.1, three above): the seed-range error bar must not go negative
    # (matplotlib raised, and `hostsim reproduce` failed to build its report).
    df = pd.DataFrame({"variant": ["a"] * 7 + ["b"] * 3, "m": [0.1] * 10})
    assert df[df["variant"] == "a"]["m"].mean() < 0.1 < df[df["variant"] == "b"]["m"].mean()
    fig = hostsim.plot.figure(df, y="m")
    assert len([p for p in fig.axes[0].patches if str(p.get_gid()).startswith("model-bar")]) == 2
