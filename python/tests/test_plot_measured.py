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
    model = pd.DataFrame(
        {
            "variant": ["off", "off", "on", "on"],
            KEY: [1000, 50000] * 2,
            "bw_rx_pps": [34000.0, 30000.0, 34000.0, 34000.0],
        }
    )
    fig = plot.figure(
        model, "bw_rx_pps", x=KEY, measured=live, measured_label="live", measured_x="floodclients_sent_pps"
    )
    lines = {str(ln.get_label()): ln for ln in fig.axes[0].lines}
    for v in ("off", "on"):
        for p in ("rps", "threaded"):
            ln = lines[f"live: {v} ({p})"]
            d = live[(live["variant"] == v) & (live["placement"] == p)]
            d = d[d["valid"] != 0]  # invalid repetitions are left out (plot.valid_rows)
            want = d.groupby(KEY)["bw_rx_pps"].mean().sort_index().values
            assert list(ln.get_ydata()) == list(want), (
                f"{v} ({p}) is not its own placement's mean of its valid repetitions"
            )
    assert not any(lab.startswith("live: supp") for lab in lines), "variants the model does not draw are left out"
    plt.close(fig)


def test_a_frame_without_placements_is_drawn_as_before():
    m = pd.DataFrame({"variant": ["off"] * 2, KEY: [1000, 2000], "y": [1.0, 2.0]})
    fig = plot.figure(m, "y", x=KEY, measured=m, measured_label="live")
    assert "live: off" in [str(ln.get_label()) for ln in fig.axes[0].lines]
    plt.close(fig)


def test_a_histogram_draws_the_measured_counts_over_their_own_group():
    """A histogram figure with measured data (`hostsim live tabata-speed`'s inter-arrival bins)
    draws, over each simulated group's bars, the measured mean per bin of the same variant (and
    series value), at the bars' positions; rows outside the figure's `at`, or of another variant
    or series value, are not mixed in."""
    live = pd.read_csv(ROOT / "scenarios/live/tabata-speed.csv")
    speed, unit = "process.sender.speed_pct", "process.sender.unit_bytes"
    cols = sorted((lo, c) for lo, c in plot.histogram_columns(live, "receiver_gap_us"))
    model = live[live["variant"] == "regulated"].copy()
    model[[c for _, c in cols]] = 0.0  # the model's bars: anything not equal to the measured means
    for s in (50, 80, 100):
        fig = plot.figure(
            model,
            "receiver_gap_us",
            kind="histogram",
            at={speed: s, unit: 1024},
            variants=["regulated"],
            measured=live,
            measured_label="live",
        )
        (ln,) = [x for x in fig.axes[0].lines if str(x.get_label()).startswith("live: ")]
        d = live[(live["variant"] == "regulated") & (live[speed] == s) & (live[unit] == 1024)]
        assert ln.get_label() == f"live: regulated (mean over {len(d)} runs)"
        assert list(ln.get_ydata()) == [float(d[c].mean()) for _, c in cols]
        plt.close(fig)
    fig = plot.figure(
        model,
        "receiver_gap_us",
        kind="histogram",
        series=speed,
        at={unit: 2048},
        variants=["regulated"],
        measured=live,
        measured_label="live",
    )
    lines = {str(x.get_label()): x for x in fig.axes[0].lines}
    d = live[(live["variant"] == "regulated") & (live[speed] == 80) & (live[unit] == 2048)]
    assert list(lines[f"live: speed_pct = 80 (mean over {len(d)} runs)"].get_ydata()) == [
        float(d[c].mean()) for _, c in cols
    ]
    assert not any("off" in k for k in lines), "the live unregulated rows are not a group of this figure"
    plt.close(fig)


def test_measured_lines_keep_to_the_figure_s_at():
    """A line figure restricted by `at` (one send unit of tabata-speed's Fig. 1) draws only the
    measured rows at those coordinates, never the mean over the others too."""
    live = pd.read_csv(ROOT / "scenarios/live/tabata-speed.csv")
    speed, unit = "process.sender.speed_pct", "process.sender.unit_bytes"
    model = live[live["variant"] == "regulated"].copy()
    for u in (1024, 2048):
        fig = plot.figure(
            model, "bw_mbps", x=speed, at={unit: u}, variants=["regulated"], measured=live, measured_label="live"
        )
        (ln,) = [x for x in fig.axes[0].lines if str(x.get_label()) == "live: regulated"]
        d = live[(live["variant"] == "regulated") & (live[unit] == u)]
        assert list(ln.get_ydata()) == list(d.groupby(speed)["bw_mbps"].mean().sort_index().values)
        plt.close(fig)
