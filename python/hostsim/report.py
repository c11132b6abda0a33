"""The HTML report of `hostsim reproduce`. It opens with a summary (one row per paper, extension,
reference and live experiment: the mechanism, calibration and prediction claims passed, the key
claims with why they fail, a small headline figure, the live status; every number counted from
expectations.json), then for each paper what its mechanism does, each of its figures and tables
re-drawn from the simulation with the paper's values on the same axes, how its baseline was
calibrated, and its claims in two tables, calibration claims apart from predictions, each with
its verdict over seeds, 95% intervals, the fraction of seeds on which it holds, and what was
found about it (failing claims shown, never hidden; a finding whose own numbers were measured on
another model marked stale). Scenarios that carry a paper's experiment further (`extends = "<paper
id>"`) are drawn apart, under "Extensions": they are not reproductions. Static files; opens from
disk; Japanese quotes render from an embedded font subset (`_fonts.py`).

    python -m hostsim.report out                      # reads out/<scenario>/results.csv, out/expectations.json
                                                      # writes out/report/index.html and out/report/figures/*.svg
    python -m hostsim.report out --readme README.md   # also rewrites the README's summary table
"""

from __future__ import annotations

import argparse
import html
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "hostsim"  # stable ids: equal results, equal files
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from . import (  # noqa: E402
    _fonts,
    _native,
    _summary,
    plot,  # noqa: E402
)
from ._summary import Tally, verdict_of  # noqa: E402
from .papers import PAPERS, paper_of  # noqa: E402

CSS = """
body { font-family: sans-serif, '{cjk}'; max-width: 1300px; margin: .6em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.35em; margin: .2em 0; } h2 { border-bottom: 2px solid #888; margin-top: 2em; } h3 { margin-top: 1.5em; }
p.intro { font-size: .86em; margin: .2em 0 .5em; }
.mechanism { background: #f4f4f8; padding: .6em 1em; border-left: 4px solid #557; }
figure { display: inline-block; margin: .5em; vertical-align: top; }
figure img { width: 560px; border: 1px solid #ddd; }
figcaption { font-size: .85em; max-width: 560px; }
table.summary { border-collapse: collapse; width: 100%; font-size: .78em; }
table.summary th { background: #eee; text-align: left; padding: .2em .35em; font-weight: 600; }
table.summary td { border-top: 1px solid #ccc; padding: .15em .35em; vertical-align: middle; }
table.summary td.name { width: 150px; } table.summary td.name a { font-weight: bold; }
table.summary .sub { color: #666; font-size: .9em; max-width: 150px; overflow: hidden; white-space: nowrap; text-overflow: ellipsis; }
table.summary td.line { max-width: 230px; }
table.summary .clamp, table.summary .key { display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 2; overflow: hidden; }
table.summary td.keys { max-width: 420px; } table.summary .key { font-size: .95em; }
table.summary .key.pass b { color: #1a7f1a; } table.summary .key.fail b { color: #c0392b; }
table.summary .key.inconclusive b { color: #b7791f; }
table.summary .alt { color: #555; font-size: .9em; }
td.tally { text-align: center; font-weight: bold; white-space: nowrap; font-family: monospace; font-size: 1.05em; }
td.tally.all { background: #d7f5d7; } td.tally.some { background: #fbeecb; } td.tally.zero { background: #f8d0d0; }
img.thumb { width: 104px; height: 46px; display: block; border: 1px solid #ddd; }
td.live { max-width: 170px; font-size: .92em; }
table.claims { border-collapse: collapse; width: 100%; font-size: .85em; margin: .5em 0 1em; }
table.claims th, table.claims td { border: 1px solid #ccc; padding: .25em .4em; text-align: left; vertical-align: top; }
tr.pass td.verdict { background: #d7f5d7; font-weight: bold; }
tr.fail td.verdict { background: #f8d0d0; font-weight: bold; }
tr.inconclusive td.verdict { background: #fbeecb; font-weight: bold; }
tr.not_applicable td.verdict { background: #e4e4e4; font-weight: bold; }
td .finding { color: #333; font-size: .95em; display: block; margin-top: .2em; }
td details { font-size: .9em; color: #444; } td details summary { cursor: pointer; color: #557; }
.stale { background: #fde2c4; color: #7a3e00; font-size: .85em; padding: 0 .3em; border-radius: 3px; }
table.calib { border-collapse: collapse; font-size: .85em; margin: .3em 0 1em; }
table.calib th, table.calib td { border: 1px solid #ccc; padding: .2em .4em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-family: monospace; white-space: nowrap; }
"""

OPS = {"<": "<", "<=": "≤", ">": ">", ">=": "≥", "approx": "≈", "outside": "≉"}
EXTENSIONS = "extensions"  # the group of scenarios with `extends = "<paper id>"`
LIVE = "live"  # the group of live experiments' model twins (`live-<paper id>`)
VERDICTS = {"pass": "PASS", "fail": "FAIL", "inconclusive": "INCONCLUSIVE", "not_applicable": "N/A"}


def _fmt(v) -> str:
    if v is None:
        return "–"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return html.escape(str(v))
    if f != f:
        return "NaN"
    # As crates/scenario/src/finding.rs's fmt_num: whole numbers from 1,000 and anything from
    # 10,000 with thousands separators, else 4 significant digits.
    if 1e4 <= abs(f) < 1e15 or (1e3 <= abs(f) < 1e4 and f == round(f)):
        return f"{f:,.0f}"
    return f"{f:.4g}"


def tally(claims: list[dict]) -> str:
    t = Tally.of(claims)
    s = f"{t.passed} pass, {t.failed} fail"
    if t.inconclusive:
        s += f", {t.inconclusive} inconclusive"
    if t.not_applicable:
        s += f", {t.not_applicable} not applicable"
    return s


def auto_figures(inf: dict) -> list[dict]:
    """Figures for a scenario without `[[figure]]`: each claimed metric against the first swept
    numeric key (else one bar per variant), with the claims' paper values as marks."""
    sweep = [k for k, vals in inf["sweep"] if k != "seed" and all(isinstance(v, (int, float)) for v in vals)]
    x = sweep[0] if sweep else None
    figs: dict[str, dict] = {}
    for e in inf["expects"]:
        f = figs.setdefault(e["metric"], {"title": e["metric"], "x": x, "y": e["metric"], "marks": [], "paper": ""})
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


def censored(side: dict, inf: dict, value) -> str:
    """ "≥ " when `value` is a swept key's largest value reached by a `max` over it (the true value
    lies at or beyond the end of the sweep), "≤ " for the smallest by a `min`; else ""."""
    if value is None or not side:
        return ""
    sweep = dict((k, v) for k, v in inf["sweep"])
    vals = [float(v) for v in sweep.get(side.get("metric"), []) if isinstance(v, (int, float))]
    if not vals:
        return ""
    reduce = side.get("across") or side.get("reduce")
    if reduce == "max" and float(value) >= max(vals):
        return "≥ "
    if reduce == "min" and float(value) <= min(vals):
        return "≤ "
    return ""


def _ci(v, ci, seeds, bound="") -> str:
    if v is None:
        return "–"
    if ci and (seeds or 1) > 1 and ci[0] != ci[1]:
        return f"{bound}{_fmt(v)}<br><small>[{_fmt(ci[0])}, {_fmt(ci[1])}]</small>"
    return bound + _fmt(v)


def _finding_html(c: dict) -> str:
    out = ""
    v = verdict_of(c)
    if c.get("finding"):
        label = "why not applicable" if v == "not_applicable" else "finding"
        stale = ""
        if c.get("finding_stale"):
            stale = (
                f' <span class="stale" title="its own numbers were measured on model {html.escape(c.get("finding_model") or "")}; '
                'the model has changed since: re-check them">stale</span>'
            )
        out += f'<span class="finding"><b>{label}:</b> {html.escape(c["finding"])}{stale}</span>'
    if c.get("detail"):
        out += f"<details><summary>detail</summary>{html.escape(c['detail'])}</details>"
    if c.get("error"):
        out += f"<i>{html.escape(c['error'])}</i>"
    return out


def _claims_table(claims: list[dict], tid: str, specs: dict) -> str:
    rows = []
    for c in claims:
        v = verdict_of(c)
        spec, inf = specs.get((c["scenario"], c["claim"]), ({}, None))
        op = OPS.get(c.get("op"), html.escape(str(c.get("op"))))
        if c.get("op") in ("approx", "outside") and c.get("tolerance") is not None:
            # An absolute tolerance is judged on sim - target, a relative one on the ratio.
            absolute = c.get("judged") == "sim - target"
            op += f" (±{c['tolerance']:g})" if absolute else f" (±{c['tolerance'] * 100:g}%)"
        seeds = c.get("seeds") or 1
        judged = ""
        if c.get("paired") and seeds > 1 and c.get("judged_mean") is not None:
            judged = (
                f"<br><small>paired {html.escape(c.get('judged', ''))}: "
                f"{_ci(c['judged_mean'], c.get('judged_ci'), seeds)}</small>"
            )
        held = c.get("held")
        held_s = "–" if held is None else f"{held * 100:.0f}% of {seeds}"
        reading = (
            f" <small>[reading: {html.escape(c['reading'])}{'' if c.get('primary', True) else ', alternative'}]</small>"
            if c.get("reading")
            else ""
        )
        sim_b = censored(spec, inf, c.get("sim")) if inf else ""
        rhs_b = censored(spec.get("rhs") or {}, inf, c.get("rhs")) if inf else ""
        rows.append(
            f'<tr class="{v}"><td class="verdict">{VERDICTS[v]}</td>'
            f"<td>{html.escape(c['scenario'])}</td><td>{html.escape(c['claim'])}{reading}{_finding_html(c)}</td>"
            f'<td>{html.escape(c.get("paper") or "")}</td><td class="num">{_fmt(c.get("paper_value"))}</td>'
            f'<td class="num">{_ci(c.get("sim"), c.get("sim_ci"), seeds, sim_b)}</td>'
            f'<td class="num">{op} {_ci(c.get("rhs"), c.get("rhs_ci"), seeds, rhs_b)}{judged}</td>'
            f'<td class="num">{held_s}</td></tr>'
        )
    return (
        f'<table class="claims" id="{tid}"><thead><tr><th>verdict</th><th>scenario</th><th>claim and finding</th>'
        "<th>paper</th><th>paper value</th><th>simulated (mean [95% interval])</th><th>compared with</th>"
        f"<th>holds on seeds</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _overlay_name(ov: dict, cal: dict) -> str:
    """The overlay as the repository names it (`calibration/NAME.toml`), never the absolute path
    of the machine that built the report."""
    return f"calibration/{Path(str(ov.get('path') or cal['name'])).stem}.toml"


def _calibration_html(inf: dict) -> str:
    """How a scenario's baseline was calibrated: the fitted parameters, their bounds and sources,
    and the overlay's record of the fit (or that it was not calibrated)."""
    params = inf.get("calibrate") or []
    cal = inf.get("calibration")
    if not params or not cal:
        return ""
    ov = cal.get("overlay")
    values = (ov or {}).get("values", {})
    fit = (ov or {}).get("fit", {})
    rows = []
    for p in params:
        v = values.get(p["name"])
        off = f" (+{_fmt(p['offset'])})" if p.get("offset") else ""
        rows.append(
            f"<tr><td><code>{html.escape(p['name'])}</code></td><td><code>{html.escape(p['key'])}</code>{off}</td>"
            f'<td class="num">{_fmt(p["min"])} … {_fmt(p["max"])}</td><td class="num">{_fmt(v) if v is not None else "not fitted"}</td>'
            f"<td>{html.escape(p.get('source') or '')}</td></tr>"
        )
    if ov:
        how = ", ".join(
            f"{html.escape(str(k))}: {html.escape(str(fit[k]))}"
            for k in ["date", "optimizer", "evaluations", "objective", "objective_start", "seeds"]
            if k in fit
        )
        head = (
            f"<p><b>Calibration</b> (overlay <code>{html.escape(_overlay_name(ov, cal))}</code>): fitted to this scenario's and "
            f"its siblings' <i>calibration</i> claims only. {how}</p>"
        )
    else:
        head = (
            f"<p><b>Calibration: not calibrated</b> (no overlay <code>calibration/{html.escape(cal['name'])}.toml</code>; "
            "the scenario's own values were used; run <code>hostsim calibrate</code>).</p>"
        )
    return (
        head + '<table class="calib"><thead><tr><th>parameter</th><th>key</th><th>bounds</th><th>value</th>'
        f"<th>source of the bounds</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def fitted(inf: dict) -> bool:
    """Were this scenario's parameters fitted (an overlay holds values for them)?"""
    cal = inf.get("calibration") or {}
    return bool(inf.get("calibrate")) and bool((cal.get("overlay") or {}).get("values"))


def _calibration_note(names: list[str], infos_by_name: dict) -> str:
    fit = [n for n in names if fitted(infos_by_name[n])]
    if fit and len(fit) == len(names):
        return (
            "about the baseline system; parameters were fitted to these (see each scenario's calibration table), "
            "so agreement here is by construction, not a reproduction"
        )
    if fit:
        return (
            f"about the baseline system; parameters were fitted to those of {', '.join(fit)} (agreement there is by "
            "construction); nothing was fitted to the others"
        )
    return (
        "about the baseline system; nothing was fitted to them (no calibrated parameters): each is a test of the model"
    )


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


def _save(fig, path: Path) -> None:
    fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight", pad_inches=0.08)
    plt.close(fig)


def _draw(d: Path, df: pd.DataFrame, spec: dict, path: Path, thumbnail: bool = False) -> dict:
    spec = dict(spec)
    meas = d / Path(spec["measured"]).name if spec.get("measured") else None
    spec["measured"] = pd.read_csv(meas) if meas is not None and meas.exists() else None
    _save(plot.figure(df, thumbnail=thumbnail, **spec), path)
    return spec


def build(out: str | Path, log=None) -> Path:
    """Write ``out/report/index.html`` (and its figures) from a reproduce directory."""
    out = Path(out)
    rep = out / "report"
    figdir = rep / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    for old in figdir.glob("*.svg"):
        old.unlink()
    claims, scen_dirs, infos, groups, live_runs = _load(out)
    by_name = {d.name: infos[d] for d in scen_dirs}
    # (scenario, claim) -> (the claim as written, its scenario's info): for censored values.
    specs = {}
    for d in scen_dirs:
        for e in infos[d]["expects"]:
            for name in (d.name, infos[d]["name"]):
                specs.setdefault((name, e["claim"]), (e, infos[d]))
    frames = {d: pd.read_csv(d / "results.csv") for d in scen_dirs}
    rows = _summary.rows(groups, infos, claims, live_runs, figures_of)
    thumbs = {}
    for r in rows:
        if r.headline:
            sname, k = r.headline
            d = out / sname
            name = f"thumb-{r.key}.svg"
            _draw(d, frames[d], figures_of(infos[d])[k], figdir / name, thumbnail=True)
            thumbs[r.key] = f"figures/{name}"
    order = [p for p in PAPERS if p in groups] + [k for k in (EXTENSIONS, "", LIVE) if k in groups]
    body = []
    nfig = 0
    for pid in order:
        body.append(_section_head(pid))
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
            body.append(f"<p>{html.escape(inf['description'])}</p>")
            body.append(_calibration_html(inf))
            for k, spec in enumerate(figures_of(inf)):
                name = f"{d.name}-{k + 1}.svg"
                drawn = _draw(d, df, spec, figdir / name)
                nfig += 1
                cap = html.escape(spec["title"] + (f" — {spec['paper']}" if spec.get("paper") else ""))
                body.append(
                    f'<figure class="fig"><img src="figures/{name}" alt="{cap}" '
                    f"onload=\"this.dataset.loaded='1'\"><figcaption>{cap}. Colours: simulated; "
                    + (
                        "dashed squares: measured (" + html.escape(spec.get("measured_label") or "measured") + "); "
                        if drawn["measured"] is not None
                        else ""
                    )
                    + (
                        "black: values taken from the paper (no paper measured this setting)."
                        if ext
                        else "black: the paper's published values."
                    )
                    + "</figcaption></figure>"
                )
                if log:
                    log(f"  figure {name}")
            body.append(_live_points_html(d, df, figures_of(inf)))
            pclaims += [c for c in claims if c["scenario"] in (d.name, inf["name"])]
        if pclaims:
            tid = pid or "other"
            body.append(f'<h3 id="claims-{tid}">Claims: {tally(pclaims)}</h3>')
            names = [d.name for d in groups[pid]]
            for role, title, note in [
                ("calibration", "Calibration claims", _calibration_note(names, by_name)),
                ("prediction", "Prediction claims", "everything else: nothing was tuned against these"),
            ]:
                rc = [c for c in pclaims if c.get("role", "prediction") == role]
                if rc:
                    body.append(f"<h4>{title} ({tally(rc)})</h4><p><small>{html.escape(note)}.</small></p>")
                    body.append(_claims_table(rc, f"claims-{tid}-{role}", specs))
        body.append("</section>")
    head = _head(claims, len(scen_dirs), nfig, rows, thumbs)
    text = head + "".join(body)
    font_css, font = _fonts.font_face_css(text)
    if font is None and any(_fonts.is_cjk(ch) for ch in text) and log:
        log("  warning: no CJK font found (apt-get install fonts-ipaexfont-gothic): Japanese may show as boxes")
    page = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>hostsim report</title>'
        f"<style>{font_css}{CSS.replace('{cjk}', _fonts.FAMILY)}</style></head><body>{text}</body></html>\n"
    )
    (rep / "index.html").write_text(page)
    return rep / "index.html"


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
    """The table under a twin's figures: each measured point (repetitions averaged) and the
    model's prediction beside it."""
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
            + "".join(f"<th>{html.escape(y)}: {html.escape(label)}</th><th>model</th>" for y in ys)
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
            f'<table class="claims live-points" id="live-points-{html.escape(d.name)}"><caption>{html.escape(label)} '
            f"({html.escape(name)}) point by point, the model's prediction beside each: the model's mean over its seeds of the "
            f"variant drawn in that colour, read at the rate the {html.escape(label)} run achieved by linear interpolation "
            "between its swept points (– outside them); the measured value is the mean of its valid repetitions "
            "(<i>reps</i> 2/3: one of three left out because the generator fell below its rate).</caption>"
            f"<thead>{head}</thead><tbody>{''.join(body)}</tbody></table>"
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
            "experiment ran on, calibrated on the live baseline only; dashed lines are the live measurements.</p>"
        )
    if pid:
        p = PAPERS[pid]
        return (
            f'<section class="paper" id="paper-{pid}"><h2>paper {p["number"]} — {html.escape(p["title"])} '
            f'(<code>{pid}</code>)</h2><p class="mechanism">{html.escape(p["mechanism"])}</p>'
        )
    return '<section class="paper" id="paper-other"><h2>Reference experiments</h2>'


def _head(claims, nscen, nfig, rows, thumbs) -> str:
    prim = [c for c in claims if c.get("primary", True)]
    cal = Tally.of([c for c in prim if c.get("role") == "calibration"])
    pred = Tally.of([c for c in prim if c.get("role", "prediction") == "prediction"])
    stale = sum(1 for c in claims if c.get("finding_stale"))
    return (
        "<h1>hostsim: the papers re-run</h1>"
        f'<p class="intro" id="summary">{nscen} experiments, {nfig} figures, {len(claims)} claims. '
        f'Calibration claims passed <b id="total-calibration">{cal.passed} / {cal.judged}</b>, prediction claims passed '
        f'<b id="total-prediction">{pred.passed} / {pred.judged}</b> (passed / judged over seeds: <i>inconclusive</i> '
        "means the 95% interval straddles the claim's boundary; claims the model cannot test are counted apart). "
        "Every claim the model does not reproduce is listed as failing, with what was found about why"
        + (f"; {stale} findings are marked stale (measured on another model)" if stale else "")
        + ".</p>"
        + _summary.summary_html(rows, thumbs)
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
    claims, _, infos, groups, live_runs = _load(Path(out))
    return _summary.rows(groups, infos, claims, live_runs, figures_of)


def readme_from(out: str | Path, readme_text: str) -> str:
    return _summary.replace_readme_block(readme_text, _summary.readme_table(summary_rows(out)))


if __name__ == "__main__":
    sys.exit(main())
