"""A model twin with one variant per placement of the receive work (`<placement>-<variant>`,
scenarios/live-ozaki-pbq.toml) is drawn against the live rows of that placement and variant only,
and the report gives the model's prediction beside each live point (issue 28)."""

import math
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from hostsim import plot, report

ROOT = Path(__file__).resolve().parents[2]
KEY = "traffic.floodclients.rate_pps"


def live_frame():
    rows = []
    for p in ("rps", "threaded"):
        for v in ("off", "on", "supp"):
            for rate, sent in ((1000, 1000.0), (600000, 594000.0)):
                for rep, dy in ((1, -10.0), (2, 10.0)):
                    rows.append(
                        {
                            "variant": v,
                            "placement": p,
                            KEY: rate,
                            "rep": rep,
                            "floodclients_sent_pps": sent + rep,
                            "bw_rx_pps": {"off": 30000.0, "on": 33000.0, "supp": 31000.0}[v]
                            + (p == "threaded") * 500
                            + dy,
                        }
                    )
    return pd.DataFrame(rows)


def model_frame():
    rows = []
    for v, base in (("rps-off", 32000.0), ("rps-on", 34000.0), ("threaded-off", 33000.0)):
        for seed, dy in ((1, -100.0), (2, 100.0)):
            for rate in (1000, 500000, 1000000):
                rows.append({"variant": v, "seed": seed, KEY: rate, "bw_rx_pps": base - rate / 100000 + dy})
    return pd.DataFrame(rows)


def test_placement_variants_take_their_own_rows():
    live = live_frame()
    got = {(v, w, p): len(d) for v, w, p, d in plot.measured_series(live, ["rps-off", "rps-on", "threaded-off"])}
    assert got == {("rps-off", "off", "rps"): 4, ("rps-on", "on", "rps"): 4, ("threaded-off", "off", "threaded"): 4}
    # A plain variant name still takes its rows in every placement (the figures of before).
    got = {(v, w, p) for v, w, p, _ in plot.measured_series(live, ["off"])}
    assert got == {("off", "off", "rps"), ("off", "off", "threaded")}


def test_figure_draws_each_placement_variant_in_its_model_colour():
    live, model = live_frame(), model_frame()
    fig = plot.figure(
        model, "bw_rx_pps", x=KEY, measured=live, measured_label="live", measured_x="floodclients_sent_pps"
    )
    lines = {str(ln.get_label()): ln for ln in fig.axes[0].lines}
    assert set(k for k in lines if k.startswith("live")) == {
        "live: off (rps)",
        "live: on (rps)",
        "live: off (threaded)",
    }
    for sim, meas in (("rps-off", "live: off (rps)"), ("threaded-off", "live: off (threaded)")):
        assert lines[meas].get_color() == lines[f"model: {sim}"].get_color()
    want = live[(live["variant"] == "off") & (live["placement"] == "threaded")].groupby(KEY)["bw_rx_pps"].mean().values
    assert list(lines["live: off (threaded)"].get_ydata()) == list(want)
    plt.close(fig)


def test_model_beside_each_live_point_is_read_at_the_achieved_rate():
    live, model = live_frame(), model_frame()
    t = plot.measured_vs_model(model, live, KEY, "floodclients_sent_pps", ["bw_rx_pps", "not_a_metric"])
    assert "not_a_metric" not in t and "not_a_metric_model" not in t
    # One row per (variant the model has, live rate); the live variants without a model form are left out.
    assert sorted(zip(t["variant"], t[KEY], strict=True)) == sorted(
        (v, r) for v in ("rps-off", "rps-on", "threaded-off") for r in (1000, 600000)
    )
    r = t[(t["variant"] == "threaded-off") & (t[KEY] == 600000)].iloc[0]
    assert r["placement"] == "threaded" and r["measured_variant"] == "off" and r["reps"] == 2
    assert r["measured_x"] == 594001.5
    assert r["bw_rx_pps"] == 30500.0  # the live mean of the two repetitions
    # The model's seed mean, linear between its points 500,000 and 1,000,000, at 594,001.5.
    assert math.isclose(r["bw_rx_pps_model"], 33000.0 - 594001.5 / 100000, rel_tol=1e-12)
    # At a rate the model swept (the first point, achieved 1,001.5 > 1,000): read on its curve too.
    r = t[(t["variant"] == "rps-off") & (t[KEY] == 1000)].iloc[0]
    assert math.isclose(r["bw_rx_pps_model"], 32000.0 - 1001.5 / 100000, rel_tol=1e-12)


def test_no_extrapolation_outside_the_models_sweep():
    live = live_frame()
    model = model_frame()
    model = model[model[KEY] <= 500000]
    t = plot.measured_vs_model(model, live, KEY, "floodclients_sent_pps", ["bw_rx_pps"])
    assert t[t[KEY] == 600000]["bw_rx_pps_model"].isna().all()
    assert t[t[KEY] == 1000]["bw_rx_pps_model"].notna().all()


def test_report_table_under_the_figures(tmp_path):
    d = tmp_path / "live-twin"
    d.mkdir()
    live_frame().to_csv(d / "ozaki-pbq.csv", index=False)
    model = model_frame()
    figs = [
        {
            "title": "bw",
            "x": KEY,
            "y": "bw_rx_pps",
            "measured": "live/ozaki-pbq.csv",
            "measured_label": "live",
            "measured_x": "floodclients_sent_pps",
        }
    ]
    [(name, t)] = report.live_points(d, model, figs)
    assert name == "ozaki-pbq.csv" and len(t) == 6
    page = report._live_points_html(d, model, figs)
    assert page.count("<tr>") == 1 + 6
    assert "<td>threaded</td><td>off</td><td>600,000</td><td>594,002</td><td>2</td><td>30,500</td>" in page
    # A live point outside the model's sweep: "–" in the model's cell, never a number or NaN.
    page = report._live_points_html(d, model[model[KEY] <= 500000], figs)
    assert "<td>threaded</td><td>off</td><td>600,000</td><td>594,002</td><td>2</td><td>30,500</td><td>–</td>" in page
    assert "NaN" not in page
    # No measured file beside the results: no table.
    assert report._live_points_html(tmp_path, model, figs) == ""


def test_measured_y_names_the_live_column_for_the_models_metric(tmp_path):
    # A live run may name a quantity otherwise than the model (takeuchi-symbiose: the router's
    # per-CPU load `cpu0_router_frac`, the model's `cpu0_busy_frac`): `measured_y` draws and
    # tabulates that column beside the model's metric (issue 30).
    live = live_frame().rename(columns={"bw_rx_pps": "bw_live_pps"})
    model = model_frame()
    fig = plot.figure(
        model,
        "bw_rx_pps",
        x=KEY,
        measured=live,
        measured_label="live",
        measured_x="floodclients_sent_pps",
        measured_y="bw_live_pps",
    )
    lines = {str(ln.get_label()): ln for ln in fig.axes[0].lines}
    want = (
        live[(live["variant"] == "off") & (live["placement"] == "threaded")].groupby(KEY)["bw_live_pps"].mean().values
    )
    assert list(lines["live: off (threaded)"].get_ydata()) == list(want)
    plt.close(fig)
    t = plot.measured_vs_model(model, live, KEY, "floodclients_sent_pps", [("bw_rx_pps", "bw_live_pps")])
    r = t[(t["variant"] == "threaded-off") & (t[KEY] == 600000)].iloc[0]
    assert r["bw_rx_pps"] == 30500.0
    assert math.isclose(r["bw_rx_pps_model"], 33000.0 - 594001.5 / 100000, rel_tol=1e-12)
    # Without measured_y the column is not found: no table column, no line.
    assert "bw_rx_pps_model" not in plot.measured_vs_model(model, live, KEY, "floodclients_sent_pps", ["bw_rx_pps"])
    d = tmp_path / "live-twin"
    d.mkdir()
    live.to_csv(d / "ozaki-pbq.csv", index=False)
    figs = [
        {
            "title": "bw",
            "x": KEY,
            "y": "bw_rx_pps",
            "measured": "live/ozaki-pbq.csv",
            "measured_label": "live",
            "measured_x": "floodclients_sent_pps",
            "measured_y": "bw_live_pps",
        }
    ]
    [(_, t)] = report.live_points(d, model, figs)
    assert "bw_rx_pps_model" in t and len(t) == 6


def test_invalid_repetitions_are_left_out_and_counted(tmp_path):
    # A live point whose generator fell below its rate (`valid` = 0) did not offer the load it
    # names: the figure's line, the table's mean and its achieved rate use the valid repetitions
    # only, and the table says how many were left out; a point with none valid shows "–".
    live, model = live_frame(), model_frame()
    live["valid"] = 1
    bad = (live["placement"] == "threaded") & (live["variant"] == "off") & (live[KEY] == 600000) & (live["rep"] == 2)
    live.loc[bad, ["valid", "bw_rx_pps", "floodclients_sent_pps"]] = [0, 1.0, 300000.0]
    gone = (live["placement"] == "rps") & (live["variant"] == "off") & (live[KEY] == 600000)
    live.loc[gone, "valid"] = 0
    t = plot.measured_vs_model(model, live, KEY, "floodclients_sent_pps", ["bw_rx_pps"])
    r = t[(t["variant"] == "threaded-off") & (t[KEY] == 600000)].iloc[0]
    assert (r["reps"], r["invalid"]) == (1, 1)
    assert r["bw_rx_pps"] == 30500.0 - 10.0 and r["measured_x"] == 594001.0  # rep 1 alone
    r = t[(t["variant"] == "rps-off") & (t[KEY] == 600000)].iloc[0]
    assert (r["reps"], r["invalid"]) == (0, 2) and math.isnan(r["bw_rx_pps"]) and math.isnan(r["bw_rx_pps_model"])
    fig = plot.figure(
        model, "bw_rx_pps", x=KEY, measured=live, measured_label="live", measured_x="floodclients_sent_pps"
    )
    lines = {str(ln.get_label()): ln for ln in fig.axes[0].lines}
    assert list(lines["live: off (threaded)"].get_ydata()) == [30500.0, 30490.0]
    assert list(lines["live: off (rps)"].get_xdata()) == [1001.5], "the point with no valid repetition is not drawn"
    texts = [
        t.get_text()
        for lg in fig.legends + [a.get_legend() for a in fig.axes if a.get_legend()]
        for t in lg.get_texts()
    ]
    assert any("3 invalid live repetitions left out" in x for x in texts), texts
    plt.close(fig)
    d = tmp_path / "live-twin"
    d.mkdir()
    live.to_csv(d / "ozaki-pbq.csv", index=False)
    figs = [
        {
            "title": "bw",
            "x": KEY,
            "y": "bw_rx_pps",
            "measured": "live/ozaki-pbq.csv",
            "measured_label": "live",
            "measured_x": "floodclients_sent_pps",
        }
    ]
    page = report._live_points_html(d, model, figs)
    assert "<td>threaded</td><td>off</td><td>600,000</td><td>594,001</td><td>1/2</td><td>30,490</td>" in page
    assert "<td>rps</td><td>off</td><td>600,000</td><td>–</td><td>0/2</td><td>–</td><td>–</td>" in page
    assert "NaN" not in page
