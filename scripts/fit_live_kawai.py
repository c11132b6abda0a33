#!/usr/bin/env python3
"""Fit the kawai-interval twin's three calibrated costs to the live `none` curve only.

    python3 scripts/fit_live_kawai.py [LIVE_RESULTS.csv] [--hostsim target/release/hostsim]
        [--rates 2000,6000,10000] [--seeds 2] [--iters 4]

Reads the `none` rows of a `hostsim live kawai-interval` results.csv (default
scenarios/live/kawai-interval.csv) at the unsaturated rates, averages the repetitions, and
fits, one cost per CPU state of the accelerator's CPU 0 (the live shares are tick samples):

    tcp_rx_ns          <- softirq + hardirq share   (`profile_set.costs.tcp_rx_ns`)
    request_kernel_ns  <- system share              (`process.chamomile.accelerator.request_kernel_ns`)
    request_ns         <- user share                (`process.chamomile.accelerator.request_ns`)

so that the model's mean share over the rates equals the live mean. A share is linear in its
cost while the counts (requests, segments) stay the same, so each iteration is a secant step
for every cost at once, from two model sweeps; the model is run with the scenario's variant
`none` at the rates the live clients offered (`clients_offered_rps`, which met the target).
Prints the values, the per-point residuals and the overlay text for
calibration/live-kawai-interval.toml (written by hand with this output quoted). No controlled
variant is read.
"""

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

SCEN = "scenarios/live-kawai-interval.toml"
KEY = "traffic.clients.http.rate_rps"
PARAMS = {
    # name: (key, bounds, live share it is fitted to)
    "tcp_rx_ns": ("profile_set.costs.tcp_rx_ns", (500, 90000), "irq"),
    "request_kernel_ns": ("process.chamomile.accelerator.request_kernel_ns", (0, 30000), "system"),
    "request_ns": ("process.chamomile.accelerator.request_ns", (500, 26000), "user"),
}
START = {"tcp_rx_ns": 590, "request_kernel_ns": 0, "request_ns": 5000}


def live_targets(path, rates):
    acc = defaultdict(lambda: defaultdict(list))
    for r in csv.DictReader(open(path)):
        if r["variant"] != "none" or float(r[KEY]) not in rates:
            continue
        x = float(r[KEY])
        acc[x]["offered"].append(float(r["clients_offered_rps"]))
        acc[x]["irq"].append(float(r["cpu_softirq_frac"]) + float(r["cpu_hardirq_frac"]))
        acc[x]["system"].append(float(r["cpu_system_frac"]))
        acc[x]["user"].append(float(r["cpu_user_frac"]))
    return {x: {k: sum(v) / len(v) for k, v in d.items()} for x, d in sorted(acc.items())}


def model(hostsim, rate, vals, seeds):
    out = defaultdict(float)
    for seed in range(1, seeds + 1):
        with tempfile.TemporaryDirectory() as d:
            args = [
                hostsim,
                "run",
                SCEN,
                "--variant",
                "none",
                "--seed",
                str(seed),
                "--set",
                f"{KEY}={rate:.0f}",
                "--out",
                d,
            ]
            for name, v in vals.items():
                args += ["--set", f"{PARAMS[name][0]}={int(round(v))}"]
            subprocess.run(args, check=True, capture_output=True)
            m = json.loads((Path(d) / "summary.json").read_text())["metrics"]
        out["irq"] += (m["cpu_softirq_frac"] + m["cpu_hardirq_frac"]) / seeds
        out["system"] += (m["cpu_system_frac"] + m.get("cpu_spin_frac", 0.0)) / seeds
        out["user"] += m["cpu_user_frac"] / seeds
    return out


def sweep(a, live, vals):
    return {x: model(a.hostsim, t["offered"], vals, a.seeds) for x, t in live.items()}


def mean(res, state):
    return sum(r[state] for r in res.values()) / len(res)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("live", nargs="?", default="scenarios/live/kawai-interval.csv")
    ap.add_argument("--hostsim", default="target/release/hostsim")
    ap.add_argument("--rates", default="2000,6000,10000")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--iters", type=int, default=4)
    a = ap.parse_args()
    live = live_targets(a.live, {float(x) for x in a.rates.split(",")})
    target = {s: sum(t[s] for t in live.values()) / len(live) for s in ("irq", "system", "user")}
    vals = dict(START)
    res = sweep(a, live, vals)
    # A second point for the first secant: each cost doubled (or moved up from 0).
    prev_vals, prev_res = vals, res
    vals = {n: min(max(2 * v, 1000), PARAMS[n][1][1]) for n, v in vals.items()}
    for it in range(a.iters):
        res = sweep(a, live, vals)
        print(
            f"iter {it}: "
            + ", ".join(
                f"{n}={vals[n]:.0f} ({PARAMS[n][2]} {mean(res, PARAMS[n][2]):.4f} vs {target[PARAMS[n][2]]:.4f})"
                for n in vals
            ),
            file=sys.stderr,
        )
        new = {}
        for n, (_, (lo, hi), s) in PARAMS.items():
            dy = mean(res, s) - mean(prev_res, s)
            dx = vals[n] - prev_vals[n]
            slope = dy / dx if dx else 0.0
            v = vals[n] + (target[s] - mean(res, s)) / slope if slope > 0 else vals[n]
            new[n] = min(max(v, lo), hi)
        prev_vals, prev_res = vals, res
        vals = {n: round(v) for n, v in new.items()}
    res = sweep(a, live, vals)
    print("fitted: " + ", ".join(f"{n} = {v}" for n, v in vals.items()))
    print("residuals per rate (model vs live share):")
    for x, t in live.items():
        print(
            f"  {x:.0f} req/s: "
            + "; ".join(
                f"{s} {res[x][s]:.3f} vs {t[s]:.3f} ({(res[x][s] / t[s] - 1) * 100:+.0f}%)"
                for s in ("irq", "system", "user")
            )
        )
    print("means: " + "; ".join(f"{s} {mean(res, s):.4f} vs {target[s]:.4f}" for s in ("irq", "system", "user")))


if __name__ == "__main__":
    main()
