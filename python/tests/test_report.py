"""The report of `hostsim reproduce`, opened from disk in headless Chromium (Debian's package):
every figure of every reproduced scenario loads and every claim is in a claims table, calibration
claims apart from predictions. The reproduce runs 1 seed per point (`--seeds 1`) to stay within
the test budget; `hostsim reproduce` proper uses each scenario's own seed count."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import hostsim
from hostsim import report
from conftest import ROOT, cli


def chromium(*args, timeout=120) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    # No skip: the report is checked or the test fails (scripts/test.sh installs chromium).
    assert exe, "chromium not found: apt-get install chromium (scripts/test.sh does)"
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--no-first-run", "--virtual-time-budget=10000", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def reproduced(hostsim_bin, tmp_path_factory):
    out = tmp_path_factory.mktemp("repro") / "out"
    env = dict(os.environ, HOSTSIM_PYTHON=__import__("sys").executable)
    r = cli(hostsim_bin, "reproduce", "--seeds", "1", "--out", out, env=env, timeout=1800)
    assert "report ->" in r.stderr, r.stderr
    return out


def test_reproduce_writes_results_claims_and_report(reproduced):
    claims = json.loads((reproduced / "expectations.json").read_text())
    keys = {"scenario", "claim", "paper", "sim", "sim_ci", "rhs", "held", "seeds", "role", "verdict", "pass", "finding"}
    assert claims and all(keys <= c.keys() for c in claims)
    assert all(c["seeds"] == 1 for c in claims if c["verdict"] != "not_applicable" and not c["error"])
    assert {"calibration", "prediction"} <= {c["role"] for c in claims}
    for name in ["ozaki-pbq-throughput", "ozaki-pbq-latency", "ozaki-pbq-micro", "goda-rfs-migrations", "livelock",
                 "flow-limit-vs-pbq"]:
        assert (reproduced / name / "results.csv").exists()
        assert (reproduced / name / "scenario.toml").exists()
    assert (reproduced / "report" / "index.html").exists()


def test_every_figure_and_the_claims_table_render_in_chromium(reproduced, tmp_path):
    index = reproduced / "report" / "index.html"
    r = chromium(f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", index.as_uri())
    assert r.returncode == 0, r.stderr
    dom = r.stdout
    claims = json.loads((reproduced / "expectations.json").read_text())
    # Every declared figure of every reproduced scenario (or the automatic ones), loaded.
    want = 0
    for d in sorted(p for p in reproduced.iterdir() if (p / "results.csv").exists()):
        inf = hostsim.info(d / "scenario.toml")
        figs = inf["figures"] or report.auto_figures(inf)
        want += len(figs)
        for f in figs:
            assert f["title"].replace('"', "&quot;") in dom, f"figure {f['title']!r} missing"
    imgs = re.findall(r"<img [^>]*>", dom)
    assert len(imgs) == want >= 15
    unloaded = [i for i in imgs if 'data-loaded="1"' not in i]
    assert not unloaded, f"{len(unloaded)} figures did not load: {unloaded[:2]}"
    # The claims, failing ones included, each in a claims table row.
    rows = re.findall(r'<tr class="(pass|fail|inconclusive|not_applicable)">', dom)
    assert len(rows) == len(claims)
    for v in ["pass", "fail", "inconclusive", "not_applicable"]:
        assert rows.count(v) == sum(c["verdict"] == v for c in claims), v
    assert len(re.findall(r'<table class="claims"', dom)) >= 3
    for pid in ["ozaki-pbq", "goda-rfs"]:
        assert f'id="paper-{pid}"' in dom and f'id="claims-{pid}"' in dom
        # Calibration claims and predictions in separate tables.
        assert f'id="claims-{pid}-calibration"' in dom and f'id="claims-{pid}-prediction"' in dom
    # A scenario that `extends` a paper's experiment is drawn apart, with its own claims table.
    assert 'id="extensions"' in dom and 'id="claims-extensions"' in dom
    assert dom.index('id="extensions"') > dom.index('id="paper-ozaki-pbq"')


def test_a_scenario_that_extends_a_paper_goes_to_extensions_not_to_the_paper(hostsim_bin, tmp_path):
    # Named like a paper experiment, but `extends` it: the report must not file it as a reproduction.
    text = (ROOT / "scenarios" / "examples" / "livelock.toml").read_text()
    text = 'extends = "ozaki-pbq"\n' + text.replace("duration_ms = 600", "duration_ms = 60").replace("warmup_ms = 100", "warmup_ms = 10")
    (tmp_path / "ozaki-pbq-elsewhere.toml").write_text(text)
    out = tmp_path / "out"
    cli(hostsim_bin, "sweep", tmp_path / "ozaki-pbq-elsewhere.toml", "--out", out / "ozaki-pbq-elsewhere")
    (out / "ozaki-pbq-elsewhere" / "scenario.toml").write_text(text)
    (out / "expectations.json").write_text((out / "ozaki-pbq-elsewhere" / "expectations.json").read_text())
    page = report.build(out).read_text()
    assert 'id="extensions"' in page and 'id="paper-ozaki-pbq"' not in page
    assert "extends paper 000 (ozaki-pbq), not a reproduction" in page
    assert 'id="claims-extensions"' in page and page.count('<tr class="') == 3


def test_screenshot(reproduced, tmp_path):
    shot = reproduced / "report" / "screenshot.png"
    r = chromium(f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars", "--window-size=1200,3000",
                 f"--screenshot={shot}", (reproduced / "report" / "index.html").as_uri())
    assert r.returncode == 0, r.stderr
    assert shot.exists() and shot.stat().st_size > 50_000  # a blank page is a few KB


def test_plot_figure_in_a_notebook():
    import pandas as pd

    df = pd.DataFrame({"variant": ["a", "a", "b", "b"], "x": [1, 2, 1, 2], "m": [1.0, 2.0, 1.5, float("nan")]})
    fig = hostsim.plot.figure(df, y="m", x="x", title="t", marks=[{"x": 1, "y": 1.2, "label": "paper"}, {"x": 2}])
    assert len(fig.axes[0].lines) >= 3
    fig = hostsim.plot.figure(df, y="m", marks=[{"variant": "a", "y": 1.0}])
    assert len(fig.axes[0].patches) == 2


def test_bars_whose_seeds_all_agree_draw_with_a_zero_range():
    # Equal values whose float mean lies a rounding step outside them (pandas: seven 0.1s
    # average below 0.1, three above): the seed-range error bar must not go negative
    # (matplotlib raised, and `hostsim reproduce` failed to build its report).
    import pandas as pd

    df = pd.DataFrame({"variant": ["a"] * 7 + ["b"] * 3, "m": [0.1] * 10})
    assert df[df["variant"] == "a"]["m"].mean() < 0.1 < df[df["variant"] == "b"]["m"].mean()
    fig = hostsim.plot.figure(df, y="m")
    assert len(fig.axes[0].patches) == 2
