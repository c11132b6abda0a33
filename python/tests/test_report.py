"""The report of a full `hostsim reproduce` (the session's `reproduced`), as a reader sees it:
opened in headless Chromium (Debian's package, driven over the DevTools protocol: browser.py),
its summary must fit a 1366x768 window and say what expectations.json says, no console error
and no broken image, Japanese rendered from the embedded font; every figure must pass the checks
that keep it from misleading (axes from 0, the paper's values marked, bands and gaps explained,
identical series told apart, no two labels overlapping on the rendered SVG); the prose names no
number that could go stale and no path of the machine that built it."""

import json
import re
from pathlib import Path

import hostsim
import pandas as pd
import pytest
from browser import Browser
from conftest import ROOT, cli
from hostsim import _summary, papers, plot, report

WINDOW = (1366, 768)


def claims(out):
    return json.loads((out / "expectations.json").read_text())


def scenario_dirs(out):
    return sorted(p for p in out.iterdir() if (p / "results.csv").exists())


@pytest.fixture(scope="module")
def page(reproduced, tmp_path_factory):
    """The report opened at 1366x768: (browser, what the test learnt), kept open for the module."""
    b = Browser(tmp_path_factory.mktemp("chromium"))
    b.open((reproduced / "report" / "index.html").as_uri(), *WINDOW)
    yield b
    b.close()


def test_summary_fits_the_window_and_says_what_expectations_json_says(reproduced, page):
    box = page.eval(
        "(() => { const r = document.getElementById('summary-table').getBoundingClientRect();"
        " return [r.top, r.bottom, innerHeight, innerWidth, document.documentElement.scrollWidth]; })()"
    )
    top, bottom, height, width, scroll_width = box
    assert bottom <= height, f"the summary ends at {bottom:.0f} px, below the {height} px window"
    assert scroll_width <= width, "the page scrolls sideways"
    page.screenshot(reproduced / "report" / "summary-1366x768.png")
    rows = page.eval(
        "[...document.querySelectorAll('#summary-table tbody tr')].map(tr => ({"
        " key: tr.dataset.key, scenarios: tr.dataset.scenarios.split(' '),"
        " cells: [...tr.querySelectorAll('td.tally')].map(td => [td.dataset.role, +td.dataset.passed,"
        " +td.dataset.judged, +td.dataset.notApplicable, td.textContent]),"
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
        for role, passed, judged, na, text in r["cells"]:
            # Recounted here from expectations.json, independently of the report's code.
            prim = [c for c in mine if c["role"] == role and c["primary"]]
            assert passed == sum(c["verdict"] == "pass" for c in prim), (r["key"], role)
            assert judged == sum(c["verdict"] in ("pass", "fail", "inconclusive") for c in prim), (r["key"], role)
            assert na == sum(c["verdict"] == "not_applicable" for c in prim), (r["key"], role)
            if judged:
                assert text.startswith(f"{passed} / {judged}"), (r["key"], text)
        assert page.eval(f"!!document.getElementById({json.dumps(r['href'][1:])})"), f"{r['href']} leads nowhere"
    assert seen == {c["scenario"] for c in cs}, "every claim's scenario has a row"
    for role in ("calibration", "prediction"):
        prim = [c for c in cs if c["role"] == role and c["primary"]]
        total = page.eval(f"document.getElementById('total-{role}').textContent")
        assert (
            total
            == f"{sum(c['verdict'] == 'pass' for c in prim)} / {sum(c['verdict'] != 'not_applicable' for c in prim)}"
        )


def test_no_console_error_no_broken_image_and_japanese_renders(reproduced, page):
    assert page.errors == []
    broken = page.eval("[...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)")
    assert broken == []
    assert page.eval("document.images.length") >= 40
    # Every CJK character on the page is in the embedded font, which the browser loaded.
    cjk = page.eval("[...new Set(document.body.innerText)].filter(c => c.codePointAt(0) >= 0x2E80).join('')")
    assert len(cjk) > 20, "the papers' Japanese quotes are on the page"
    assert page.eval("[...document.fonts].filter(f => f.family.includes('hostsim-cjk')).map(f => f.status)") == [
        "loaded"
    ]
    assert page.eval(f"document.fonts.check(\"14px 'hostsim-cjk'\", {json.dumps(cjk)})")


def test_every_figure_and_every_claim_is_in_the_report(reproduced, page):
    dom = page.eval("document.documentElement.outerHTML")
    want = 0
    for d in scenario_dirs(reproduced):
        figs = report.figures_of(hostsim.info(d / "scenario.toml"))
        want += len(figs)
        for f in figs:
            assert f["title"].replace('"', "&quot;") in dom, f"figure {f['title']!r} missing"
    assert page.eval("document.querySelectorAll('figure img').length") == want >= 15
    assert page.eval("[...document.querySelectorAll('figure img')].every(i => i.dataset.loaded === '1')")
    cs = claims(reproduced)
    rows = re.findall(r'<tr class="(pass|fail|inconclusive|not_applicable)">', dom)
    assert len(rows) == len(cs)
    for v in ["pass", "fail", "inconclusive", "not_applicable"]:
        assert rows.count(v) == sum(c["verdict"] == v for c in cs), v
    for pid in ["ozaki-pbq", "goda-rfs"]:
        assert f'id="claims-{pid}-calibration"' in dom and f'id="claims-{pid}-prediction"' in dom
    assert dom.index('id="extensions"') > dom.index('id="paper-ozaki-pbq"')
    # A long finding's evidence is folded away, and a stale one says so.
    assert dom.count("<details>") == sum(bool(c["detail"]) for c in cs)
    assert dom.count('class="stale"') == sum(c["finding_stale"] for c in cs)
    page.screenshot(reproduced / "report" / "screenshot.png", full_page=True)


def test_no_two_labels_overlap_on_any_rendered_figure(reproduced, tmp_path):
    figs = sorted((reproduced / "report" / "figures").glob("*.svg"))
    assert len(figs) >= 40
    # Each of matplotlib's text groups (titles, tick labels, axis labels, legend entries) as
    # Chromium lays it out; two boxes may touch but not overlap by more than half a pixel.
    js = """(() => {
      const g = [...document.querySelectorAll('g[id^="text_"], g[id^="legend"] > g[id^="text"]')]
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
            b.open(f.as_uri(), 900, 900)
            n, clashes = b.eval(js)
            if not f.name.startswith("thumb-"):
                assert n >= 3, f"{f.name}: no text found ({n})"
            assert not clashes, f"{f.name}: labels overlap: {clashes}"


def _figure_specs(out):
    for d in scenario_dirs(out):
        inf = hostsim.info(d / "scenario.toml")
        df = pd.read_csv(d / "results.csv")
        for k, spec in enumerate(report.figures_of(inf)):
            yield d, inf, df, k, spec


def test_figures_cannot_mislead(reproduced):
    for d, _inf, df, k, spec in _figure_specs(reproduced):
        s = dict(spec)
        meas = d / Path(s["measured"]).name if s.get("measured") else None
        s["measured"] = pd.read_csv(meas) if meas is not None and meas.exists() else None
        fig = plot.figure(df, **s)
        ax = fig.axes[0]
        where = f"{d.name} figure {k + 1} ({spec['title']})"
        legend = [t.get_text() for t in (ax.get_legend().get_texts() if ax.get_legend() else [])]
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
                    t.startswith(f"paper: {group}:") and f"{value.strip()} at {m['x']:g}" in t for t in legend
                ), f"{where}: mark {m['label']!r} not in the legend"
            else:
                assert any(m["label"] in t for t in legend), f"{where}: mark {m['label']!r} not in the legend"
        if ax.collections and any(
            type(c).__name__ in ("PolyCollection", "FillBetweenPolyCollection") for c in ax.collections
        ):
            assert any(t.startswith(("band:", "hatched:")) for t in legend), (
                f"{where}: a band that does not say what it is"
            )
        sims = [ln for ln in ax.lines if str(ln.get_label()).startswith("simulated:")]
        for i, a in enumerate(sims):
            for b in sims[:i]:
                same = len(a.get_ydata()) == len(b.get_ydata()) and all(
                    (x == y) or (x != x and y != y) for x, y in zip(a.get_ydata(), b.get_ydata(), strict=True)
                )
                if same:
                    assert "same as" in a.get_label(), f"{where}: {a.get_label()} hides {b.get_label()}"
            if any(y != y for y in a.get_ydata()):
                assert any(t.startswith("gap in a line") for t in legend), (
                    f"{where}: an undefined point drawn without saying so"
                )
        import matplotlib.pyplot as plt

        plt.close(fig)


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


def test_censored_values_print_as_bounds(reproduced, page):
    # 004-Q1's maximum throughput is the top of the sweep: at least that, not that.
    row = page.eval(
        "[...document.querySelectorAll('tr.fail')].find(tr => tr.textContent.includes('004-Q1:')).textContent"
    )
    assert "≥ 2,800" in row


def test_prose_names_no_number_and_no_path(reproduced):
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
    # Paper 003's UNIX costs are fitted since issue 27 (calibration/takeuchi-symbiose.toml): its
    # table says so, where it once said that nothing was fitted.
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


def test_plot_figure_in_a_notebook():
    df = pd.DataFrame({"variant": ["a", "a", "b", "b"], "x": [1, 2, 1, 2], "m": [1.0, 2.0, 1.5, float("nan")]})
    fig = hostsim.plot.figure(df, y="m", x="x", title="t", marks=[{"x": 1, "y": 1.2, "label": "paper"}, {"x": 2}])
    assert len(fig.axes[0].lines) >= 3
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any(t.startswith("gap in a line") for t in labels), "b's undefined point is a gap, said so"
    fig = hostsim.plot.figure(df, y="m", marks=[{"variant": "a", "y": 1.0}])
    assert len(fig.axes[0].patches) == 1, "b is undefined on a seed: no bar"


def test_identical_series_are_both_visible_and_a_ratio_mark_lands_on_its_variant():
    df = pd.DataFrame({"variant": ["a", "a", "b", "b"], "x": [1, 2, 1, 2], "m": [1.0, 2.0, 1.0, 2.0]})
    fig = hostsim.plot.figure(df, y="m", x="x", marks=[{"x": 2, "ratio": 0.5, "of": "a", "label": "half of a"}])
    ax = fig.axes[0]
    labels = [ln.get_label() for ln in ax.lines]
    assert "simulated: b (same as a)" in labels
    star = [ln for ln in ax.lines if ln.get_label() == "paper: half of a"][0]
    assert list(star.get_xdata()) == [2.0] and list(star.get_ydata()) == [1.0]
    assert ax.get_ylim()[0] == 0


def test_bars_whose_seeds_all_agree_draw_with_a_zero_range():
    # Equal values whose float mean lies a rounding step outside them (pandas: seven 0.1s
    # average below 0.1, three above): the seed-range error bar must not go negative
    # (matplotlib raised, and `hostsim reproduce` failed to build its report).
    df = pd.DataFrame({"variant": ["a"] * 7 + ["b"] * 3, "m": [0.1] * 10})
    assert df[df["variant"] == "a"]["m"].mean() < 0.1 < df[df["variant"] == "b"]["m"].mean()
    fig = hostsim.plot.figure(df, y="m")
    assert len(fig.axes[0].patches) == 2
