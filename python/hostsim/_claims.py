"""The report's claims: each claim's row (its verdict, a range's two ends, "no model value",
why a claim is not testable, the finding and its folded evidence), the tables apart by role with
alternative readings folded apart, the CSV of every claims table, and the box a section opens
with (the verdict, the largest gap and the key claims)."""

from __future__ import annotations

import csv
import html
import io
from pathlib import Path

from . import _summary, metrics, plot
from ._summary import Tally, verdict_of

OPS = {"<": "<", "<=": "≤", ">": ">", ">=": "≥", "approx": "≈", "outside": "≉"}


VERDICTS = {"pass": "PASS", "fail": "FAIL", "inconclusive": "INCONCLUSIVE", "not_applicable": "N/A"}


UNTESTABLE = {"no_reference": "no reference", "not_simulated": "not simulated"}


def _fmt(v) -> str:
    if v is None:
        return "–"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return html.escape(str(v))
    # As crates/scenario/src/finding.rs's fmt_num (plot.fmt_num).
    return plot.fmt_num(f)


def _sig(v: float, digits: int = 3) -> str:
    """`v` to `digits` significant digits (what a fit over a few seeds resolves)."""
    if v == 0:
        return "0"
    s = f"{v:.{digits}g}"
    return plot.fmt_num(float(s)) if "e" not in s or abs(v) >= 1 else s


def tally(claims: list[dict]) -> str:
    t = Tally.of(claims)
    s = f"{t.passed} pass, {t.failed} fail"
    if t.inconclusive:
        s += f", {t.inconclusive} inconclusive"
    if t.not_applicable:
        s += f", {t.not_applicable} not testable"
    return s


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
        return f"{bound}{_fmt(v)} <small>[{_fmt(ci[0])}, {_fmt(ci[1])}]</small>"
    return bound + _fmt(v)


def _text(s: str) -> str:
    """Text as the page shows it: escaped, one spelling of micro-seconds."""
    return html.escape(metrics.units(s or ""))


class Claims:
    """The claims and where each is: its anchor, its [[expect]] entry and its scenario's info."""

    def __init__(self, claims: list[dict], scen_dirs, infos):
        self.all = claims
        self.specs: dict[tuple[str, str], tuple[dict, dict]] = {}
        for d in scen_dirs:
            for e in infos[d]["expects"]:
                for name in (d.name, infos[d]["name"]):
                    self.specs.setdefault((name, e["claim"]), (e, infos[d]))
        self.ids = {(c["scenario"], c["claim"]): f"claim-{k + 1}" for k, c in enumerate(claims)}

    def spec(self, c: dict) -> tuple[dict, dict | None]:
        return self.specs.get((c["scenario"], c["claim"]), ({}, None))

    def metric(self, c: dict) -> str | None:
        return self.spec(c)[0].get("metric")

    def href(self, c: dict) -> str:
        return "#" + self.ids.get((c["scenario"], c["claim"]), "")


def _finding_html(c: dict) -> str:
    out = ""
    v = verdict_of(c)
    if c.get("finding"):
        label = "why not testable" if v == "not_applicable" else "finding"
        stale = ""
        if c.get("finding_stale"):
            stale = (
                f' <span class="stale" title="its own numbers were measured on model {html.escape(c.get("finding_model") or "")}; '
                'the model has changed since: re-check them">stale</span>'
            )
        out += f'<span class="finding"><b>{label}:</b> {_text(c["finding"])}{stale}</span>'
    if c.get("detail"):
        out += f"<details><summary>detail</summary>{_text(c['detail'])}</details>"
    if c.get("error") and not c.get("no_model_value"):
        out += f"<i>{_text(c['error'])}</i>"
    return out


def _op(c: dict) -> str:
    op = OPS.get(c.get("op"), html.escape(str(c.get("op"))))
    if c.get("op") in ("approx", "outside") and c.get("tolerance") is not None:
        # An absolute tolerance is judged on sim - target, a relative one on the ratio.
        absolute = c.get("judged") == "sim - target"
        op += f" (±{c['tolerance']:g})" if absolute else f" (±{c['tolerance'] * 100:g}%)"
    return op


def _claim_row(c: dict, cl: Claims) -> str:
    v = verdict_of(c)
    spec, inf = cl.spec(c)
    seeds = c.get("seeds") or 1
    held = c.get("held")
    held_s = "–" if held is None else f"{held * 100:.0f}% of {seeds}"
    reading = (
        f" <small>[reading: {_text(c['reading'])}{'' if c.get('primary', True) else ', alternative'}]</small>"
        if c.get("reading")
        else ""
    )
    verdict = VERDICTS[v]
    if v == "not_applicable" and c.get("untestable"):
        verdict += f"<br><small>{UNTESTABLE.get(c['untestable'], c['untestable'])}</small>"
    ends = c.get("ends") or []
    if ends:
        what = "".join(
            f"<li>{VERDICTS[verdict_of(e)]}: {_text(e['claim'])}: model {_fmt(e.get('sim'))} {_op(e)} {_fmt(e.get('rhs'))}</li>"
            for e in ends
        )
        claim_html = f'{_text(c["claim"])}{reading}<div class="range">a range, judged as one claim against both ends:<ul>{what}</ul></div>'
        paper_v = " … ".join(_fmt(e.get("paper_value")) for e in ends)
        sim_html = " … ".join(_fmt(e.get("sim")) for e in ends)
        cmp_html = f"within [{_fmt(ends[0].get('rhs'))}, {_fmt(ends[1].get('rhs'))}]"
    else:
        claim_html = f"{_text(c['claim'])}{reading}"
        paper_v = _fmt(c.get("paper_value"))
        sim_b = censored(spec, inf, c.get("sim")) if inf else ""
        rhs_b = censored(spec.get("rhs") or {}, inf, c.get("rhs")) if inf else ""
        sim_html = _ci(c.get("sim"), c.get("sim_ci"), seeds, sim_b)
        judged = ""
        if c.get("paired") and seeds > 1 and c.get("judged_mean") is not None:
            judged = (
                f"<br><small>paired {html.escape(c.get('judged', ''))}: {_fmt(c['judged_mean'])} "
                f"[{_fmt((c.get('judged_ci') or [None])[0])}, {_fmt((c.get('judged_ci') or [None, None])[1])}]</small>"
            )
        if c.get("rhs") is None and spec.get("value") is not None and not spec.get("rhs"):
            # No seed gave a value, so no target was averaged: the claim's own literal one.
            target = spec["value"] * spec.get("factor", 1.0) + spec.get("offset", 0.0)
            cmp_html = f"{_op(c)} {_fmt(target)}"
        elif c.get("rhs") is None:
            cmp_html = f"{_op(c)} <small>the model's own reference, which has no value either</small>"
        else:
            cmp_html = f"{_op(c)} {_ci(c.get('rhs'), c.get('rhs_ci'), seeds, rhs_b)}{judged}"
    if c.get("no_model_value"):
        sim_html = f'<span class="nomodel"><b>no model value</b><br><small>{_text(c["no_model_value"])}</small></span>'
        if c.get("sim") is not None:
            sim_html += f"<br><small>(on the other seeds: {_fmt(c['sim'])})</small>"
    tid = cl.ids.get((c["scenario"], c["claim"]), "")
    return (
        f'<tr class="{v}" id="{tid}"><td class="verdict">{verdict}</td>'
        f'<td>{claim_html} <span class="scen">· {html.escape(c["scenario"])}</span>'
        f'<div class="src">{_text(c.get("paper") or "")}</div>{_finding_html(c)}</td>'
        f'<td class="num">{paper_v}</td>'
        f'<td class="num">{sim_html}</td><td class="num">{cmp_html}</td>'
        f'<td class="num">{held_s}</td></tr>'
    )


def _claims_table(claims: list[dict], tid: str, cl: Claims, live: bool = False) -> str:
    ref = "live" if live else "paper"
    rows = "".join(_claim_row(c, cl) for c in claims)
    return (
        f'<table class="claims" id="{tid}"><thead><tr><th>verdict</th><th>claim · scenario, its source in the '
        f"{'live run' if live else 'paper'}, and what was found</th>"
        f"<th>{ref} value</th><th>model (mean [95% interval])</th>"
        f"<th>compared with</th><th>holds on seeds</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _claims_csv(claims: list[dict], path: Path) -> None:
    cols = [
        "scenario",
        "claim",
        "role",
        "primary",
        "reading",
        "verdict",
        "untestable",
        "no_model_value",
        "paper",
        "paper_value",
        "sim",
        "sim_lo",
        "sim_hi",
        "op",
        "rhs",
        "rhs_lo",
        "rhs_hi",
        "held",
        "seeds",
        "finding",
    ]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for c in claims:
        sci, rci = c.get("sim_ci") or [None, None], c.get("rhs_ci") or [None, None]
        row = dict(c, sim_lo=sci[0], sim_hi=sci[1], rhs_lo=rci[0], rhs_hi=rci[1])
        w.writerow(["" if row.get(k) is None else row.get(k) for k in cols])
    path.write_text(buf.getvalue())


def _glance(r: _summary.Row, cl: Claims) -> str:
    """The box a paper's (or live experiment's) section opens with: its verdict and why, its
    largest gap, and its key claims with what was found, in full."""
    if not r.verdict:
        return ""
    keys = []
    for c in ([r.gap.claim] if r.gap else []) + r.zeros + r.key_claims:
        if any(c is k for k in keys):
            continue
        keys.append(c)
    items = "".join(
        f'<li class="key {verdict_of(c)}"><a href="{cl.href(c)}"><b>{_summary.VERDICT_MARK[verdict_of(c)]}</b></a> {_text(c["claim"])}'
        + (f' <span class="why">— {_text(c["finding"])}</span>' if c.get("finding") and verdict_of(c) != "pass" else "")
        + "</li>"
        for c in keys
    )
    gap = _summary.gap_html(r.gap, _fmt, cl.href(r.gap.claim) if r.gap else None, len(r.zeros))
    return (
        f'<div class="glance"><p><span class="badge {_summary.VERDICT_CLASS[r.verdict]}">{r.verdict}</span> '
        f"{html.escape(r.reason)}. Largest gap: {gap}.</p><ul>{items}</ul></div>"
    )
