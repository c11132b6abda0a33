#!/usr/bin/env python3
"""Summarise `hostsim live kawai-interval`'s results.csv: one row per (variant, offered rate),
the mean over repetitions and, in brackets, the smallest and largest repetition.

    python3 scripts/live_kawai_table.py DIR/results.csv [--markdown]

Columns (the model's names, see crates/live/src/kawai/experiment.rs):
  offered, done     clients_offered_rps, clients_completed_rps (req/s)
  resp mean, p99    clients_resp_ms_mean, clients_resp_ms_p99 (ms, from the scheduled arrival)
  hit mean          clients_resp_hit_ms_mean (ms)
  passes/s          chamomile_io_loops_per_s (the I/O thread's Fig. 5 passes)
  cpu, kernel       cpu_util, cpu_kernel_frac of the accelerator's CPU (ticks)
  poll              cpu_poll_frac (the server's own clock around poll())
  lag p99           clients_lag_ms_p99 (how late the generator sent: it was not the bottleneck)
  load              loadavg_1m at the window's start
"""

import csv
import math
import sys
from collections import defaultdict

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


def num(x):
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    md = "--markdown" in sys.argv
    if len(args) != 1:
        sys.exit(__doc__)
    rows = list(csv.DictReader(open(args[0], newline="")))
    if not rows:
        sys.exit(f"{args[0]}: no points")
    rate_key = "traffic.clients.http.rate_rps"
    groups = defaultdict(list)
    variants = []
    for r in rows:
        if r["variant"] not in variants:
            variants.append(r["variant"])
        groups[(r["variant"], num(r[rate_key]))].append(r)
    head = ["variant", "rate", "reps"] + [c[0] for c in COLS]
    out = []
    for v in variants:
        for rate in sorted({k[1] for k in groups if k[0] == v}):
            g = groups[(v, rate)]
            cells = [v, f"{rate:.0f}", str(len(g))]
            for _, key, fmt in COLS:
                xs = [num(r.get(key)) for r in g]
                xs = [x for x in xs if not math.isnan(x)]
                if not xs:
                    cells.append("-")
                    continue
                m = sum(xs) / len(xs)
                cell = fmt.format(m)
                if len(xs) > 1 and key not in ("clients_errors_count", "loadavg_1m"):
                    cell += f" [{fmt.format(min(xs))}-{fmt.format(max(xs))}]"
                cells.append(cell)
            out.append(cells)
    if md:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for c in out:
            print("| " + " | ".join(c) + " |")
    else:
        w = [max(len(h), *(len(c[i]) for c in out)) for i, h in enumerate(head)]
        print("  ".join(h.ljust(w[i]) for i, h in enumerate(head)))
        for c in out:
            print("  ".join(x.ljust(w[i]) for i, x in enumerate(c)))


if __name__ == "__main__":
    main()
