"""The HTML report of `hostsim reproduce`: for each paper, what its mechanism does, each of its
figures and tables re-drawn from the simulation with the paper's values on the same axes, how its
baseline was calibrated, and its claims in two tables, calibration claims (fitted to) apart from
prediction claims (never tuned against), each with its verdict over seeds, 95% intervals, the
fraction of seeds on which it holds, and what was found about it (failing claims shown, never
hidden). Scenarios that carry a paper's experiment further (`extends = "<paper id>"`) are drawn
apart, under "Extensions": they are not reproductions. Static files; opens from disk.

    python -m hostsim.report out          # reads out/<scenario>/results.csv, out/expectations.json
                                          # writes out/report/index.html and out/report/figures/*.svg
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

from . import _native  # noqa: E402
from . import plot  # noqa: E402
from .papers import PAPERS, paper_of  # noqa: E402

CSS = """
body { font-family: sans-serif; max-width: 1100px; margin: 1em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 2px solid #888; margin-top: 2em; } h3 { margin-top: 1.5em; }
.mechanism { background: #f4f4f8; padding: .6em 1em; border-left: 4px solid #557; }
figure { display: inline-block; margin: .5em; vertical-align: top; }
figure img { width: 520px; border: 1px solid #ddd; }
figcaption { font-size: .85em; max-width: 520px; }
table.claims { border-collapse: collapse; width: 100%; font-size: .85em; margin: .5em 0 1em; }
table.claims th, table.claims td { border: 1px solid #ccc; padding: .25em .4em; text-align: left; vertical-align: top; }
tr.pass td.verdict { background: #d7f5d7; font-weight: bold; }
tr.fail td.verdict { background: #f8d0d0; font-weight: bold; }
tr.inconclusive td.verdict { background: #fbeecb; font-weight: bold; }
tr.not_applicable td.verdict { background: #e4e4e4; font-weight: bold; }
td .finding { color: #444; font-size: .95em; }
table.calib { border-collapse: collapse; font-size: .85em; margin: .3em 0 1em; }
table.calib th, table.calib td { border: 1px solid #ccc; padding: .2em .4em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-family: monospace; white-space: nowrap; }
.summary { font-size: 1.1em; }
"""

OPS = {"<": "<", "<=": "≤", ">": ">", ">=": "≥", "approx": "≈", "outside": "≉"}
EXTENSIONS = "extensions"  # the group of scenarios with `extends = "<paper id>"`


def _fmt(v) -> str:
    if v is None:
        return "–"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return html.escape(str(v))
    if f != f:
        return "NaN"
    if 1e4 <= abs(f) < 1e15:
        return f"{f:,.0f}"
    return f"{f:.4g}"


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


VERDICTS = {"pass": "PASS", "fail": "FAIL", "inconclusive": "INCONCLUSIVE", "not_applicable": "N/A"}


def verdict_of(c: dict) -> str:
    """A claim's verdict (older expectations.json files only have `pass`)."""
    return c.get("verdict") or ("pass" if c.get("pass") else "fail")


def tally(claims: list[dict]) -> str:
    n = {v: sum(verdict_of(c) == v for c in claims) for v in VERDICTS}
    s = f"{n['pass']} pass, {n['fail']} fail"
    if n["inconclusive"]:
        s += f", {n['inconclusive']} inconclusive"
    if n["not_applicable"]:
        s += f", {n['not_applicable']} not applicable"
    return s


def _ci(v, ci, seeds) -> str:
    if v is None:
        return "–"
    if ci and (seeds or 1) > 1 and ci[0] != ci[1]:
        return f"{_fmt(v)}<br><small>[{_fmt(ci[0])}, {_fmt(ci[1])}]</small>"
    return _fmt(v)


def _claims_table(claims: list[dict], tid: str) -> str:
    rows = []
    for c in claims:
        v = verdict_of(c)
        notes = ""
        if c.get("finding") and v != "pass":
            label = "why not applicable" if v == "not_applicable" else "finding"
            notes += f'<br><span class="finding"><b>{label}:</b> {html.escape(c["finding"])}</span>'
        if c.get("error"):
            notes += f"<br><i>{html.escape(c['error'])}</i>"
        op = OPS.get(c.get("op"), html.escape(str(c.get("op"))))
        if c.get("op") in ("approx", "outside") and c.get("tolerance") is not None:
            # An absolute tolerance is judged on sim - target, a relative one on the ratio.
            absolute = c.get("judged") == "sim - target"
            op += f" (±{c['tolerance']:g})" if absolute else f" (±{c['tolerance'] * 100:g}%)"
        seeds = c.get("seeds") or 1
        judged = ""
        if c.get("paired") and seeds > 1 and c.get("judged_mean") is not None:
            judged = (f"<br><small>paired {html.escape(c.get('judged', ''))}: "
                      f"{_ci(c['judged_mean'], c.get('judged_ci'), seeds)}</small>")
        held = c.get("held")
        held_s = "–" if held is None else f"{held * 100:.0f}% of {seeds}"
        rows.append(
            f'<tr class="{v}"><td class="verdict">{VERDICTS[v]}</td>'
            f"<td>{html.escape(c['scenario'])}</td><td>{html.escape(c['claim'])}{notes}</td>"
            f"<td>{html.escape(c.get('paper') or '')}</td><td class=\"num\">{_fmt(c.get('paper_value'))}</td>"
            f"<td class=\"num\">{_ci(c.get('sim'), c.get('sim_ci'), seeds)}</td>"
            f"<td class=\"num\">{op} {_ci(c.get('rhs'), c.get('rhs_ci'), seeds)}{judged}</td>"
            f"<td class=\"num\">{held_s}</td></tr>"
        )
    return (
        f'<table class="claims" id="{tid}"><thead><tr><th>verdict</th><th>scenario</th><th>claim</th>'
        "<th>paper</th><th>paper value</th><th>simulated (mean [95% CI])</th><th>compared with</th>"
        f"<th>holds on seeds</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


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
        rows.append(f"<tr><td><code>{html.escape(p['name'])}</code></td><td><code>{html.escape(p['key'])}</code>{off}</td>"
                    f"<td class=\"num\">{_fmt(p['min'])} … {_fmt(p['max'])}</td><td class=\"num\">{_fmt(v) if v is not None else 'not fitted'}</td>"
                    f"<td>{html.escape(p.get('source') or '')}</td></tr>")
    if ov:
        how = ", ".join(f"{html.escape(str(k))}: {html.escape(str(fit[k]))}" for k in
                        ["date", "optimizer", "evaluations", "objective", "objective_start", "seeds"] if k in fit)
        head = (f"<p><b>Calibration</b> (overlay <code>{html.escape(ov['path'])}</code>): fitted to this scenario's and "
                f"its siblings' <i>calibration</i> claims only. {how}</p>")
    else:
        head = (f"<p><b>Calibration: not calibrated</b> (no overlay <code>calibration/{html.escape(cal['name'])}.toml</code>; "
                "the scenario's own values were used; run <code>hostsim calibrate</code>).</p>")
    return (head + '<table class="calib"><thead><tr><th>parameter</th><th>key</th><th>bounds</th><th>value</th>'
            f"<th>source of the bounds</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _scenario_info(d: Path) -> dict:
    f = d / "scenario.toml"
    if f.exists():
        return json.loads(_native.scenario_info(str(f.resolve())))
    return json.loads(_native.scenario_info(d.name))  # a built-in scenario of that name


def build(out: str | Path, log=None) -> Path:
    """Write ``out/report/index.html`` (and its figures) from a reproduce directory."""
    out = Path(out)
    rep = out / "report"
    figdir = rep / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    for old in figdir.glob("*.svg"):
        old.unlink()
    claims = json.loads((out / "expectations.json").read_text()) if (out / "expectations.json").exists() else []
    scen_dirs = sorted(d for d in out.iterdir() if (d / "results.csv").exists())
    infos = {d: _scenario_info(d) for d in scen_dirs}
    groups: dict[str, list[Path]] = {}
    for d in scen_dirs:
        key = EXTENSIONS if infos[d].get("extends") else paper_of(d.name) or ""
        groups.setdefault(key, []).append(d)
    order = [p for p in PAPERS if p in groups] + [k for k in ("", EXTENSIONS) if k in groups]
    body = []
    nfig = 0
    for pid in order:
        if pid == EXTENSIONS:
            body.append('<section class="paper" id="extensions"><h2>Extensions: the papers\' experiments carried '
                        "further (not reproductions)</h2>")
            body.append('<p class="mechanism">Each of these runs a paper\'s experiment on another machine, kernel or '
                        "mechanism than the paper had. No paper measured them: their claims state what the model "
                        "predicts, and marks show only the paper's own inputs.</p>")
        elif pid:
            p = PAPERS[pid]
            body.append(f'<section class="paper" id="paper-{pid}"><h2>paper {p["number"]} — {html.escape(p["title"])} '
                        f"(<code>{pid}</code>)</h2>")
            body.append(f'<p class="mechanism">{html.escape(p["mechanism"])}</p>')
        else:
            body.append('<section class="paper" id="paper-other"><h2>Reference experiments</h2>')
        pclaims = []
        for d in groups[pid]:
            inf = infos[d]
            df = pd.read_csv(d / "results.csv")
            ext = inf.get("extends")
            if ext:
                paper = f"paper {PAPERS[ext]['number']} ({ext})" if ext in PAPERS else ext
                body.append(f'<h3 class="extension">{html.escape(d.name)} <small>— extends {html.escape(paper)}, '
                            "not a reproduction</small></h3>")
            else:
                body.append(f"<h3>{html.escape(d.name)}</h3>")
            body.append(f"<p>{html.escape(inf['description'])}</p>")
            body.append(_calibration_html(inf))
            figs = inf["figures"] or auto_figures(inf)
            for k, spec in enumerate(figs):
                spec = dict(spec)
                meas = d / Path(spec["measured"]).name if spec.get("measured") else None
                spec["measured"] = pd.read_csv(meas) if meas is not None and meas.exists() else None
                fig = plot.figure(df, **spec)
                name = f"{d.name}-{k + 1}.svg"
                fig.savefig(figdir / name, format="svg", metadata={"Date": None})
                plt.close(fig)
                nfig += 1
                cap = html.escape(spec["title"] + (f" — {spec['paper']}" if spec.get("paper") else ""))
                body.append(
                    f'<figure class="fig"><img src="figures/{name}" alt="{cap}" '
                    f"onload=\"this.dataset.loaded='1'\"><figcaption>{cap}. Lines/bars: simulated; "
                    + ("dashed: measured (" + html.escape(spec.get("measured_label") or "measured") + "); "
                       if spec["measured"] is not None else "")
                    + ("black: values taken from the paper (no paper measured this setting)." if ext
                       else "black: the paper's published values.")
                    + "</figcaption></figure>"
                )
                if log:
                    log(f"  figure {name}")
            pclaims += [c for c in claims if c["scenario"] in (d.name, inf["name"])]
        if pclaims:
            tid = pid or "other"
            body.append(f'<h3 id="claims-{tid}">Claims: {tally(pclaims)}</h3>')
            for role, title, note in [
                ("calibration", "Calibration claims", "about the baseline system; the calibrated parameters were fitted to "
                 "these, so agreement here is by construction, not a reproduction"),
                ("prediction", "Prediction claims", "everything else: nothing was tuned against these"),
            ]:
                rc = [c for c in pclaims if c.get("role", "prediction") == role]
                if rc:
                    body.append(f"<h4>{title} ({tally(rc)})</h4><p><small>{note}.</small></p>")
                    body.append(_claims_table(rc, f"claims-{tid}-{role}"))
        body.append("</section>")
    pred = [c for c in claims if c.get("role", "prediction") == "prediction"]
    cal = [c for c in claims if c.get("role") == "calibration"]
    head = (
        f"<h1>hostsim: the papers re-run</h1><p class=\"summary\" id=\"summary\">{len(scen_dirs)} experiments, "
        f"{nfig} figures, {len(claims)} claims: <b>{tally(claims)}</b> "
        f"(predictions: {tally(pred)}; calibration: {tally(cal)}). "
        "Every claim the model does not reproduce is listed as failing. Claims are judged over seeds: "
        "<i>inconclusive</i> means the 95% confidence interval straddles the claim's boundary.</p>"
    )
    page = (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>hostsim report</title>"
        f"<style>{CSS}</style></head><body>{head}{''.join(body)}</body></html>\n"
    )
    (rep / "index.html").write_text(page)
    return rep / "index.html"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hostsim.report", description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="the directory `hostsim reproduce --out` wrote")
    a = ap.parse_args(argv)
    index = build(a.out, log=lambda m: print(m, file=sys.stderr))
    print(f"report: {index}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
