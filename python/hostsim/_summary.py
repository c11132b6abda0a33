"""The report's summary: one row per paper, per extension or reference experiment and per live
experiment, every number counted from `expectations.json` (the browser test recounts them).

How claims are counted. A paper sentence may be read several ways, each reading a claim with the
sentence's `claim_id`; the summary counts each sentence once, under its `primary` reading, and
the other readings apart ("alternative readings"). A claim without `claim_id` is its own
sentence. Per role (calibration, prediction) a cell reads `passed / judged`, where judged counts
the verdicts pass, fail and inconclusive; claims the model cannot test (`not_applicable`) are
listed beside the count, never in it.

The same rows give the README's table (`python -m hostsim.report out --readme README.md`), so
the README's numbers are the report's.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

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
    headline: tuple[str, int] | None = None  # (scenario, figure index) drawn small
    key_claims: list[dict] = field(default_factory=list)

    def tally(self, role: str, primary: bool = True) -> Tally:
        return Tally.of([c for c in self.claims if c.get("role", "prediction") == role and is_primary(c) == primary])

    def alternatives(self) -> Tally:
        return Tally.of([c for c in self.claims if not is_primary(c)])


def claims_of(claims: list[dict], scenario: str, info_name: str) -> list[dict]:
    return [c for c in claims if c["scenario"] in (scenario, info_name)]


def rows(
    groups: dict, infos: dict, claims: list[dict], live_runs: dict, figures_of=lambda inf: inf["figures"]
) -> list[Row]:
    """The summary's rows. `groups`: paper id (or "extensions", "live", "") → scenario dirs;
    `infos`: dir → scenario info; `live_runs`: scenario name → its live run record (or None);
    `figures_of`: a scenario's figures as the report draws them."""
    out: list[Row] = []
    live_rows = {d.name: d for d in groups.get("live", [])}
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
        twin = live_rows.get(f"live-{pid}")
        if twin is not None:
            t = Row(
                key="",
                kind="live",
                label="",
                title="",
                line="",
                scenarios=[twin.name],
                claims=claims_of(claims, twin.name, infos[twin]["name"]),
            ).tally("prediction")
            row.live, row.live_href = f"live twin: {t.passed} / {t.judged} predictions pass", f"#scenario-{twin.name}"
        else:
            row.live = p.get("live") or "none"
        row.headline = _headline(dirs, infos, figures_of)
        for prefix in p.get("headline_claims", []):
            row.key_claims += [c for c in cs if c["claim"].startswith(prefix)][:1]
        out.append(row)
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
            else:
                row.live = "model only"
            failing = [c for c in cs if verdict_of(c) != "pass"]
            row.key_claims = failing[:1] or cs[:1]
            out.append(row)
    return out


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


def _cell(t: Tally, role: str) -> str:
    cls = "none" if not t.judged else ("all" if t.passed == t.judged else "some" if t.passed else "zero")
    return (
        f'<td class="tally {cls}" data-role="{role}" data-passed="{t.passed}" data-judged="{t.judged}" '
        f'data-not-applicable="{t.not_applicable}" data-inconclusive="{t.inconclusive}">{html.escape(t.text())}</td>'
    )


def summary_html(rs: list[Row], thumbs: dict[str, str]) -> str:
    """The summary table. `thumbs`: row key → thumbnail SVG path relative to the page."""
    body = []
    for r in rs:
        alt = r.alternatives()
        alt_html = (
            (
                f'<div class="alt" data-passed="{alt.passed}" data-judged="{alt.judged}">alternative readings: '
                f"{html.escape(alt.text())}</div>"
            )
            if (alt.judged or alt.not_applicable)
            else ""
        )
        keys = []
        for c in r.key_claims:
            v = verdict_of(c)
            why = c.get("finding") or ""
            text = c["claim"] + (f" — {why}" if why and v != "pass" else "")
            keys.append(
                f'<div class="key {v}" title="{html.escape(text)}"><b>{VERDICT_MARK[v]}</b> {html.escape(text)}</div>'
            )
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
        if r.live_href:
            live = f'<a href="{r.live_href}">{live}</a>'
        body.append(
            f'<tr class="row {r.kind}" data-key="{r.key}" data-scenarios="{" ".join(r.scenarios)}">'
            f'<td class="name"><a href="#{r.key}">{html.escape(r.label)}</a><div class="sub">{html.escape(r.title)}</div></td>'
            f'<td class="line"><div class="clamp" title="{html.escape(r.line)}">{html.escape(r.line)}</div></td>'
            + _cell(r.tally("calibration"), "calibration")
            + _cell(r.tally("prediction"), "prediction")
            + f'<td class="keys">{"".join(keys)}{alt_html}</td><td class="fig">{fig}</td><td class="live">{live}</td></tr>'
        )
    return (
        '<table id="summary-table" class="summary"><thead><tr><th>paper / experiment</th><th>mechanism</th>'
        '<th title="claims about the baseline system: passed / judged">calibration<br>passed</th>'
        '<th title="claims nothing was tuned against: passed / judged">prediction<br>passed</th>'
        "<th>key claims (✔ pass, ✘ fail, ? inconclusive) and why</th><th>headline figure</th><th>live</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def readme_table(rs: list[Row]) -> str:
    """The README's copy of the summary (markdown), between its `report:summary` markers."""
    lines = [
        "| paper / experiment | mechanism | calibration passed | prediction passed | alternative readings | live |",
        "|---|---|---|---|---|---|",
    ]
    for r in rs:
        alt = r.alternatives()
        cells = [
            f"`{r.label}`" if r.kind != "paper" else f"{r.label}",
            r.line.replace("|", "\\|"),
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
