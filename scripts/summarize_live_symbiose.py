#!/usr/bin/env python3
"""The table of a `hostsim live takeuchi-symbiose` run (its results.csv): Fig. 4 on this machine.

    python3 scripts/summarize_live_symbiose.py LIVE.csv [--markdown]

One row per variant and input rate, means over repetitions (valid points only; `n` says how
many of the repetitions were valid, and `inv` how many were not): offered and achieved input,
forwarded (the router's IP forwarding), output (frames at the sink with right checksums),
the share of the window's frames that arrived, invalid frames at the sink (whole points, summed),
per-CPU load of the router with softirq and kthread time apart, the generator's and the sink's
CPU, and the load average. Standard library only.
"""

import argparse
import csv
import statistics as st
from collections import defaultdict

COLS = [
    ("offered", "offered_pps", "{:.0f}"),
    ("achieved", "achieved_pps", "{:.0f}"),
    ("forwarded", "forwarded_pps", "{:.0f}"),
    ("out", "out_rx_pps", "{:.0f}"),
    ("window", "out_window_frac", "{:.3f}"),
    ("cpu0 sirq", "cpu0_softirq_frac", "{:.2f}"),
    ("cpu0 kthr", "cpu0_kthread_frac", "{:.2f}"),
    ("cpu1 sirq", "cpu1_softirq_frac", "{:.2f}"),
    ("cpu1 kthr", "cpu1_kthread_frac", "{:.2f}"),
    ("gen", "gen_cpu_frac", "{:.2f}"),
    ("sink", "sink_cpu_frac", "{:.2f}"),
    ("load", "loadavg_1m_start", "{:.1f}"),
]


def val(r, k):
    v = r.get(k, "")
    return float(v) if v not in ("", None) else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    with open(a.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    groups = defaultdict(list)
    order = []
    for r in rows:
        k = (r["variant"], float(r["traffic.load.rate_pps"]))
        if k not in groups:
            order.append(k)
        groups[k].append(r)
    order.sort(key=lambda k: ([r["variant"] for r in rows].index(k[0]), k[1]))
    head = ["variant", "n", "inv"] + [c[0] for c in COLS] + ["sink invalid"]
    lines = []
    for k in order:
        g = groups[k]
        ok = [r for r in g if val(r, "valid") == 1.0]
        use = ok or g
        cells = [k[0], str(len(ok)), str(len(g) - len(ok))]
        for _, key, fmt in COLS:
            cells.append(fmt.format(st.mean(val(r, key) for r in use)))
        cells.append("{:.0f}".format(sum(val(r, "sink_invalid_count") for r in g)))
        lines.append(cells)
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for c in lines:
            print("| " + " | ".join(c) + " |")
    else:
        w = [max(len(h), *(len(c[i]) for c in lines)) for i, h in enumerate(head)]
        print("  ".join(h.rjust(w[i]) for i, h in enumerate(head)))
        for c in lines:
            print("  ".join(x.rjust(w[i]) for i, x in enumerate(c)))


if __name__ == "__main__":
    main()
