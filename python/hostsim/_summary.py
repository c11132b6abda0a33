"""The report's summary: one row per paper, per extension or reference experiment and per live
experiment, every number counted from `expectations.json` (the browser test recounts them).

How claims are counted, the same in the summary, in each section and in the README. A paper
sentence may be read several ways, each reading a claim with the sentence's `claim_id`; each
sentence is counted once, under its `primary` reading, and the other readings apart
("alternative readings"). A claim without `claim_id` is its own sentence; a range (two ends
judged as one claim) is one claim. Per role (calibration, prediction) a count reads
`passed / judged`, where judged counts the verdicts pass, fail and inconclusive; claims the model
cannot test (`not_applicable`) are listed beside the count, never in it.

Each paper and each live experiment gets a verdict by the rule of `verdicts.py`, with its reason
in one line; each row names its largest gap: among its primary claims that do not pass and whose
target is a published value (not another run of the model), the one whose model value is
furthest from that value, as a factor; the claims where the model's value is 0 (or of the other
sign) against a published one have no factor and are counted beside it. Pass shares are coloured on a colour-blind-safe scale of six steps (`share_class`).

The same rows give the README's table (`python -m hostsim.report out --readme README.md`), so
the README's numbers are the report's.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

from . import metrics, verdicts
from .papers import PAPERS

ROLES = ("calibration", "prediction")


def verdict_of(c: dict) -> str:
    """A claim's verdict (older expectations.json files only have `pass`)."""
    return c.get("verdict") or ("pass" if c.get("pass") else "fail")


def is_primary(c: dict) -> bool:
    return c.get("primary", True)


@dataclass
class Tally:
    """Verdict counts of a set of claims."""

    passed: int = 0
    failed: int = 0
    inconclusive: int = 0
    not_applicable: int = 0

    @classmethod
    def of(cls, claims: list[dict]) -> Tally:
        t = cls()
        for c in claims:
            v = verdict_of(c)
            if v == "pass":
                t.passed += 1
            elif v == "fail":
                t.failed += 1
            elif v == "inconclusive":
                t.inconclusive += 1
            else:
                t.not_applicable += 1
        return t

    @property
    def judged(self) -> int:
        return self.passed + self.failed + self.inconclusive

    def counts(self) -> verdicts.Counts:
        return verdicts.Counts(self.passed, self.judged)

    def text(self) -> str:
        """`passed / judged`, then what else there is."""
        if not self.judged and not self.not_applicable:
            return "–"
        s = f"{self.passed} / {self.judged}"
        extra = []
        if self.inconclusive:
            extra.append(f"{self.inconclusive} inconclusive")
        if self.not_applicable:
            extra.append(f"{self.not_applicable} not testable")
        return s + (f" ({', '.join(extra)})" if extra else "")


@dataclass
class Gap:
    """A claim's model value against the published value it is compared with."""

    factor: float  # >= 1; inf when the model's value is 0 (or of the other sign)
    claim: dict
    metric: str

    def factor_text(self) -> str:
        if math.isinf(self.factor):
            return "∞"
        return f"{self.factor:.0f}×" if self.factor >= 10 else f"{self.factor:.3g}×"


@dataclass
class Row:
    key: str  # the section it links to (an HTML id)
    kind: str  # paper | extension | reference | live
    label: str
    title: str
    line: str  # the mechanism (or the experiment) in one line
    scenarios: list[str]
    claims: list[dict]
    live: str = ""
    live_href: str | None = None
    twin: Row | None = None  # a paper's live experiment
    headline: tuple[str, int] | None = None  # (scenario, figure index) drawn small
    key_claims: list[dict] = field(default_factory=list)
    verdict: str = ""  # verdicts.py's word; "" where no verdict applies
    reason: str = ""
    gap: Gap | None = None
    zeros: list[dict] = field(default_factory=list)  # claims whose model value is 0 against a published one

    def tally(self, role: str, primary: bool = True) -> Tally:
        return Tally.of([c for c in self.claims if c.get("role", "prediction") == role and is_primary(c) == primary])

    def alternatives(self) -> Tally:
        return Tally.of([c for c in self.claims if not is_primary(c)])


def claims_of(claims: list[dict], scenario: str, info_name: str) -> list[dict]:
    return [c for c in claims if c["scenario"] in (scenario, info_name)]


def gaps(claims: list[dict], metric_of) -> tuple[Gap | None, list[dict]]:
    """The largest gap and the claims whose model value is 0 against a published one (see the
    module documentation). `metric_of(claim)`: the metric the claim's model value is of."""
    best: Gap | None = None
    zeros = []
    for c in claims:
        if not is_primary(c) or verdict_of(c) in ("pass", "not_applicable") or c.get("paired"):
            continue
        pv, sim = c.get("paper_value"), c.get("sim")
        if pv is None or sim is None or pv == 0:
            continue
        if sim == 0 or (sim > 0) != (pv > 0):
            zeros.append(c)
            continue
        f = max(sim / pv, pv / sim)
        if best is None or f > best.factor:
            best = Gap(f, c, metric_of(c) or "")
    return best, zeros


def _verdict(row: Row) -> None:
    cal, pred = row.tally("calibration").counts(), row.tally("prediction").counts()
    row.verdict, row.reason = verdicts.verdict(cal, pred)


def rows(
    groups: dict,
    infos: dict,
    claims: list[dict],
    live_runs: dict,
    figures_of=lambda inf: inf["figures"],
    metric_of=lambda c: None,
) -> list[Row]:
    """The summary's rows. `groups`: paper id (or "extensions", "live", "") → scenario dirs;
    `infos`: dir → scenario info; `live_runs`: scenario name → its live run record (or None);
    `figures_of`: a scenario's figures as the report draws them; `metric_of`: a claim's metric."""
    out: list[Row] = []
    live_rows: dict[str, Row] = {}
    for kind, group in (("extension", "extensions"), ("reference", ""), ("live", "live")):
        for d in groups.get(group, []):
            inf = infos[d]
            cs = claims_of(claims, d.name, inf["name"])
            ext = inf.get("extends")
            title = {
                "extension": f"extends paper {PAPERS[ext]['number']}" if ext in PAPERS else "extension",
                "reference": "reference experiment",
                "live": "live experiment",
            }[kind]
            row = Row(
                key=f"scenario-{d.name}",
                kind=kind,
                label=d.name,
                title=title,
                line=inf["description"],
                scenarios=[d.name],
                claims=cs,
                headline=_headline([d], infos, figures_of),
            )
            if kind == "live":
                row.live = _live_status(live_runs.get(d.name))
                _verdict(row)
                row.gap, row.zeros = gaps(cs, metric_of)
                live_rows[d.name] = row
            else:
                row.live = "model only"
                row.gap = None
            failing = [c for c in cs if verdict_of(c) != "pass" and is_primary(c)]
            row.key_claims = failing[:1] or cs[:1]
            out.append(row)
    papers: list[Row] = []
    for pid, p in PAPERS.items():
        dirs = groups.get(pid)
        if not dirs:
            continue
        cs = [c for d in dirs for c in claims_of(claims, d.name, infos[d]["name"])]
        row = Row(
            key=f"paper-{pid}",
            kind="paper",
            label=f"{p['number']} {pid}",
            title=p["title"],
            line=p["line"],
            scenarios=[d.name for d in dirs],
            claims=cs,
        )
        _verdict(row)
        row.gap, row.zeros = gaps(cs, metric_of)
        twin = live_rows.get(f"live-{pid}")
        if twin is not None:
            row.twin = twin
            row.live, row.live_href = f"live twin: {twin.verdict}", f"#{twin.key}"
        else:
            row.live = p.get("live") or "none"
        row.headline = _headline(dirs, infos, figures_of)
        for prefix in p.get("headline_claims", []):
            hits = [c for c in cs if c["claim"].startswith(prefix)]
            row.key_claims += sorted(hits, key=lambda c: not is_primary(c))[:1]
        papers.append(row)
    return papers + out


def _headline(dirs, infos, figures_of) -> tuple[str, int] | None:
    for d in dirs:
        for k, f in enumerate(figures_of(infos[d])):
            if f.get("headline"):
                return d.name, k
    for d in dirs:
        if figures_of(infos[d]):
            return d.name, 0
    return None


def _live_status(run: dict | None) -> str:
    if not run:
        return "measured (no record of the machine)"
    m = run.get("machine", {})
    cfg = run.get("config", {})
    reps = cfg.get("reps")
    return f"measured on Linux {m.get('kernel', '?')}, {m.get('cpus', '?')} CPUs" + (
        f", {reps} repetitions" if reps else ""
    )


VERDICT_MARK = {"pass": "✔", "fail": "✘", "inconclusive": "?", "not_applicable": "–"}
VERDICT_CLASS = {
    verdicts.REPRODUCED: "v-yes",
    verdicts.PARTLY: "v-partly",
    verdicts.NOT_REPRODUCED: "v-no",
    verdicts.NOT_JUDGED: "v-none",
    "": "v-none",
}
# ColorBrewer RdYlBu, six classes (colour-blind safe): the share of claims that pass.
SHARE_COLORS = ["#d73027", "#fc8d59", "#fee090", "#e0f3f8", "#91bfdb", "#4575b4"]
SHARE_BINS = ["under 20 %", "20-40 %", "40-60 %", "60-80 %", "80-99 %", "all"]


def share_class(t: Tally) -> int | None:
    """The colour step of a pass share: 0 (under 20 %) to 4 (80 % up, not all), 5 (all); None
    when nothing is judged."""
    if not t.judged:
        return None
    if t.passed == t.judged:
        return 5
    return min(int(5 * t.passed / t.judged), 4)


def _cell(t: Tally, role: str) -> str:
    k = share_class(t)
    cls = "none" if k is None else f"s{k}"
    return (
        f'<td class="tally {cls}" data-role="{role}" data-passed="{t.passed}" data-judged="{t.judged}" '
        f'data-not-applicable="{t.not_applicable}" data-inconclusive="{t.inconclusive}">{html.escape(t.text())}</td>'
    )


def gap_html(g: Gap | None, fmt, href=None, zeros: int = 0) -> str:
    z = (
        f'<span class="zeros" data-zeros="{zeros}">and {zeros} claim{"s" if zeros > 1 else ""} where the model has 0</span>'
        if zeros
        else ""
    )
    if g is None:
        return ("none compared with a published value" if not zeros else "") + z
    c = g.claim
    what = metrics.words(g.metric) if g.metric else "value"
    ref = "live" if c["scenario"].startswith("live-") else "paper"
    val = lambda v: metrics.value(g.metric, v, fmt)  # noqa: E731
    text = (
        f'<b class="factor">{g.factor_text()}</b> {html.escape(what)}: model {html.escape(val(c["sim"]))}, '
        f"{ref} {html.escape(val(c['paper_value']))}"
    )
    if href:
        text = f'<a href="{href}" title="{html.escape(metrics.units(c["claim"]))}">{text}</a>'
    return f'<span class="gap" data-factor="{g.factor}">{text}</span>{z}'


def summary_html(rs: list[Row], thumbs: dict[str, str], fmt, claim_href) -> str:
    """The summary table. `thumbs`: row key → thumbnail SVG path relative to the page;
    `claim_href(claim)`: the link to a claim's row."""
    body = []
    for r in rs:
        alt = r.alternatives()
        alt_html = (
            (
                f'<div class="alt" data-passed="{alt.passed}" data-judged="{alt.judged}">alternative readings '
                f"{html.escape(alt.text())}</div>"
            )
            if (alt.judged or alt.not_applicable)
            else ""
        )
        if r.verdict:
            verdict = (
                f'<td class="verdict" data-verdict="{r.verdict}"><span class="badge {VERDICT_CLASS[r.verdict]}">'
                f'{r.verdict}</span> <span class="reason">{html.escape(r.reason)}</span></td>'
            )
        else:
            what = "not a reproduction: no paper measured it" if r.kind == "extension" else "a test of the model"
            verdict = f'<td class="verdict" data-verdict=""><i>{what}</i></td>'
        thumb = thumbs.get(r.key)
        fig = (
            (
                f'<a href="#{r.key}"><img class="thumb" src="{thumb}" alt="headline figure of {html.escape(r.label)}" '
                "onload=\"this.dataset.loaded='1'\"></a>"
            )
            if thumb
            else ""
        )
        live = html.escape(r.live)
        if r.twin is not None:
            live = (
                f'<a href="{r.live_href}">live twin:</a> <span class="twin {VERDICT_CLASS[r.twin.verdict]}">'
                f"{html.escape(r.twin.verdict)}</span>"
            )
        elif r.live_href:
            live = f'<a href="{r.live_href}">{live}</a>'
        gap = gap_html(r.gap, fmt, claim_href(r.gap.claim) if r.gap else None, len(r.zeros)) if r.verdict else "–"
        body.append(
            f'<tr class="row {r.kind}" data-key="{r.key}" data-scenarios="{" ".join(r.scenarios)}">'
            f'<td class="name"><a href="#{r.key}">{html.escape(r.label)}</a><div class="sub">{html.escape(r.title)}</div></td>'
            + verdict
            + _cell(r.tally("calibration"), "calibration")
            + _cell(r.tally("prediction"), "prediction")
            + f'<td class="gapcell">{gap}{alt_html}</td><td class="fig">{fig}</td><td class="live">{live}</td></tr>'
        )
    legend = "".join(f'<span class="s{i}">{b}</span>' for i, b in enumerate(SHARE_BINS))
    return (
        '<table id="summary-table" class="summary"><thead><tr><th>paper / experiment</th>'
        '<th>verdict <a href="#verdict-rule">(rule)</a> and why</th>'
        '<th title="claims about the baseline system: passed / judged">calibration<br>passed</th>'
        '<th title="claims nothing was tuned against: passed / judged">predictions<br>passed</th>'
        "<th>largest gap (model against the published or live value)</th><th>headline figure</th><th>live</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
        f'<p class="scale">Share of claims passed: {legend}. Counts are primary readings (<a href="#glossary">glossary</a>); '
        "alternative readings are counted apart.</p>"
    )


def readme_table(rs: list[Row]) -> str:
    """The README's copy of the summary (markdown), between its `report:summary` markers."""
    lines = [
        "| paper / experiment | mechanism | verdict | calibration passed | prediction passed | alternative readings | live |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rs:
        alt = r.alternatives()
        cells = [
            f"`{r.label}`" if r.kind != "paper" else f"{r.label}",
            r.line.replace("|", "\\|"),
            r.verdict or ("extension" if r.kind == "extension" else "reference"),
            r.tally("calibration").text(),
            r.tally("prediction").text(),
            alt.text() if (alt.judged or alt.not_applicable) else "–",
            r.live.replace("|", "\\|"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


README_BEGIN = (
    "<!-- report:summary:begin (generated by `python -m hostsim.report out --readme README.md`; do not edit) -->"
)
README_END = "<!-- report:summary:end -->"


def replace_readme_block(text: str, table: str) -> str:
    if README_BEGIN not in text or README_END not in text:
        raise ValueError("README has no report:summary markers")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    return f"{head}{README_BEGIN}\n{table}{README_END}{tail}"


def readme_block(text: str) -> str | None:
    if README_BEGIN not in text or README_END not in text:
        return None
    return text.split(README_BEGIN, 1)[1].split(README_END, 1)[0].lstrip("\n")
