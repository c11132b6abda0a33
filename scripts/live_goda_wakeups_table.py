#!/usr/bin/env python3
"""Paper 001's Fig. 2 classes, live (`hostsim live goda-wakeups`) beside the model's cfs6 twin
(`hostsim sweep scenarios/live-goda-wakeups.toml`), one row per flow count: the mean over
repetitions (live) and seeds (model), with the live range in brackets.

    python3 scripts/live_goda_wakeups_table.py LIVE/results.csv MODEL/results.csv
"""

import csv
import math
import sys
from collections import defaultdict

# (column, heading, format); None in the model: the model has no such quantity.
COLS = [
    ("wakeups_per_s", "wake-ups/s", "{:,.0f}"),
    ("wakeups_remote_frac", "waker != prev", "{:.2f}"),
    ("wakeups_on_rq_frac", "woken in place (on_rq)", "{:.2f}"),
    ("wakeups_delayed_frac", "of which delayed dequeue", "{:.3f}"),
    ("wakeups_by_sender_frac", "waker: a sender", "{:.2f}"),
    ("wakeups_by_kthread_frac", "waker: kthread", "{:.2f}"),
    ("wakeups_by_idle_frac", "waker: idle", "{:.2f}"),
    ("migrations_per_s", "migrations/s", "{:,.0f}"),
    ("migrations_wakeup_affine_per_s", "wake-up to waker CPU /s", "{:,.0f}"),
    ("migrations_wakeup_other_per_s", "wake-up elsewhere /s", "{:,.0f}"),
    ("migrations_balance_per_s", "balancer /s", "{:,.0f}"),
    ("migrations_unintended_per_s", "unintended /s", "{:,.0f}"),
    ("unintended_fraction", "unintended_fraction", "{:.3f}"),
    ("settle_mean", "settle_mean", "{:.2f}"),
    ("settle_max", "settle_max", "{:.0f}"),
    ("wakeup_wait_us_p50", "wait p50 us", "{:.0f}"),
    ("wakeup_wait_us_p90", "wait p90 us", "{:.0f}"),
    ("reader_rx_mbps", "rx Mbit/s", "{:,.0f}"),
    ("loadavg_1m", "load avg", "{:.1f}"),
]


def num(r, k):
    try:
        return float(r[k])
    except (KeyError, ValueError):
        return math.nan


def groups(path, key):
    g = defaultdict(list)
    for r in csv.DictReader(open(path)):
        g[key(r)].append(r)
    return g


def main():
    live = groups(sys.argv[1], lambda r: int(r["process.reader.instances"]))
    model = groups(sys.argv[2], lambda r: int(r["variant"].split("-")[1]))
    for r in (x for rows in model.values() for x in rows):
        # The tracepoint cannot tell the balancer's causes apart: their sum.
        r["migrations_balance_per_s"] = str(
            num(r, "migrations_load_balance_per_s") + num(r, "migrations_idle_balance_per_s")
        )
    print("| flows | side | " + " | ".join(h for _, h, _ in COLS) + " |")
    print("|---" * (len(COLS) + 2) + "|")
    for n in sorted(set(live) | set(model)):
        for side, rows in (("live", live.get(n, [])), ("model", model.get(n, []))):
            cells = []
            for k, _, f in COLS:
                v = [num(r, k) for r in rows]
                v = [x for x in v if not math.isnan(x)]
                if not v:
                    cells.append("–")
                elif side == "live" and len(v) > 1:
                    cells.append(f.format(sum(v) / len(v)) + " [" + f.format(min(v)) + "–" + f.format(max(v)) + "]")
                else:
                    cells.append(f.format(sum(v) / len(v)))
            print(f"| {n} | {side} ({len(rows)}) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
