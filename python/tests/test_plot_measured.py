"""A measured overlay with several placements of the receive work (`hostsim live ozaki-pbq`'s
`placement` column) is drawn one line per placement, never averaged across them (issue 28)."""

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from hostsim import plot

ROOT = Path(__file__).resolve().parents[2]
KEY = "traffic.floodclients.rate_pps"


def test_live_placements_are_drawn_apart():
    live = pd.read_csv(ROOT / "scenarios/live/ozaki-pbq.csv")
    assert {"rps", "threaded"} <= set(live["placement"])
    model = pd.DataFrame({"variant": ["off", "off", "on", "on"], KEY: [1000, 50000] * 2, "bw_rx_pps": [34000.0, 30000.0, 34000.0, 34000.0]})
    fig = plot.figure(model, "bw_rx_pps", x=KEY, measured=live, measured_label="live", measured_x="floodclients_sent_pps")
    lines = {str(ln.get_label()): ln for ln in fig.axes[0].lines}
    for v in ("off", "on"):
        for p in ("rps", "threaded"):
            ln = lines[f"live: {v} ({p})"]
            d = live[(live["variant"] == v) & (live["placement"] == p)]
            want = d.groupby(KEY)["bw_rx_pps"].mean().sort_index().values
            assert list(ln.get_ydata()) == list(want), f"{v} ({p}) is not its own placement's mean"
    assert not any(lab.startswith("live: supp") for lab in lines), "variants the model does not draw are left out"
    plt.close(fig)


def test_a_frame_without_placements_is_drawn_as_before():
    m = pd.DataFrame({"variant": ["off"] * 2, KEY: [1000, 2000], "y": [1.0, 2.0]})
    fig = plot.figure(m, "y", x=KEY, measured=m, measured_label="live")
    assert "live: off" in [str(ln.get_label()) for ln in fig.axes[0].lines]
    plt.close(fig)
