"""The report's page around its sections: the provenance line, the table of contents with the
"failing claims only" filter, the verdict rule with how the verdicts move when its thresholds
do, the glossary, and the page's style and script."""

from __future__ import annotations

import html
import json
import re
import shlex
from pathlib import Path

from . import verdicts
from .papers import PAPERS

EXTENSIONS = "extensions"  # the group of scenarios with `extends = "<paper id>"`
LIVE = "live"  # the group of live experiments' model twins (`live-<paper id>`)


def _provenance(out: Path) -> dict | None:
    p = out / "provenance.json"
    try:
        return json.loads(p.read_text()) if p.exists() else None
    except (OSError, ValueError):
        return None


def _command(argv: list[str]) -> str:
    """The command as run, with the program's and any absolute path's directories left out (a
    path of the machine that ran it says nothing to a reader)."""
    out = []
    for i, a in enumerate(argv):
        if i == 0:
            a = Path(a).name
        elif a.startswith("/"):
            out.append("…/" + shlex.quote(Path(a).name))
            continue
        out.append(shlex.quote(a))
    return " ".join(out)


def _provenance_html(prov: dict | None) -> str:
    if not prov:
        return (
            '<p id="provenance" class="prov missing">Provenance not recorded: this directory has no provenance.json '
            "(made by a hostsim older than the report), so the version, commit, command, date and machine are unknown.</p>"
        )
    m = prov.get("machine") or {}
    commit = prov.get("commit") or "unknown (no git checkout)"
    changes = commit.endswith("+changes")
    commit_s = commit[:12] + (" with local changes" if changes else "") if prov.get("commit") else commit
    when = prov.get("started", "?").replace("T", " ").replace("Z", "")
    end = prov.get("finished", "").replace("T", " ").replace("Z", "")
    if end[:10] == when[:10]:
        end = end[11:]
    machine = ", ".join(
        x
        for x in [
            m.get("os"),
            f"Linux {m['kernel']}" if m.get("kernel") else "",
            f"{m.get('cpus')} × {m.get('cpu_model')}" if m.get("cpu_model") else f"{m.get('cpus', '?')} CPUs",
        ]
        if x
    )
    resumed = prov.get("resumed") or []
    res = f' <span class="warn">{len(resumed)} experiments taken over from an interrupted run</span>' if resumed else ""
    return (
        f'<p id="provenance" class="prov">hostsim <b>{html.escape(prov.get("hostsim", "?"))}</b> · commit '
        f'<code title="{html.escape(commit)}">{html.escape(commit_s)}</code> · model <code>{html.escape(prov.get("model_source_id", "?"))}</code> · '
        f"<code>{html.escape(_command(prov.get('command') or []))}</code> · {html.escape(when)}–{html.escape(end)} UTC · "
        f"{html.escape(machine)}{res}</p>"
    )


def _nav(order: list[str]) -> str:
    links = ['<a href="#summary">summary</a>']
    for pid in order:
        if pid in PAPERS:
            links.append(f'<a href="#paper-{pid}">{PAPERS[pid]["number"]} {pid}</a>')
        elif pid == EXTENSIONS:
            links.append('<a href="#extensions">extensions</a>')
        elif pid == LIVE:
            links.append('<a href="#live">live</a>')
        else:
            links.append('<a href="#paper-other">reference</a>')
    links += ['<a href="#verdict-rule">verdict rule</a>', '<a href="#glossary">glossary</a>']
    return (
        '<nav id="toc">' + " ".join(links) + ' <label id="filter"><input type="checkbox" id="failing-only"> '
        "failing claims only</label></nav>"
    )


def _rule_html(rows) -> str:
    judged = {r.label: (r.tally("calibration").counts(), r.tally("prediction").counts()) for r in rows if r.verdict}
    sens = verdicts.sensitivity(judged)
    trs = []
    for s in sens:
        ch = (
            "; ".join(f"{html.escape(k)}: {a} → <b>{b}</b>" for k, a, b in s["changes"])
            if s["changes"]
            else "<i>no verdict changes</i>"
        )
        moved = f"{s['moved'] * 100:.0f} %" + (" (cannot be met)" if s["moved"] > 1 else "")
        trs.append(
            f"<tr><td>{html.escape(verdicts.THRESHOLD_TEXT[s['threshold']])}</td><td class='num'>{s['value'] * 100:.0f} %</td>"
            f"<td class='num'>{moved}</td><td>{ch}</td></tr>"
        )
    doc = verdicts.__doc__.split("\n\n")
    rule = "".join(f"<p>{_md(p)}</p>" if not p.lstrip().startswith("- ") else _ul(p) for p in doc[1:5] if p.strip())
    return (
        '<section id="verdict-rule"><h2>How a verdict is decided</h2>'
        + rule
        + "<p>How much the verdicts depend on where the thresholds sit: each threshold moved by −10 % and +10 % of "
        "itself, the others kept.</p>"
        '<table class="claims" id="sensitivity"><thead><tr><th>threshold</th><th>value</th><th>moved to</th>'
        f"<th>verdicts that change</th></tr></thead><tbody>{''.join(trs)}</tbody></table>"
        "<p><small>The rule is in <code>python/hostsim/verdicts.py</code>.</small></p></section>"
    )


def _ul(block: str) -> str:
    items = re.split(r"\n- ", "\n" + block.strip())
    return "<ul>" + "".join(f"<li>{_md(i.strip())}</li>" for i in items if i.strip()) + "</ul>"


def _md(s: str) -> str:
    s = html.escape(" ".join(s.split())).replace("&gt;=", "≥")
    s = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", s)
    return re.sub(r"\*(.+?)\*", r"<i>\1</i>", s)


GLOSSARY = """<section id="glossary"><h2>Glossary</h2><dl>
<dt>claim</dt><dd>A statement of a paper (or, for a live experiment, of its live run) written as a comparison the
model's results can be judged on (<code>[[expect]]</code> in the scenario file), with its source (figure, table or
section).</dd>
<dt>calibration claim / prediction claim</dt><dd>A calibration claim is about the baseline system only; a
scenario's <code>[[calibrate]]</code> parameters may be fitted to it, so agreement there is by construction. Every
other claim is a prediction: nothing was tuned against it.</dd>
<dt>reading, primary reading, alternative reading</dt><dd>A paper sentence that can be read in more than one way
(what a quantity counts, which CPUs are averaged) is written as one claim per reading, sharing the sentence's id.
One reading is primary: it is the one counted, in the summary and in the sections alike. The others are
alternative readings, shown and counted apart; they never decide a verdict.</dd>
<dt>range claim</dt><dd>A claim that a value lies between two ends (the paper's "8–15 %") is one claim, judged
against both ends: it passes when both hold and fails when either fails.</dd>
<dt>seeds, 95% interval, holds on seeds</dt><dd>Each point runs with several seeds; a claim is judged on the mean
over seeds and its 95% confidence interval (Student's t). "Holds on seeds" is the share of seeds on which the claim
holds by itself.</dd>
<dt>PASS / FAIL / INCONCLUSIVE</dt><dd>PASS: the whole interval satisfies the claim; FAIL: the whole interval
violates it; INCONCLUSIVE: the interval straddles the claim's boundary, so the seeds cannot tell (an inconclusive
claim counts as judged and not passed).</dd>
<dt>no model value</dt><dd>The model produced no value for the claim on some seed (the quantity is undefined there,
e.g. a gap statistic of a run with no such gap, or no point meets the claim's conditions). The claim fails: the model
did not show what the paper states.</dd>
<dt>not testable (N/A)</dt><dd>Only for one of two reasons, named beside the verdict: <i>no reference</i> (the paper
gives nothing to compare with, e.g. background it cites from another work) or <i>not simulated</i> (the model does not
simulate the quantity; its figures draw it as absent, never as 0). Not testable claims are counted apart, never as
judged.</dd>
<dt>verdict (reproduced, partly reproduced, not reproduced)</dt><dd>Per paper and per live experiment, by the rule
stated <a href="#verdict-rule">above</a>, from the primary claims.</dd>
<dt>largest gap</dt><dd>Among a row's primary claims that do not pass and are compared with a published (or live)
value, the one whose model value is furthest from it, as a factor; ∞ where the model's value is 0.</dd>
<dt>stale finding</dt><dd>A finding whose own numbers were measured on another version of the model; re-check it.</dd>
<dt>extension</dt><dd>A paper's experiment carried to another machine, kernel or mechanism: a prediction of the
model, not a reproduction.</dd>
<dt>live experiment, model twin</dt><dd>A mechanism run on this machine's Linux kernel, measured, and beside it the
model of the same machine (calibrated on the live baseline only) predicting it.</dd>
<dt>calibration overlay, on a bound, not fitted</dt><dd>The file <code>calibration/NAME.toml</code> holds the fitted
values and how they were obtained. A value on a bound of its range: the fit wanted to go further than the sources
allow. Not fitted: the fit's objective did not move from its start, so the starting values stand.</dd>
</dl></section>"""


CSS = """
body { font-family: 'DejaVu Sans', '{cjk}', sans-serif; max-width: 1320px; margin: 0 auto .6em; padding: 0 1em; color: #222; font-size: 14px; }
h1 { font-size: 1.3em; margin: .3em 0 .1em; } h2 { border-bottom: 2px solid #888; margin-top: 1.6em; font-size: 1.25em; }
h3 { margin-top: 1.3em; font-size: 1.1em; } h4 { margin: .8em 0 .2em; }
p.prov { font-size: .76em; color: #444; margin: 0 0 .2em; } p.prov.missing { color: #7a3e00; }
nav#toc { position: sticky; top: 0; z-index: 10; background: #fff; border-bottom: 1px solid #ccc; padding: .2em 0; font-size: .8em; }
nav#toc a { margin-right: .5em; } #filter { margin-left: 1em; white-space: nowrap; font-weight: bold; }
p.intro { font-size: .8em; margin: .3em 0 .3em; }
.mechanism { background: #f4f4f8; padding: .5em 1em; border-left: 4px solid #557; }
.figs { display: flex; flex-wrap: wrap; gap: .4em 1em; align-items: flex-start; }
figure.fig { margin: .3em 0; width: 620px; max-width: 100%; } figure.fig.wide { width: 100%; }
figure.fig .svg { cursor: zoom-in; } figure.fig svg { max-width: 100%; height: auto; display: block; }
figure.zoomed { position: fixed; inset: 0; margin: 0; z-index: 100; width: auto; background: rgba(255,255,255,.98);
  display: flex; flex-direction: column; align-items: center; justify-content: center; padding: 1em; box-sizing: border-box; }
figure.zoomed .svg { cursor: zoom-out; } figure.zoomed svg { width: 96vw; height: 84vh; max-width: none; }
figcaption { font-size: .8em; line-height: 1.35; } figcaption .src { font-weight: normal; color: #555; }
.links { white-space: nowrap; } .links a { color: #446; }
table.summary { border-collapse: collapse; width: 100%; font-size: .76em; }
table.summary th { background: #eee; text-align: left; padding: .15em .3em; font-weight: 600; }
table.summary td { border-top: 1px solid #ccc; padding: .12em .3em; vertical-align: middle; }
table.summary td.name { width: 140px; } table.summary td.name a { font-weight: bold; }
table.summary .sub { color: #666; font-size: .9em; }
table.summary td.verdict { width: 330px; line-height: 1.3; } .badge { text-transform: uppercase; font-size: .9em; }
.reason { font-size: .95em; }
td.gapcell { width: 290px; line-height: 1.25; } .gap .factor { font-size: 1.1em; }
td.gapcell .zeros { display: block; } .glance .zeros { margin-left: .3em; }
table.summary .alt { color: #555; font-size: .9em; }
td.tally { text-align: center; font-weight: bold; white-space: nowrap; font-size: 1.02em; }
.s0 { background: #d73027; color: #fff; } .s1 { background: #fc8d59; } .s2 { background: #fee090; }
.s3 { background: #e0f3f8; } .s4 { background: #91bfdb; } .s5 { background: #4575b4; color: #fff; }
td.tally.none { background: #f4f4f4; }
p.scale { font-size: .72em; margin: .2em 0; } p.scale span { padding: 0 .4em; margin-right: .2em; }
.v-yes { background: #4575b4; color: #fff; } .v-partly { background: #fee090; } .v-no { background: #d73027; color: #fff; }
.v-none { background: #f0f0f0; color: #444; } td.verdict.v-yes a, td.verdict.v-no a { color: #fff; }
span.twin, span.badge { padding: 0 .35em; border-radius: 3px; font-weight: bold; white-space: nowrap; }
img.thumb { width: 104px; height: 46px; display: block; border: 1px solid #ddd; }
td.live { max-width: 170px; font-size: .92em; }
.glance { border: 1px solid #bbb; padding: .3em .8em; margin: .6em 0; background: #fafafa; }
.glance ul { margin: .2em 0; padding-left: 1.2em; } .glance li { margin: .15em 0; font-size: .92em; }
.key.pass b { color: #1a5fb4; } .key.fail b { color: #c0392b; } .key.inconclusive b { color: #b7791f; }
.why { color: #333; }
table.claims { border-collapse: collapse; width: 100%; font-size: .82em; margin: .4em 0 1em; table-layout: fixed; }
table.claims:not(.live-points):not(#sensitivity) th:nth-child(1) { width: 8.8em; }
table.claims:not(.live-points):not(#sensitivity) th:nth-child(5) { width: 15%; }
table.claims td.num { white-space: normal; text-align: left; }
table.claims:not(.live-points):not(#sensitivity) th:nth-child(2) { width: 55%; }
table.claims:not(.live-points):not(#sensitivity) th:nth-child(3) { width: 7%; }
table.claims:not(.live-points):not(#sensitivity) th:nth-child(4) { width: 13%; }
table.claims:not(.live-points):not(#sensitivity) th:nth-child(6) { width: 5.5em; }
table.claims .src { color: #555; font-size: .9em; }
table.live-points, table#sensitivity { table-layout: auto; }
table.claims td { overflow-wrap: anywhere; }
table.claims th, table.claims td { border: 1px solid #ccc; padding: .2em .4em; text-align: left; vertical-align: top; }
tr.pass td.verdict { background: #dbe9f6; font-weight: bold; }
tr.fail td.verdict { background: #f8d0c8; font-weight: bold; }
tr.inconclusive td.verdict { background: #fbeecb; font-weight: bold; }
tr.not_applicable td.verdict { background: #e4e4e4; font-weight: bold; }
body.failing-only table.claims tr.pass, body.failing-only table.claims tr.not_applicable,
body.failing-only .glance li.pass { display: none; }
.scen { color: #777; font-size: .85em; white-space: nowrap; } .range ul { margin: .1em 0; padding-left: 1.2em; }
.nomodel b { color: #a02c1c; }
td .finding { color: #333; font-size: .95em; display: block; margin-top: .2em; }
td details, details.alts, details.livepts { font-size: .95em; color: #444; } details summary { cursor: pointer; color: #557; }
.stale { background: #fde2c4; color: #7a3e00; font-size: .85em; padding: 0 .3em; border-radius: 3px; }
div.calib { margin: .3em 0 .8em; font-size: .92em; } p.calib-ref { font-size: .88em; color: #444; }
table.calib { border-collapse: collapse; font-size: .88em; margin: .3em 0; }
table.calib th, table.calib td { border: 1px solid #ccc; padding: .2em .4em; text-align: left; vertical-align: top; }
table.calib tr.onbound td { background: #fff3e0; } b.flag { color: #a04000; white-space: nowrap; }
.warn { color: #7a3e00; }
span.bar { display: inline-block; position: relative; width: 70px; height: 8px; background: #e8e8e8; border: 1px solid #bbb; vertical-align: middle; }
span.bar span { position: absolute; top: -3px; width: 3px; height: 14px; margin-left: -1px; background: #333; }
td.num { text-align: right; white-space: nowrap; }
dl dt { font-weight: bold; margin-top: .5em; } dl dd { margin-left: 1.5em; }
"""


JS = """
document.getElementById('failing-only').addEventListener('change', e => {
  document.body.classList.toggle('failing-only', e.target.checked);
});
document.querySelectorAll('figure.fig .svg').forEach(el => el.addEventListener('click', () => {
  const f = el.closest('figure'); const on = !f.classList.contains('zoomed');
  document.querySelectorAll('figure.zoomed').forEach(z => z.classList.remove('zoomed'));
  if (on) f.classList.add('zoomed');
}));
document.addEventListener('keydown', e => {
  if (e.key === 'Escape') document.querySelectorAll('figure.zoomed').forEach(z => z.classList.remove('zoomed'));
});
"""
