"""kawai-interval live (`hostsim live kawai-interval`): its table, the twin's fit, and paper 004's own
scenarios run at the live workload's shape.

`table`: one row per (variant, offered rate), the mean over repetitions and, in brackets, the
smallest and largest repetition. Columns (the model's names, crates/live/src/kawai_interval/):
offered and done (`clients_offered_rps`, `clients_completed_rps`, req/s), response time mean and
p99 (`clients_resp_ms_mean`, `_p99`, ms from the scheduled arrival), hit mean
(`clients_resp_hit_ms_mean`), passes/s (`chamomile_io_loops_per_s`, the I/O thread's Fig. 5
passes), cpu and kernel (`cpu_util`, `cpu_kernel_frac` of the accelerator's CPU, ticks), poll
(`cpu_poll_frac`, the server's own clock around poll()), lag p99 (`clients_lag_ms_p99`: how late
the generator sent; it was not the bottleneck), errors and the load average at the window's start.

`fit`: the twin's three calibrated costs fitted to the live `none` curve only. It reads the
`none` rows at the unsaturated rates, averages the repetitions, and fits one cost per CPU state
of the accelerator's CPU 0 (the live shares are tick samples): `tcp_rx_ns` to the softirq +
hardirq share (`profile_set.costs.tcp_rx_ns`), `request_kernel_ns` to the system share and
`request_ns` to the user share (`process.chamomile.accelerator.*`), so that the model's mean share
over the rates equals the live mean. A share is linear in its cost while the counts (requests,
segments) stay the same, so each iteration is a secant step for every cost at once, from two model
sweeps; the model runs the scenario's variant `none` at the rates the live clients offered
(`clients_offered_rps`, which met the target). Prints the values, the per-point residuals and the
overlay's values for calibration/live-kawai-interval.toml (written by hand with this output
quoted). No controlled variant is read.

`model`: the model's prediction beside the live run before the twin existed (issue 29): paper
004's own scenarios (Pentium III 800, profiles/pentium3-800.toml, conn_list = with_work, the live
loop's reading) at the live workload's shape (no client link delay, 6,000 client and 1,000 origin
connections, RATE req/s), with today's high-resolution nanosleep (`hr`: timer_tick_sleep = false,
HZ 250) and with 2.5.17's (`tick`: ticks + 1 at HZ 100, as the scenarios have it), seeds 1 and 2.
Only the timing of the loop (passes/s, the response times a cycle adds) carries over to the live
machine; the CPU shares are the Pentium III's. Writes OUTDIR/model.csv and prints it.
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path

from ._common import by_variant_and, cell, checkout, default_hostsim, mean, num, rows, run_model, table

KEY = "traffic.clients.http.rate_rps"
SCENARIO = "scenarios/live-kawai-interval.toml"
LIVE = "scenarios/live/kawai-interval.csv"
COLS = [
    ("offered", "clients_offered_rps", "{:.0f}"),
    ("done", "clients_completed_rps", "{:.0f}"),
    ("resp mean ms", "clients_resp_ms_mean", "{:.1f}"),
    ("p99 ms", "clients_resp_ms_p99", "{:.0f}"),
    ("hit mean ms", "clients_resp_hit_ms_mean", "{:.1f}"),
    ("passes/s", "chamomile_io_loops_per_s", "{:.0f}"),
    ("cpu", "cpu_util", "{:.3f}"),
    ("kernel", "cpu_kernel_frac", "{:.3f}"),
    ("poll", "cpu_poll_frac", "{:.4f}"),
    ("lag p99 ms", "clients_lag_ms_p99", "{:.1f}"),
    ("errors", "clients_errors_count", "{:.0f}"),
    ("load", "loadavg_1m", "{:.1f}"),
]
# Columns shown without their range (a count summed by eye, a machine fact).
NO_SPREAD = ("clients_errors_count", "loadavg_1m")
# The fit: name -> (key, bounds, live share it is fitted to), and the starting values.
PARAMS = {
    "tcp_rx_ns": ("profile_set.costs.tcp_rx_ns", (500, 90000), "irq"),
    "request_kernel_ns": ("process.chamomile.accelerator.request_kernel_ns", (0, 30000), "system"),
    "request_ns": ("process.chamomile.accelerator.request_ns", (500, 26000), "user"),
}
START = {"tcp_rx_ns": 590, "request_kernel_ns": 0, "request_ns": 5000}
STATES = ("irq", "system", "user")
# `model`: paper 004's variants over the connections with work, and the metrics kept.
MODEL_VARIANTS = (
    "ww-none",
    "ww-static-10",
    "ww-static-20",
    "ww-static-30",
    "ww-dynamic-2x",
    "ww-dynamic-3x",
    "ww-dynamic-4x",
)
MODEL_KEYS = (
    "clients_offered_rps",
    "clients_completed_rps",
    "clients_resp_ms_mean",
    "clients_resp_ms_p99",
    "clients_resp_hit_ms_mean",
    "clients_resp_miss_ms_mean",
    "chamomile_io_loops_per_s",
    "cpu_util",
    "cpu_kernel_frac",
    "cpu_poll_frac",
)


def add_parser(sub) -> None:
    p = sub.add_parser("kawai-interval", help="kawai-interval live: table, twin fit, paper scenarios at the live load")
    tools = p.add_subparsers(dest="tool", required=True)
    t = tools.add_parser("table", help="one row per variant and rate", description=__doc__.split("\n\n")[1])
    t.add_argument("live_csv")
    t.add_argument("--markdown", action="store_true")
    t.set_defaults(func=table_main)
    f = tools.add_parser(
        "fit", help="the twin's costs, fitted to the live `none` curve", description=__doc__.split("\n\n")[2]
    )
    f.add_argument("live_csv", nargs="?", help=f"a live results.csv (default: {LIVE})")
    f.add_argument("--hostsim", default=None)
    f.add_argument("--rates", default="2000,6000,10000", help="the unsaturated rates fitted, req/s")
    f.add_argument("--seeds", type=int, default=2)
    f.add_argument("--iters", type=int, default=4)
    f.set_defaults(func=fit)
    m = tools.add_parser(
        "model", help="paper 004's scenarios at the live workload", description=__doc__.split("\n\n")[3]
    )
    m.add_argument("outdir")
    m.add_argument("rate", nargs="?", type=float, default=2000.0, help="req/s (default 2000)")
    m.add_argument("--hostsim", default=None)
    m.set_defaults(func=model_main)


def summary(live_rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """The table's head and rows: variants in their order of first appearance, rates ascending."""
    head = ["variant", "rate", "reps"] + [c[0] for c in COLS]
    body = [
        [v, f"{rate:.0f}", str(len(g))] + [cell(g, key, fmt, spread=key not in NO_SPREAD) for _, key, fmt in COLS]
        for (v, rate), g in by_variant_and(live_rows, KEY)
    ]
    return head, body


def table_main(a) -> None:
    rs = rows(a.live_csv)
    if not rs:
        sys.exit(f"{a.live_csv}: no points")
    print(table(*summary(rs), markdown=a.markdown))


def live_targets(path, rates):
    """Per rate: the offered rate and the accelerator CPU's shares of the `none` rows (means)."""
    acc = defaultdict(lambda: defaultdict(list))
    for r in rows(path):
        if r["variant"] != "none" or num(r, KEY) not in rates:
            continue
        x = num(r, KEY)
        acc[x]["offered"].append(num(r, "clients_offered_rps"))
        acc[x]["irq"].append(num(r, "cpu_softirq_frac") + num(r, "cpu_hardirq_frac"))
        acc[x]["system"].append(num(r, "cpu_system_frac"))
        acc[x]["user"].append(num(r, "cpu_user_frac"))
    return {x: {k: mean(v) for k, v in d.items()} for x, d in sorted(acc.items())}


def model_shares(hostsim, scenario, rate, vals, seeds):
    out = defaultdict(float)
    for seed in range(1, seeds + 1):
        sets = {KEY: f"{rate:.0f}"} | {PARAMS[n][0]: int(round(v)) for n, v in vals.items()}
        m = run_model(hostsim, scenario, "none", seed, sets)["metrics"]
        out["irq"] += (m["cpu_softirq_frac"] + m["cpu_hardirq_frac"]) / seeds
        out["system"] += (m["cpu_system_frac"] + m.get("cpu_spin_frac", 0.0)) / seeds
        out["user"] += m["cpu_user_frac"] / seeds
    return out


def fit(a) -> None:
    root = checkout()
    scenario = root / SCENARIO
    hostsim = a.hostsim or default_hostsim()
    live = live_targets(a.live_csv or root / LIVE, {float(x) for x in a.rates.split(",")})
    if not live:
        sys.exit(f"no `none` rows at {a.rates} req/s")
    target = {s: mean(t[s] for t in live.values()) for s in STATES}

    def sweep(vals):
        return {x: model_shares(hostsim, scenario, t["offered"], vals, a.seeds) for x, t in live.items()}

    def at(res, state):
        return mean(r[state] for r in res.values())

    vals = dict(START)
    res = sweep(vals)
    # A second point for the first secant: each cost doubled (or moved up from 0).
    prev_vals, prev_res = vals, res
    vals = {n: min(max(2 * v, 1000), PARAMS[n][1][1]) for n, v in vals.items()}
    for it in range(a.iters):
        res = sweep(vals)
        print(
            f"iter {it}: "
            + ", ".join(
                f"{n}={vals[n]:.0f} ({PARAMS[n][2]} {at(res, PARAMS[n][2]):.4f} vs {target[PARAMS[n][2]]:.4f})"
                for n in vals
            ),
            file=sys.stderr,
        )
        new = {}
        for n, (_, (lo, hi), s) in PARAMS.items():
            dy = at(res, s) - at(prev_res, s)
            dx = vals[n] - prev_vals[n]
            slope = dy / dx if dx else 0.0
            v = vals[n] + (target[s] - at(res, s)) / slope if slope > 0 else vals[n]
            new[n] = min(max(v, lo), hi)
        prev_vals, prev_res = vals, res
        vals = {n: round(v) for n, v in new.items()}
    res = sweep(vals)
    print("fitted: " + ", ".join(f"{n} = {v}" for n, v in vals.items()))
    print("residuals per rate (model vs live share):")
    for x, t in live.items():
        print(
            f"  {x:.0f} req/s: "
            + "; ".join(f"{s} {res[x][s]:.3f} vs {t[s]:.3f} ({(res[x][s] / t[s] - 1) * 100:+.0f}%)" for s in STATES)
        )
    print("means: " + "; ".join(f"{s} {at(res, s):.4f} vs {target[s]:.4f}" for s in STATES))


def model_main(a) -> None:
    root = checkout()
    hostsim = a.hostsim or default_hostsim()
    out = Path(a.outdir)
    out.mkdir(parents=True, exist_ok=True)
    shape = {
        KEY: f"{a.rate:.0f}",
        "traffic.clients.link_delay_us": 0,
        "traffic.clients.http.conns": 6000,
        "process.chamomile.accelerator.origin_conns": 1000,
    }
    sleeps = {"hr": {"kernel.timer_tick_sleep": "false", "kernel.hz": 250}, "tick": {}}
    with open(out / "model.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["sleep", "variant", "rate_rps", "seeds", *MODEL_KEYS])
        for sleep, sets in sleeps.items():
            for v in MODEL_VARIANTS:
                scenario = (
                    root
                    / "scenarios"
                    / ("kawai-interval-dynamic.toml" if "dynamic" in v else "kawai-interval-static.toml")
                )
                ms = [run_model(hostsim, scenario, v, seed, shape | sets)["metrics"] for seed in (1, 2)]
                w.writerow(
                    [sleep, v, f"{a.rate:.0f}", len(ms)]
                    + [f"{mean(m.get(k, float('nan')) for m in ms):.4g}" for k in MODEL_KEYS]
                )
    print((out / "model.csv").read_text(), end="")
