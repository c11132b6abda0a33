#!/usr/bin/env python3
"""Live vs model, point by point: for each (variant, target flood) of a `hostsim live ozaki-pbq`
results.csv (repetitions averaged), run the model twin (scenarios/live-ozaki-pbq.toml, same
variant) at the rates the live senders achieved, and print both with the model's gap.

    python3 scripts/compare_live_model.py scenarios/live/ozaki-pbq.csv [--hostsim target/release/hostsim]
"""
import argparse
import csv
import json
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

KEY = "traffic.floodclients.rate_pps"
METRICS = ["bw_rx_pps", "flood_rx_pps", "cpu_softirq_frac"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("live_csv")
    ap.add_argument("--hostsim", default="target/release/hostsim")
    a = ap.parse_args()
    acc = defaultdict(lambda: defaultdict(list))
    for r in csv.DictReader(open(a.live_csv)):
        for k, v in r.items():
            if k not in ("variant", KEY):
                acc[(r["variant"], float(r[KEY]))][k].append(float(v) if v else 0.0)
    print("| variant | flood asked | flood sent | bw sent | " + " | ".join(f"{m} live | model | gap" for m in METRICS) + " |")
    print("|---" * (4 + 3 * len(METRICS)) + "|")
    for (v, x), d in sorted(acc.items(), key=lambda kv: (kv[0][0] != "off", kv[0][1])):
        live = {k: sum(vals) / len(vals) for k, vals in d.items()}
        with tempfile.TemporaryDirectory() as out:
            subprocess.run([a.hostsim, "run", "scenarios/live-ozaki-pbq.toml", "--variant", v,
                            "--set", f"{KEY}={max(live['floodclients_sent_pps'], 1):.0f}",
                            "--set", f"traffic.bwclient.rate_pps={live['bwclient_sent_pps']:.0f}", "--out", out],
                           check=True, capture_output=True)
            m = json.loads((Path(out) / "summary.json").read_text())["metrics"]
        cells = []
        for k in METRICS:
            lv, mv = live[k], m.get(k, float("nan"))
            fmt = "{:.0f}" if k.endswith("pps") else "{:.2f}"
            cells.append(f"{fmt.format(lv)} | {fmt.format(mv)} | {(mv - lv) / lv:+.0%}" if lv else f"{fmt.format(lv)} | {fmt.format(mv)} | -")
        print(f"| {v} | {x:,.0f} | {live['floodclients_sent_pps']:,.0f} | {live['bwclient_sent_pps']:,.0f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
