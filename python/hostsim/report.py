"""The HTML report of `hostsim reproduce`, written for a researcher who has 30 seconds.

It opens with what made the results (hostsim's version, commit, model-source id, the command, when
and on what machine: DIR/provenance.json), a table of contents with a "failing claims only"
filter, and a summary that fits one screen: per paper and per live experiment a verdict by the
rule of `verdicts.py` with its reason in one line, the share of calibration and prediction claims
passed on a colour-blind-safe scale, and the largest gap between the model and the published (or
live) value, with its factor. Then, per paper, a box with the verdict and the key claims in full,
each experiment's figures re-drawn from the simulation with the paper's values on the same axes
(plot.py's visual grammar; captions written from what is drawn; click a figure to open it full
size), how its baseline was calibrated (once per overlay: each fitted parameter against its
bounds, flagged on a bound; "not fitted" where the fit did not move), and its claims in tables
apart by role, each with its verdict over seeds, 95% intervals, the fraction of seeds on which it
holds and what was found about it; alternative readings apart; a CSV beside every figure and
claims table. Scenarios that carry a paper's experiment further (`extends = "<paper id>"`) are
drawn apart, under "Extensions": they are not reproductions. The page ends with the verdict rule,
how the verdicts move when its thresholds do, and a glossary. Static files; opens from disk;
figures are inline SVG whose text stays text, in fonts embedded in the page (`_fonts.py`).

    python -m hostsim.report out                      # reads out/<scenario>/results.csv, out/expectations.json
                                                      # writes out/report/index.html and out/report/figures/*
    python -m hostsim.report out --readme README.md   # also rewrites the README's summary table
"""

from __future__ import annotations

import argparse
import csv
import html
import io
import json
import logging
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "hostsim"  # stable ids: equal results, equal files
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from . import _fonts, _native, _summary, metrics, plot  # noqa: E402
from ._calib import _calibration_html, _calibration_note, fitted  # noqa: E402, F401 (fitted: the tests')
from ._claims import Claims, _claims_csv, _claims_table, _fmt, _glance, _text, tally  # noqa: E402
from ._page import CSS, EXTENSIONS, GLOSSARY, JS, LIVE, _nav, _provenance, _provenance_html, _rule_html  # noqa: E402
from ._summary import Tally  # noqa: E402
from .papers import PAPERS, paper_of  # noqa: E402

logging.getLogger("fontTools").setLevel(logging.ERROR)


def auto_figures(inf: dict) -> list[dict]:
    """Figures for a scenario without `[[figure]]`: each claimed metric against the first swept
    numeric key (else one bar per variant), with the claims' paper values as marks."""
    sweep = [k for k, vals in inf["sweep"] if k != "seed" and all(isinstance(v, (int, float)) for v in vals)]
    x = sweep[0] if sweep else None
    figs: dict[str, dict] = {}
    for e in inf["expects"]:
        f = figs.setdefault(
            e["metric"], {"title": metrics.words(e["metric"]), "x": x, "y": e["metric"], "marks": [], "paper": ""}
        )
        pv = e.get("paper_value")
        if pv is None:
            continue
        if x is None:
            f["marks"].append({"variant": e.get("variant"), "y": pv, "label": e.get("paper", "")})
        elif x in (e.get("at") or {}):
            f["marks"].append({"x": e["at"][x], "y": pv, "label": e.get("paper", "")})
        else:
            f["marks"].append({"y": pv, "label": e.get("paper", "")})
    return list(figs.values())


def figures_of(inf: dict) -> list[dict]:
    return inf["figures"] or auto_figures(inf)


def not_simulated(inf: dict) -> dict[str, str]:
    """Metric -> why, for the quantities the scenario's claims say the model does not simulate
    (`untestable = "not_simulated"`): its figures draw them as absent, never as 0."""
    out = {}
    for e in inf["expects"]:
        if not e.get("applicable", True) and e.get("untestable") == "not_simulated":
            out.setdefault(e["metric"], _first_sentence(e.get("finding") or "not simulated"))
    return out


def _first_sentence(text: str) -> str:
    m = re.match(r"(.+?[.;:])(\s|$)", text)
    s = (m.group(1) if m else text).rstrip(".;:")
    return s[0].lower() + s[1:] if s else s


def _scenario_info(d: Path) -> dict:
    f = d / "scenario.toml"
    if f.exists():
        return json.loads(_native.scenario_info(str(f.resolve())))
    return json.loads(_native.scenario_info(d.name))  # a built-in scenario of that name


def group_of(d: Path, inf: dict) -> str:
    if inf.get("extends"):
        return EXTENSIONS
    if d.name.startswith("live-"):
        return LIVE
    return paper_of(d.name) or ""


_ID = re.compile(r'(id="|url\(#|xlink:href="#|href="#)([^"\)]+)')


def inline_svg(svg: str, suffix: str) -> str:
    """An SVG file's markup for inlining in the page: no XML prologue, its ids made unique to it
    (matplotlib numbers them from 1 in every figure), sized by the page."""
    svg = svg[svg.index("<svg") :]
    svg = _ID.sub(lambda m: f"{m.group(1)}{m.group(2)}--{suffix}", svg)
    return svg


def _save(fig, path: Path) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight", pad_inches=0.1)
    plt.close(fig)
    text = buf.getvalue()
    path.write_text(text)
    return text


def _draw(d: Path, df: pd.DataFrame, spec: dict, path: Path, colors: dict, absent: dict, thumbnail: bool = False):
    """Draw one figure of scenario directory `d`: (its SVG text, what it drew, the measured frame)."""
    spec = dict(spec)
    meas = d / Path(spec["measured"]).name if spec.get("measured") else None
    spec["measured"] = pd.read_csv(meas) if meas is not None and meas.exists() else None
    fig = plot.figure(
        df, thumbnail=thumbnail, colors=colors, not_modelled=absent.get(spec["y"]), **{k: v for k, v in spec.items()}
    )
    drawn = fig.hostsim
    return _save(fig, path), drawn, spec["measured"]


def _figure_csv(drawn: plot.Drawn, path: Path) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["series", "name", drawn.x or "x", drawn.y, "lo", "hi"])
    for r in drawn.rows:
        w.writerow(["" if r[k] is None or r[k] != r[k] else r[k] for k in ("series", "name", "x", "y", "lo", "hi")])
    path.write_text(buf.getvalue())


def build(out: str | Path, log=None) -> Path:
    """Write ``out/report/index.html`` (and its figures and CSVs) from a reproduce directory."""
    out = Path(out)
    rep = out / "report"
    figdir = rep / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    for old in list(figdir.glob("*.svg")) + list(figdir.glob("*.csv")) + list(rep.glob("claims-*.csv")):
        old.unlink()
    claims, scen_dirs, infos, groups, live_runs = _load(out)
    prov = _provenance(out)
    cl = Claims(claims, scen_dirs, infos)
    by_name = {d.name: infos[d] for d in scen_dirs}
    frames = {d: pd.read_csv(d / "results.csv") for d in scen_dirs}
    colors = {
        d: plot.variant_colors(list(dict.fromkeys(frames[d]["variant"])) if "variant" in frames[d] else [])
        for d in scen_dirs
    }
    absent = {d: not_simulated(infos[d]) for d in scen_dirs}
    rows = _summary.rows(groups, infos, claims, live_runs, figures_of, cl.metric)
    thumbs = {}
    for r in rows:
        if r.headline:
            sname, k = r.headline
            d = out / sname
            name = f"thumb-{r.key}.svg"
            _draw(d, frames[d], figures_of(infos[d])[k], figdir / name, colors[d], absent[d], thumbnail=True)
            thumbs[r.key] = f"figures/{name}"
    order = [p for p in PAPERS if p in groups] + [k for k in (EXTENSIONS, "", LIVE) if k in groups]
    row_of = {r.key: r for r in rows}
    overlays: dict[str, list[str]] = {}
    for d in scen_dirs:
        cal = infos[d].get("calibration")
        if infos[d].get("calibrate") and cal:
            overlays.setdefault(cal["name"], []).append(d.name)
    shown_overlays: set[str] = set()
    body = []
    nfig = 0
    for pid in order:
        body.append(_section_head(pid))
        if pid in PAPERS:
            body.append(_glance(row_of[f"paper-{pid}"], cl))
        pclaims = []
        for d in groups[pid]:
            inf = infos[d]
            df = frames[d]
            ext = inf.get("extends")
            if ext:
                paper = f"paper {PAPERS[ext]['number']} ({ext})" if ext in PAPERS else ext
                body.append(
                    f'<h3 class="extension" id="scenario-{d.name}">{html.escape(d.name)} <small>— extends '
                    f"{html.escape(paper)}, not a reproduction</small></h3>"
                )
            else:
                body.append(f'<h3 id="scenario-{d.name}">{html.escape(d.name)}</h3>')
            if pid == LIVE:
                body.append(_glance(row_of[f"scenario-{d.name}"], cl))
            body.append(f"<p>{_text(inf['description'])}</p>")
            cal = inf.get("calibration")
            if inf.get("calibrate") and cal:
                body.append(_calibration_html(inf, d.name, overlays[cal["name"]], cal["name"] not in shown_overlays))
                shown_overlays.add(cal["name"])
            figs = []
            for k, spec in enumerate(figures_of(inf)):
                name = f"{d.name}-{k + 1}"
                svg, drawn, meas = _draw(d, df, spec, figdir / f"{name}.svg", colors[d], absent[d])
                _figure_csv(drawn, figdir / f"{name}.csv")
                nfig += 1
                figs.append(_figure_html(d, name, spec, svg, drawn, meas, k, ext))
                if log:
                    log(f"  figure {name}.svg")
            body.append(f'<div class="figs">{"".join(figs)}</div>')
            body.append(_live_points_html(d, df, figures_of(inf)))
            pclaims += [c for c in claims if c["scenario"] in (d.name, inf["name"])]
        if pclaims:
            body.append(_claims_section(pid, pclaims, groups, by_name, cl, rep))
        body.append("</section>")
    body.append(_rule_html(rows))
    body.append(GLOSSARY)
    head = _head(claims, len(scen_dirs), nfig, rows, thumbs, prov, order, cl)
    text = head + "".join(body)
    font_css, font = _fonts.font_face_css(text)
    if font is None and any(_fonts.is_cjk(ch) for ch in text) and log:
        log("  warning: no CJK font found (apt-get install fonts-ipaexfont-gothic): Japanese may show as boxes")
    page = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>hostsim report</title>'
        f"<style>{font_css}{CSS.replace('{cjk}', _fonts.FAMILY)}</style></head><body>{text}<script>{JS}</script></body></html>\n"
    )
    (rep / "index.html").write_text(page)
    return rep / "index.html"


def _figure_html(d: Path, name: str, spec: dict, svg: str, drawn: plot.Drawn, meas, k: int, ext=None) -> str:
    title = _text(spec["title"] + (f" ({spec['paper']})" if spec.get("paper") else ""))
    links = [f'<a href="figures/{name}.svg">SVG</a>', f'<a href="figures/{name}.csv">data drawn (CSV)</a>']
    links.append(f'<a href="../{d.name}/results.csv">results.csv</a>')
    if meas is not None and spec.get("measured"):
        links.append(f'<a href="../{d.name}/{html.escape(Path(spec["measured"]).name)}">live data (CSV)</a>')
    gap = "" if drawn.gap is None else f' data-gap="{drawn.gap:.6g}"'
    wide = " wide" if drawn.panels > 1 else ""
    return (
        f'<figure class="fig{wide}" id="fig-{name}" data-title="{title}" data-scenario="{d.name}" data-index="{k}" data-kind="{drawn.kind}" '
        f'data-yscale="{drawn.scale}"{gap} data-absent="{int(drawn.not_modelled is not None)}">'
        f'<div class="svg" role="img" aria-label="{title}" title="click to enlarge; Esc or click to close">{inline_svg(svg, name)}</div>'
        f"<figcaption>{html.escape(plot.caption(drawn, extension=bool(ext)))} "
        f'<span class="links">{" · ".join(links)}</span></figcaption></figure>'
    )


def _claims_section(pid: str, pclaims: list[dict], groups, by_name, cl: Claims, rep: Path) -> str:
    tid = pid or "other"
    live = pid == LIVE
    prim = [c for c in pclaims if c.get("primary", True)]
    alt = [c for c in pclaims if not c.get("primary", True)]
    csv_name = f"claims-{tid}.csv"
    _claims_csv(pclaims, rep / csv_name)
    parts = [
        f'<h3 id="claims-{tid}">Claims: {tally(prim)}'
        + (f" <small>(alternative readings apart: {tally(alt)})</small>" if alt else "")
        + f' <small class="links"><a href="{csv_name}">all claims (CSV)</a></small></h3>'
    ]
    names = [d.name for d in groups[pid]]
    for role, title, note in [
        ("calibration", "Calibration claims", _calibration_note(names, by_name)),
        ("prediction", "Prediction claims", "everything else: nothing was tuned against these"),
    ]:
        rc = [c for c in prim if c.get("role", "prediction") == role]
        if rc:
            t = Tally.of(rc)
            parts.append(
                f"<h4>{title}: {t.passed} / {t.judged} pass <small>({tally(rc)})</small></h4><p><small>{html.escape(note)}.</small></p>"
            )
            parts.append(_claims_table(rc, f"claims-{tid}-{role}", cl, live))
    if alt:
        parts.append(
            f'<details class="alts" id="claims-{tid}-alternative"><summary>Alternative readings ({tally(alt)}), counted apart: '
            "other ways to read a sentence whose primary reading is above</summary>"
            + _claims_table(alt, f"claims-{tid}-alternatives", cl, live)
            + "</details>"
        )
    return "".join(parts)


def live_points(d: Path, df: pd.DataFrame, figures: list[dict]) -> list[tuple[str, pd.DataFrame]]:
    """Per measured file drawn in a scenario's figures: (its name, every measured point beside
    the model's prediction for it, `plot.measured_vs_model` over the metrics of the figures that
    draw it)."""
    out = []
    by_file: dict[str, list[dict]] = {}
    for spec in figures:
        if spec.get("measured") and spec.get("x"):
            by_file.setdefault(Path(spec["measured"]).name, []).append(spec)
    for name, specs in by_file.items():
        path = d / name
        if not path.exists():
            continue
        x, mx = specs[0]["x"], specs[0].get("measured_x")
        ys = list(
            dict.fromkeys(
                (s["y"], s.get("measured_y") or s["y"]) for s in specs if s.get("x") == x and s.get("measured_x") == mx
            )
        )
        t = plot.measured_vs_model(df, pd.read_csv(path), x, mx, ys)
        if not t.empty:
            out.append((name, t))
    return out


def _live_points_html(d: Path, df: pd.DataFrame, figures: list[dict]) -> str:
    """The table under a twin's figures: each live point (repetitions averaged) and the model's
    prediction beside it."""
    parts = []
    for name, t in live_points(d, df, figures):
        ys = [c[: -len("_model")] for c in t.columns if c.endswith("_model")]
        label = (
            next(
                (s.get("measured_label") for s in figures if s.get("measured") and Path(s["measured"]).name == name),
                None,
            )
            or "measured"
        )
        key = t.columns[3]
        head = (
            "<tr><th>placement</th><th>variant</th><th>offered</th><th>achieved</th><th>reps</th>"
            + "".join(f"<th>{html.escape(metrics.label(y))}: {html.escape(label)}</th><th>model</th>" for y in ys)
            + "</tr>"
        )
        body = []
        for r in t.to_dict("records"):
            # A model value outside its swept points is not read off the curve: "–", as the
            # caption says (a measured NaN stays NaN: that run had no value).
            # A point without a valid repetition has no measured value either: "–" too.
            dash = lambda z: "–" if z != z else _fmt(z)  # noqa: E731
            # Valid repetitions, and "of all" where some were left out.
            reps = f"{int(r['reps'])}/{int(r['reps']) + int(r['invalid'])}" if r["invalid"] else str(int(r["reps"]))
            cells = "".join(f"<td>{dash(r[y])}</td><td>{dash(r[y + '_model'])}</td>" for y in ys)
            body.append(
                f"<tr><td>{html.escape(str(r['placement'] or '–'))}</td><td>{html.escape(str(r['measured_variant']))}</td>"
                f"<td>{_fmt(r[key])}</td><td>{dash(r['measured_x'])}</td><td>{reps}</td>{cells}</tr>"
            )
        parts.append(
            f'<details class="livepts"><summary>{html.escape(label)} point by point, the model beside each '
            f'(<a href="../{d.name}/{html.escape(name)}">{html.escape(name)}</a>)</summary>'
            f'<table class="claims live-points" id="live-points-{html.escape(d.name)}"><caption>{html.escape(label)} '
            f"({html.escape(name)}) point by point, the model's prediction beside each: the model's mean over its seeds of the "
            f"variant drawn in that colour, read at the rate the {html.escape(label)} run achieved by linear interpolation "
            "between its swept points (– outside them); the live value is the mean of its valid repetitions "
            "(<i>reps</i> 2/3: one of three left out because the generator fell below its rate).</caption>"
            f"<thead>{head}</thead><tbody>{''.join(body)}</tbody></table></details>"
        )
    return "".join(parts)


def _section_head(pid: str) -> str:
    if pid == EXTENSIONS:
        return (
            '<section class="paper" id="extensions"><h2>Extensions: the papers\' experiments carried '
            'further (not reproductions)</h2><p class="mechanism">Each of these runs a paper\'s experiment on '
            "another machine, kernel or mechanism than the paper had. No paper measured them: their claims state "
            "what the model predicts, and marks show only the paper's own inputs.</p>"
        )
    if pid == LIVE:
        return (
            '<section class="paper" id="live"><h2>Live experiments: a mechanism on this machine\'s kernel, and '
            'its model twin</h2><p class="mechanism">The model twin runs on a profile of the machine the live '
            "experiment ran on, calibrated on the live baseline only; in the figures the model is solid, the live "
            "measurements dashed with open markers, and in the claims tables the reference is the live value.</p>"
        )
    if pid:
        p = PAPERS[pid]
        return (
            f'<section class="paper" id="paper-{pid}"><h2>paper {p["number"]} — {html.escape(p["title"])} '
            f'(<code>{pid}</code>)</h2><p class="mechanism">{html.escape(p["mechanism"])}</p>'
        )
    return '<section class="paper" id="paper-other"><h2>Reference experiments</h2>'


def _head(claims, nscen, nfig, rows, thumbs, prov, order, cl: Claims) -> str:
    prim = [c for c in claims if c.get("primary", True)]
    alt = [c for c in claims if not c.get("primary", True)]
    cal = Tally.of([c for c in prim if c.get("role") == "calibration"])
    pred = Tally.of([c for c in prim if c.get("role", "prediction") == "prediction"])
    stale = sum(1 for c in claims if c.get("finding_stale"))
    gaps = [r.gap for r in rows if r.gap is not None and r.kind == "paper"]
    worst = max(gaps, key=lambda g: g.factor) if gaps else None
    zeros = sum(len(r.zeros) for r in rows if r.kind == "paper")
    worst_s = (
        f" Largest gap between the model and a paper: {_summary.gap_html(worst, _fmt, cl.href(worst.claim))} "
        f"({html.escape(worst.claim['scenario'])})"
        + (f"; {zeros} claims where the model has 0 against a published value" if zeros else "")
        + "."
        if worst
        else ""
    )
    return (
        "<h1>hostsim: the papers re-run</h1>"
        + _provenance_html(prov)
        + _nav(order)
        + f'<p class="intro" id="summary">{nscen} experiments, {nfig} figures, {len(prim)} claims '
        f"(and {len(alt)} alternative readings, counted apart). "
        f'Calibration claims passed <b id="total-calibration">{cal.passed} / {cal.judged}</b>, prediction claims passed '
        f'<b id="total-prediction">{pred.passed} / {pred.judged}</b> (passed / judged over seeds; '
        f"{cal.not_applicable + pred.not_applicable} not testable apart).{worst_s}"
        + (f" {stale} findings are marked stale (measured on another model)." if stale else "")
        + "</p>"
        + _summary.summary_html(rows, thumbs, _fmt, cl.href)
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hostsim.report", description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="the directory `hostsim reproduce --out` wrote")
    ap.add_argument("--readme", type=Path, help="rewrite this README's summary table from the same results")
    a = ap.parse_args(argv)
    index = build(a.out, log=lambda m: print(m, file=sys.stderr))
    print(f"report: {index}", file=sys.stderr)
    if a.readme:
        a.readme.write_text(readme_from(a.out, a.readme.read_text()))
        print(f"readme: {a.readme}", file=sys.stderr)
    return 0


def _load(out: Path):
    """A reproduce directory's claims, scenario directories, their infos, their groups (paper id,
    "extensions", "live" or "") and the live runs' records."""
    claims = json.loads((out / "expectations.json").read_text()) if (out / "expectations.json").exists() else []
    scen_dirs = sorted(d for d in out.iterdir() if (d / "results.csv").exists())
    infos = {d: _scenario_info(d) for d in scen_dirs}
    groups: dict[str, list[Path]] = {}
    for d in scen_dirs:
        groups.setdefault(group_of(d, infos[d]), []).append(d)
    live_runs = {}
    for d in groups.get(LIVE, []):
        rec = next(iter(sorted(d.glob("*.run.json"))), None)
        live_runs[d.name] = json.loads(rec.read_text()) if rec else None
    return claims, scen_dirs, infos, groups, live_runs


def summary_rows(out: str | Path) -> list:
    """The summary's rows for a reproduce directory (without drawing anything)."""
    claims, scen_dirs, infos, groups, live_runs = _load(Path(out))
    cl = Claims(claims, scen_dirs, infos)
    return _summary.rows(groups, infos, claims, live_runs, figures_of, cl.metric)


def readme_from(out: str | Path, readme_text: str) -> str:
    return _summary.replace_readme_block(readme_text, _summary.readme_table(summary_rows(out)))


if __name__ == "__main__":
    sys.exit(main())
