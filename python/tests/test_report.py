"""The report of a full `hostsim reproduce` (the session's `reproduced`), as a reader sees it:
opened in headless Chromium (Debian's package, driven over the DevTools protocol: browser.py).

What a researcher must grasp in 30 seconds, each checked on the page: the provenance at the top;
the summary fits a 1366x768 window, gives each paper and live experiment a verdict that follows
from expectations.json by the stated rule, counts what the sections count, names the largest gap;
the "failing claims only" filter hides the passing claims; every figure cannot hide a gap (no
paper/model gap over 5x on a linear axis), draws live dashed and the model solid, keeps its text
as text inside its box, opens full size on click and links the CSV of what it draws; no console
error, no broken image, Japanese rendered from the embedded font; the prose names no number
that could go stale, no path of the machine that built it, no issue or note a reader cannot open,
and one spelling of micro-seconds. Test for test: python/tests/test_report_figures.py checks the
figures themselves (matplotlib's objects and the SVG files)."""

import json
import re
from pathlib import Path

import hostsim
import pandas as pd
import pytest
from browser import Browser
from conftest import ROOT, cli
from hostsim import _page, _summary, metrics, papers, report, verdicts

WINDOW = (1366, 768)


def claims(out):
    return json.loads((out / "expectations.json").read_text())


def scenario_dirs(out):
    return sorted(p for p in out.iterdir() if (p / "results.csv").exists())


def recount(cs: list[dict], role: str) -> tuple[int, int, int]:
    """(passed, judged, not testable) of the primary claims of `role`, from expectations.json."""
    prim = [c for c in cs if c["role"] == role and c["primary"]]
    return (
        sum(c["verdict"] == "pass" for c in prim),
        sum(c["verdict"] in ("pass", "fail", "inconclusive") for c in prim),
        sum(c["verdict"] == "not_applicable" for c in prim),
    )


@pytest.fixture(scope="module")
def page(reproduced, tmp_path_factory):
    """The report opened at 1366x768, kept open for the module."""
    b = Browser(tmp_path_factory.mktemp("chromium"))
    b.open((reproduced / "report" / "index.html").as_uri(), *WINDOW)
    yield b
    b.close()


def test_provenance_is_at_the_top(reproduced, page):
    prov = json.loads((reproduced / "provenance.json").read_text())
    text = page.eval("document.getElementById('provenance').textContent")
    top = page.eval("document.getElementById('provenance').getBoundingClientRect().bottom")
    assert top < 120, "the provenance is the page's first line"
    assert f"hostsim {prov['hostsim']}" in text
    assert prov["model_source_id"] in text
    rec = json.loads((reproduced / "reproduce.json").read_text())
    assert prov["model_source_id"] == rec["model_source_id"], "the model that made the results"
    assert (prov["commit"] or "unknown")[:12] in text
    assert "hostsim reproduce" in text, "the command, as run"
    assert prov["started"][:10] in text and "UTC" in text
    assert str(prov["machine"]["cpus"]) in text and prov["machine"]["kernel"] in text
    # What is not deterministic stays out of expectations.json.
    assert prov["started"] not in (reproduced / "expectations.json").read_text()


def test_summary_fits_the_window_and_says_what_expectations_json_says(reproduced, page):
    top, bottom, height, width, scroll_width = page.eval(
        "(() => { const r = document.getElementById('summary-table').getBoundingClientRect();"
        " return [r.top, r.bottom, innerHeight, innerWidth, document.documentElement.scrollWidth]; })()"
    )
    assert bottom <= height, f"the summary ends at {bottom:.0f} px, below the {height} px window"
    assert scroll_width <= width, "the page scrolls sideways"
    page.screenshot(reproduced / "report" / "summary-1366x768.png")
    rows = page.eval(
        "[...document.querySelectorAll('#summary-table tbody tr')].map(tr => ({"
        " key: tr.dataset.key, kind: tr.className.split(' ')[1], scenarios: tr.dataset.scenarios.split(' '),"
        " cells: [...tr.querySelectorAll('td.tally')].map(td => [td.dataset.role, +td.dataset.passed,"
        " +td.dataset.judged, +td.dataset.notApplicable, td.textContent, td.className]),"
        " verdict: tr.querySelector('td.verdict').dataset.verdict,"
        " reason: tr.querySelector('td.verdict').textContent,"
        " factor: tr.querySelector('.gap') ? +tr.querySelector('.gap').dataset.factor : null,"
        " href: tr.querySelector('td.name a').getAttribute('href') }))"
    )
    keys = [r["key"] for r in rows]
    # One row per paper, per extension or reference experiment, per live experiment.
    assert keys[:5] == [f"paper-{p}" for p in papers.PAPERS]
    assert {"scenario-flow-limit-vs-pbq", "scenario-livelock", "scenario-live-ozaki-pbq"} <= set(keys)
    cs = claims(reproduced)
    seen = set()
    for r in rows:
        mine = [c for c in cs if c["scenario"] in r["scenarios"]]
        assert mine, r["key"]
        seen |= set(r["scenarios"])
        counts = {}
        for role, passed, judged, na, text, cls in r["cells"]:
            # Recounted here from expectations.json, independently of the report's code.
            assert (passed, judged, na) == recount(mine, role), (r["key"], role)
            counts[role] = verdicts.Counts(passed, judged)
            if judged:
                assert text.startswith(f"{passed} / {judged}"), (r["key"], text)
                # The colour separates shares: all; 80-99 %; ...; under 20 %.
                step = 5 if passed == judged else min(int(5 * passed / judged), 4)
                assert f"s{step}" in cls.split(), (r["key"], role, cls)
        if r["kind"] in ("paper", "live"):
            want, why = verdicts.verdict(counts["calibration"], counts["prediction"])
            assert r["verdict"] == want, (r["key"], r["verdict"], want)
            assert why in r["reason"], (r["key"], r["reason"])
        else:
            assert r["verdict"] == "", "an extension or a reference experiment is not a reproduction"
        if r["factor"] is not None:
            # The largest gap: the furthest model value from a published one it is compared with.
            fs = [
                max(c["sim"] / c["paper_value"], c["paper_value"] / c["sim"])
                for c in mine
                if c["primary"]
                and c["verdict"] in ("fail", "inconclusive")
                and not c["paired"]
                and c["paper_value"]
                and c["sim"]
                and (c["sim"] > 0) == (c["paper_value"] > 0)
            ]
            assert r["factor"] == pytest.approx(max(fs)), r["key"]
        assert page.eval(f"!!document.getElementById({json.dumps(r['href'][1:])})"), f"{r['href']} leads nowhere"
    assert seen == {c["scenario"] for c in cs}, "every claim's scenario has a row"
    for role in ("calibration", "prediction"):
        passed, judged, _ = recount(cs, role)
        assert page.eval(f"document.getElementById('total-{role}').textContent") == f"{passed} / {judged}"
    # goda-rfs's migrations are far from the paper's: its row names a gap above 5x.
    goda = next(r for r in rows if r["key"] == "paper-goda-rfs")
    assert goda["factor"] > 5


def test_sections_count_what_the_summary_counts(reproduced, page):
    """A paper's section heads its claims tables with the summary's numbers (primary readings
    per role) and counts its alternative readings apart."""
    cs = claims(reproduced)
    for pid in papers.PAPERS:
        mine = [c for c in cs if c["scenario"].startswith(pid) and not c["scenario"].startswith("live-")]
        for role, title in (("calibration", "Calibration claims"), ("prediction", "Prediction claims")):
            passed, judged, _ = recount(mine, role)
            if not judged:
                continue
            head = page.eval(
                f"[...document.querySelectorAll('#paper-{pid} h4')].map(h => h.textContent)"
                f".find(t => t.startsWith('{title}'))"
            )
            assert head.startswith(f"{title}: {passed} / {judged} pass"), (pid, head)
            cell = page.eval(
                f'document.querySelector(\'tr[data-key="paper-{pid}"] td.tally[data-role="{role}"]\').textContent'
            )
            assert cell.startswith(f"{passed} / {judged}"), (pid, role, cell)
        alt = [c for c in mine if not c["primary"]]
        n = page.eval(f"document.querySelectorAll('#claims-{pid}-alternative tbody tr').length")
        assert n == len(alt), pid


def test_the_failing_only_filter_hides_passing_claims(reproduced, page):
    visible = "(sel) => [...document.querySelectorAll(sel)].filter(e => e.checkVisibility()).length"
    cs = claims(reproduced)
    primary_fail = sum(c["verdict"] == "fail" and c["primary"] for c in cs)
    before = page.eval(f"({visible})('table.claims tr.pass')")
    assert before > 0
    page.eval("document.getElementById('failing-only').click()")
    try:
        assert page.eval("document.body.classList.contains('failing-only')")
        assert page.eval(f"({visible})('table.claims tr.pass')") == 0
        assert page.eval(f"({visible})('table.claims tr.not_applicable')") == 0
        # Every failing primary claim is still shown (the alternatives stay folded away).
        assert page.eval(f"({visible})('table.claims tr.fail')") == primary_fail
    finally:
        page.eval("document.getElementById('failing-only').click()")
    assert page.eval(f"({visible})('table.claims tr.pass')") == before


def test_every_figure_and_every_claim_is_in_the_report(reproduced, page):
    dom = page.eval("document.documentElement.outerHTML")
    want = 0
    for d in scenario_dirs(reproduced):
        figs = report.figures_of(hostsim.info(d / "scenario.toml"))
        want += len(figs)
    assert page.eval("document.querySelectorAll('figure.fig svg').length") == want >= 15
    titles = page.eval("[...document.querySelectorAll('figure.fig')].map(f => f.dataset.title)")
    for d in scenario_dirs(reproduced):
        for f in report.figures_of(hostsim.info(d / "scenario.toml")):
            assert any(t.startswith(metrics.units(f["title"])) for t in titles), f["title"]
    cs = claims(reproduced)
    rows = re.findall(r'<tr class="(pass|fail|inconclusive|not_applicable)" id="claim-', dom)
    assert len(rows) == len(cs)
    for v in ["pass", "fail", "inconclusive", "not_applicable"]:
        assert rows.count(v) == sum(c["verdict"] == v for c in cs), v
    for pid in ["ozaki-pbq", "goda-rfs"]:
        assert f'id="claims-{pid}-calibration"' in dom and f'id="claims-{pid}-prediction"' in dom
    assert dom.index('id="extensions"') > dom.index('id="paper-ozaki-pbq"')
    # A long finding's evidence is folded away, and a stale one says so.
    assert dom.count("<details><summary>detail") == sum(bool(c["detail"]) for c in cs)
    assert dom.count('class="stale"') == sum(c["finding_stale"] for c in cs)
    page.screenshot(reproduced / "report" / "screenshot.png", full_page=True)


def test_honest_verdicts_no_model_value_not_testable_and_ranges(reproduced, page):
    cs = claims(reproduced)
    rows = page.eval(
        "Object.fromEntries([...document.querySelectorAll('table.claims tr[id^=claim-]')]"
        ".map(tr => [tr.id, [tr.className, tr.querySelector('td.verdict').textContent, tr.textContent]]))"
    )
    ids = {(c["scenario"], c["claim"]): f"claim-{k + 1}" for k, c in enumerate(cs)}
    missing = [c for c in cs if c.get("no_model_value")]
    assert missing, "tabata-speed's gap claims at 100 % have no model value"
    cmp = page.eval(
        "Object.fromEntries([...document.querySelectorAll('table.claims tr[id^=claim-]')]"
        ".map(tr => [tr.id, tr.children[4].textContent.trim()]))"
    )
    for c in missing:
        cls, _verdict, text = rows[ids[(c["scenario"], c["claim"])]]
        assert cls == "fail" and "no model value" in text, c["claim"]
        # What it is compared with is said, never a bare "–" (a missing reference).
        assert not cmp[ids[(c["scenario"], c["claim"])]].endswith("–"), c["claim"]
    for c in cs:
        cls, verdict, _ = rows[ids[(c["scenario"], c["claim"])]]
        if c["verdict"] == "not_applicable":
            # Only for a missing reference or a quantity the model does not simulate, said so.
            assert c["untestable"] in ("no_reference", "not_simulated"), c["claim"]
            assert ("no reference" if c["untestable"] == "no_reference" else "not simulated") in verdict
        else:
            assert not c.get("untestable")
    ranges = [c for c in cs if c.get("ends")]
    assert ranges, "004-Q5 (paper 8-15 %) is a range"
    for c in ranges:
        lower, upper = c["ends"]
        assert lower["op"] in (">", ">=") and upper["op"] in ("<", "<=")
        want = "fail" if "fail" in (lower["verdict"], upper["verdict"]) else c["verdict"]
        assert c["verdict"] == want
        _, _, text = rows[ids[(c["scenario"], c["claim"])]]
        assert "a range, judged as one claim against both ends" in text
    for r in ranges:
        for e in r["ends"]:
            if e["claim"] != r["claim"]:
                assert (r["scenario"], e["claim"]) not in ids, "a range's other end is no claim of its own"


def test_live_tables_are_headed_live(reproduced, page):
    heads = page.eval(
        "[...document.querySelectorAll('#live table.claims:not(.live-points) thead')].map(t => t.textContent)"
    )
    assert heads and all("live value" in h and "paper value" not in h for h in heads)
    heads = page.eval("[...document.querySelectorAll('#paper-ozaki-pbq table.claims thead')].map(t => t.textContent)")
    assert heads and all("paper value" in h for h in heads)


def test_figures_show_gaps_on_log_axes_and_the_absent_as_absent(reproduced, page):
    figs = page.eval(
        "[...document.querySelectorAll('figure.fig')].map(f => [f.id, f.dataset.yscale, f.dataset.gap ? +f.dataset.gap : null,"
        " +f.dataset.absent, f.querySelectorAll('[id^=model-bar-]').length, f.querySelector('svg').textContent])"
    )
    for fid, scale, gap, absent, bars, text in figs:
        if gap is not None and gap > 5:
            assert scale != "linear", f"{fid}: the paper and the model differ {gap:.0f}x on a linear axis"
        if absent:
            assert bars == 0 and "not simulated" in text, (
                f"{fid}: a quantity the model does not simulate drawn as a value"
            )
    by_id = {f[0]: f for f in figs}
    assert by_id["fig-goda-rfs-migrations-3"][1] == "log", "Table 3's migrations: 28x apart"
    assert by_id["fig-goda-rfs-migrations-4"][3] == 1, "LLC misses: not simulated"


def test_live_is_dashed_with_open_markers_and_the_model_solid(reproduced, page):
    styles = page.eval(
        """(() => {
      const dash = g => [...g.querySelectorAll('path')].some(p => /stroke-dasharray/.test(p.getAttribute('style') || ''));
      const open = g => [...g.querySelectorAll('use, path')].some(p => /fill: ?#ffffff/i.test(p.getAttribute('style') || ''));
      return [[...document.querySelectorAll('figure.fig g[id^="live-line-"]')].map(g => [g.id, dash(g), open(g)]),
              [...document.querySelectorAll('figure.fig g[id^="model-line-"]')].map(g => [g.id, dash(g)])];
    })()"""
    )
    live, model = styles
    assert len(live) > 20 and len(model) > 50
    for gid, dashed, opened in live:
        assert dashed and opened, f"{gid}: a live series not dashed with open markers"
    for gid, dashed in model:
        assert not dashed, f"{gid}: a model series drawn dashed, as live is"


def test_figure_text_is_text_inside_its_box_and_opens_full_size(reproduced, page):
    out = page.eval(
        """(() => {
      const bad = [];
      let n = 0;
      for (const svg of document.querySelectorAll('figure.fig svg')) {
        const b = svg.getBoundingClientRect();
        for (const t of svg.querySelectorAll('text')) {
          const r = t.getBoundingClientRect();
          if (r.width === 0) continue;
          n++;
          if (r.left < b.left - 1 || r.right > b.right + 1 || r.top < b.top - 1 || r.bottom > b.bottom + 1)
            bad.push(svg.closest('figure').id + ': ' + t.textContent);
        }
      }
      return [n, bad, document.querySelectorAll('figure.fig svg defs path[id^="DejaVu"]').length];
    })()"""
    )
    n, clipped, glyphs = out
    assert n > 1000, "figure text is kept as <text>"
    assert glyphs == 0, "no text drawn as glyph paths"
    assert not clipped, f"text outside its figure: {clipped[:5]}"
    assert page.eval(
        "[...document.fonts].filter(f => f.family.includes('DejaVu Sans')).every(f => f.status === 'loaded')"
    )
    # Bar values are never written inside their bars (a number cut by its bar: ".085e+0").
    assert not page.eval(
        "[...document.querySelectorAll('figure.fig svg text')].some(t => /e[+-]0/.test(t.textContent))"
    )
    # A click opens the figure over the whole window; Escape closes it.
    fid = "fig-goda-rfs-migrations-3"
    page.eval(f"document.querySelector('#{fid} .svg').click()")
    w = page.eval(f"document.querySelector('#{fid} svg').getBoundingClientRect().width")
    assert page.eval(f"document.getElementById('{fid}').classList.contains('zoomed')") and w >= 0.9 * WINDOW[0]
    page.eval("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'}))")
    assert not page.eval(f"document.getElementById('{fid}').classList.contains('zoomed')")


def test_every_figure_and_claims_table_links_its_csv(reproduced, page):
    rep = reproduced / "report"
    links = page.eval(
        "[...document.querySelectorAll('figure.fig')].map(f => [f.id, [...f.querySelectorAll('figcaption a')]"
        ".map(a => a.getAttribute('href'))])"
    )
    for fid, hrefs in links:
        csvs = [h for h in hrefs if h.endswith(".csv")]
        assert any(h.startswith("figures/") for h in csvs) and any(h.endswith("results.csv") for h in csvs), fid
        for h in csvs:
            assert (rep / h).resolve().exists(), f"{fid}: {h} missing"
        drawn = pd.read_csv(rep / next(h for h in csvs if h.startswith("figures/")))
        assert len(drawn) > 0 and set(drawn["series"]) <= {"model", "paper", "live", "measured"}, fid
    tables = page.eval(
        "[...document.querySelectorAll('h3[id^=claims-]')].map(h => [h.id, h.querySelector('a[href$=\".csv\"]')"
        "?.getAttribute('href')])"
    )
    assert tables
    for tid, href in tables:
        assert href and (rep / href).exists(), tid
    n = sum(len(pd.read_csv(rep / h)) for _, h in tables)
    assert n == len(claims(reproduced)), "the claims' CSVs hold every claim"


def test_calibration_health(reproduced, page):
    blocks = page.eval(
        "[...document.querySelectorAll('div.calib')].map(d => [d.id, d.textContent,"
        " [...d.querySelectorAll('tr.onbound td:first-child')].map(t => t.textContent)])"
    )
    ids = [b[0] for b in blocks]
    assert len(ids) == len(set(ids)), "one block per overlay"
    names = {
        hostsim.info(d / "scenario.toml").get("calibration", {})
        and hostsim.info(d / "scenario.toml")["calibration"]["name"]
        for d in scenario_dirs(reproduced)
        if hostsim.info(d / "scenario.toml").get("calibrate")
    }
    assert len(ids) == len(names)
    by = {b[0]: b for b in blocks}
    for d in scenario_dirs(reproduced):
        inf = hostsim.info(d / "scenario.toml")
        if not inf.get("calibrate") or not (inf["calibration"].get("overlay") or {}).get("values"):
            continue
        block = by[f"calib-{inf['calibration']['name']}"]
        values = inf["calibration"]["overlay"]["values"]
        for p in inf["calibrate"]:
            v, lo, hi = values.get(p["name"]), p["min"], p["max"]
            on = v is not None and min(abs(v - lo), abs(hi - v)) <= 0.01 * (hi - lo)
            assert (p["name"] in block[2]) == on, (block[0], p["name"], v, lo, hi)
        fit = inf["calibration"]["overlay"].get("fit", {})
        start = fit.get("objective_start", fit.get("objective_before"))
        end = fit.get("objective", fit.get("objective_after"))
        if start is not None and start == end:
            assert "Not fitted" in block[1], block[0]
        # Objectives rounded to what the fit resolves, not printed to 16 digits.
        assert not re.search(r"\d\.\d{6,}", block[1]), block[0]
    assert any("takeuchi" in b[0] and b[2] for b in blocks), "takeuchi's fitted costs sit on their bounds"


def test_no_console_error_no_broken_image_and_japanese_renders(reproduced, page):
    assert page.errors == []
    broken = page.eval("[...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)")
    assert broken == []
    # Every CJK character on the page is in the embedded font, which the browser loaded.
    cjk = page.eval("[...new Set(document.body.innerText)].filter(c => c.codePointAt(0) >= 0x2E80).join('')")
    assert len(cjk) > 20, "the papers' Japanese quotes are on the page"
    assert page.eval("[...document.fonts].filter(f => f.family.includes('hostsim-cjk')).map(f => f.status)") == [
        "loaded"
    ]
    assert page.eval(f"document.fonts.check(\"14px 'hostsim-cjk'\", {json.dumps(cjk)})")


def test_navigation_glossary_and_the_verdict_rule(reproduced, page):
    hrefs = page.eval("[...document.querySelectorAll('nav#toc a')].map(a => a.getAttribute('href'))")
    assert len(hrefs) >= 9
    for h in hrefs:
        assert page.eval(f"!!document.getElementById({json.dumps(h[1:])})"), h
    gloss = page.eval("document.getElementById('glossary').textContent")
    for term in (
        "primary reading",
        "alternative reading",
        "INCONCLUSIVE",
        "not testable",
        "calibration claim",
        "no model value",
        "range claim",
    ):
        assert term in gloss, term
    rule = page.eval("document.getElementById('verdict-rule').textContent")
    assert "80 %" in rule and "100 %" in rule and "50 %" in rule
    assert page.eval("document.querySelectorAll('#sensitivity tbody tr').length") == 2 * len(verdicts.THRESHOLDS)


def test_prose_names_no_number_no_path_no_issue_and_one_microsecond(reproduced, page):
    for pid, p in papers.PAPERS.items():
        for k in ("line", "mechanism", "live"):
            assert not re.search(r"\d", p.get(k) or ""), (
                f"papers.py {pid}.{k} names a number: results come from expectations.json"
            )
    texts = [(reproduced / "report" / "index.html").read_text()]
    texts += [f.read_text() for f in (reproduced / "report" / "figures").glob("*.svg")]
    for t in texts:
        for p in {str(ROOT), str(reproduced), str(reproduced.parent), "/tmp/", "/home/", "/root/", "file://"}:
            assert p not in t, f"the report contains {p!r}"
    shown = page.eval(
        "document.body.innerText + ' ' + [...document.querySelectorAll('svg text')].map(t => t.textContent).join(' ')"
    )
    cites = re.findall(r"(?i)\b(?:issue|issues) \d+|\bnotes?(?: \d{3})? ?§|\bnotes? \d{3}\b[^.;)]*", shown)
    assert not cites, f"the report cites what a reader cannot open: {cites[:5]}"
    us = re.findall(r".{20}(?:\d ?|[()] ?)us\b.{5}", shown)
    assert not us, f"micro-seconds spelled 'us': {us[:5]}"


def test_every_paper_opens_with_its_key_claims(reproduced, page):
    cs = claims(reproduced)
    for pid, p in papers.PAPERS.items():
        for prefix in p["headline_claims"]:
            assert any(c["claim"].startswith(prefix) for c in cs if c["scenario"].startswith(pid)), (pid, prefix)
        n = page.eval(f"document.querySelectorAll('#paper-{pid} .glance li').length")
        assert n >= len(p["headline_claims"]), pid


def test_censored_values_print_as_bounds(reproduced, page):
    # 004-Q1's maximum throughput is the top of the sweep: at least that, not that.
    row = page.eval(
        "[...document.querySelectorAll('tr.fail')].find(tr => tr.textContent.includes('004-Q1:')).textContent"
    )
    assert "≥ 2,800" in row


def test_calibration_says_fitted_only_where_an_overlay_holds_fitted_values(reproduced):
    page = (reproduced / "report" / "index.html").read_text()
    for pid in papers.PAPERS:
        sec = page.split(f'id="paper-{pid}"', 1)[1].split("<section", 1)[0]
        dirs = [d for d in scenario_dirs(reproduced) if d.name.startswith(pid)]
        fitted = [d for d in dirs if report.fitted(hostsim.info(d / "scenario.toml"))]
        if 'id="claims-' + pid + '-calibration"' not in sec:
            continue
        note = sec.split(f'id="claims-{pid}-calibration"', 1)[0].rsplit("<h4>", 1)[1]
        assert ("fitted to these" in note or "fitted to those of" in note) == bool(fitted), (pid, note)
    # Paper 003's UNIX costs are fitted (calibration/takeuchi-symbiose.toml): its table says so.
    sec = page.split('id="paper-takeuchi-symbiose"', 1)[1].split("<section", 1)[0]
    assert "nothing was fitted to them" not in sec and "fitted to these" in sec


def test_readme_summary_is_the_reports(reproduced):
    block = _summary.readme_block((ROOT / "README.md").read_text())
    assert block is not None, "README has no report:summary block"
    want = _summary.readme_table(report.summary_rows(reproduced))
    assert block == want, (
        "README's summary differs from this reproduce: run `python -m hostsim.report out "
        "--readme README.md` after `hostsim reproduce --out out`\n" + want
    )
    # Outside the generated block, the README's results section names no number.
    text = (ROOT / "README.md").read_text()
    section = text.split("<!-- report:results:begin -->", 1)[1].split("<!-- report:results:end -->", 1)[0]
    prose = section.replace(_summary.README_BEGIN + "\n" + block + _summary.README_END, "")
    assert not re.search(r"\d", prose), "README's results prose names a number: " + re.search(r".*\d.*", prose).group(0)


def test_a_scenario_that_extends_a_paper_goes_to_extensions_not_to_the_paper(hostsim_bin, tmp_path):
    # Named like a paper experiment, but `extends` it: the report must not file it as a reproduction.
    text = (ROOT / "scenarios" / "examples" / "livelock.toml").read_text()
    text = 'extends = "ozaki-pbq"\n' + text.replace("duration_ms = 600", "duration_ms = 60").replace(
        "warmup_ms = 100", "warmup_ms = 10"
    )
    (tmp_path / "ozaki-pbq-elsewhere.toml").write_text(text)
    out = tmp_path / "out"
    cli(hostsim_bin, "sweep", tmp_path / "ozaki-pbq-elsewhere.toml", "--out", out / "ozaki-pbq-elsewhere")
    (out / "ozaki-pbq-elsewhere" / "scenario.toml").write_text(text)
    (out / "expectations.json").write_text((out / "ozaki-pbq-elsewhere" / "expectations.json").read_text())
    page = report.build(out).read_text()
    assert 'id="extensions"' in page and 'id="paper-ozaki-pbq"' not in page
    assert "extends paper 000 (ozaki-pbq), not a reproduction" in page
    assert 'id="claims-extensions"' in page and page.count('<tr class="pass"') + page.count('<tr class="fail"') == 3
    assert 'id="provenance" class="prov missing"' in page, "no provenance.json: the report says so"


def test_command_in_the_provenance_names_no_path():
    assert (
        _page._command(["/home/u/hostsim/target/release/hostsim", "reproduce", "--out", "/tmp/x/out"])
        == "hostsim reproduce --out …/out"
    )
    assert _page._command(["hostsim", "reproduce", "a b"]) == "hostsim reproduce 'a b'"


def test_headline_claims_prefer_the_primary_reading():
    cs = [
        {"scenario": "s", "claim": "X: alt", "primary": False, "role": "prediction", "verdict": "pass"},
        {"scenario": "s", "claim": "X: main", "primary": True, "role": "prediction", "verdict": "fail"},
    ]
    hits = sorted([c for c in cs if c["claim"].startswith("X:")], key=lambda c: not _summary.is_primary(c))
    assert hits[0]["claim"] == "X: main"


def test_largest_gap_leaves_out_passing_paired_and_zero_valued_claims():
    def c(sim, pv, verdict="fail", paired=False, primary=True):
        return {"sim": sim, "paper_value": pv, "verdict": verdict, "paired": paired, "primary": primary}

    best, zeros = _summary.gaps(
        [c(100, 10), c(1000, 1, "pass"), c(500, 1, paired=True), c(0, 5), c(900, 1, primary=False), c(-1, 2)],
        lambda _c: "m",
    )
    assert best.factor == 10 and len(zeros) == 2
    assert _summary.Gap(2.345, {}, "m").factor_text() == "2.35×"


def test_units_have_one_spelling():
    assert metrics.units("gaps >= 400 us, in [400, 800) us (us)") == "gaps >= 400 µs, in [400, 800) µs (µs)"
    assert metrics.units("it tells us why; status; the bus") == "it tells us why; status; the bus"
    assert metrics.label("migrations_per_s") == "process migrations (/s)"


def test_no_path_and_no_note_in_what_the_scenarios_show():
    """Findings, details, descriptions and figure texts cite only what a reader can open."""
    import glob
    import tomllib

    bad = []
    for f in glob.glob(str(ROOT / "scenarios" / "**" / "*.toml"), recursive=True):
        d = tomllib.loads(Path(f).read_text())
        texts = [d.get("description", "")]
        texts += [e.get(k, "") for e in d.get("expect", []) for k in ("finding", "detail", "paper", "claim")]
        texts += [fg.get(k, "") for fg in d.get("figure", []) for k in ("title", "paper", "xlabel", "ylabel")]
        for t in texts:
            for m in re.finditer(r"(?i)\bissues? \d+|\bnotes?(?: \d{3})? ?§|\bnotes? \d{3}\b", t):
                bad.append(f"{Path(f).name}: ...{t[max(0, m.start() - 30) : m.end() + 10]}...")
    assert not bad, "\n".join(bad)


def test_an_extension_s_black_marks_are_the_paper_s_inputs(reproduced, page):
    caps = page.eval(
        "[...document.querySelectorAll('#extensions figure.fig')].map(f => [f.querySelectorAll('[id^=paper-]').length,"
        " f.querySelector('figcaption').textContent])"
    )
    assert caps
    for marks, cap in caps:
        assert ("no paper measured this setting" in cap) == bool(marks), cap
        assert "the paper's" not in cap.split("SVG")[0] or not marks, cap
