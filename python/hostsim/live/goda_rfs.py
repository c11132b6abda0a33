"""goda-rfs live (`hostsim live goda-wakeups`): paper 001's Fig. 2 classes, live beside the model's
cfs6 twin (`hostsim sweep scenarios/live-goda-wakeups.toml`), one row per flow count: the mean over
repetitions (live) and seeds (model), with the live range in brackets."""

from __future__ import annotations

from collections import defaultdict

from ._common import cell, num, rows, table

# (column, heading, format); the model has no such quantity where its column is empty.
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


def add_parser(sub) -> None:
    p = sub.add_parser("goda-rfs", aliases=["goda-wakeups"], help="goda-rfs live (goda-wakeups) beside its twin")
    tools = p.add_subparsers(dest="tool", required=True)
    t = tools.add_parser("table", help="Fig. 2's classes per flow count, live and model", description=__doc__)
    t.add_argument("live_csv")
    t.add_argument("model_csv", help="the twin's results.csv (hostsim sweep scenarios/live-goda-wakeups.toml)")
    t.set_defaults(func=table_main)


def groups(path, key):
    g = defaultdict(list)
    for r in rows(path):
        g[key(r)].append(r)
    return g


def summary(live_csv, model_csv) -> tuple[list[str], list[list[str]]]:
    live = groups(live_csv, lambda r: int(r["process.reader.instances"]))
    model = groups(model_csv, lambda r: int(r["variant"].split("-")[1]))
    for r in (x for rs in model.values() for x in rs):
        # The tracepoint cannot tell the balancer's causes apart: their sum.
        r["migrations_balance_per_s"] = str(
            num(r, "migrations_load_balance_per_s") + num(r, "migrations_idle_balance_per_s")
        )
    head = ["flows", "side"] + [h for _, h, _ in COLS]
    body = []
    for n in sorted(set(live) | set(model)):
        for side, rs in (("live", live.get(n, [])), ("model", model.get(n, []))):
            cells = [cell(rs, k, f, spread=side == "live") for k, _, f in COLS]
            body.append([str(n), f"{side} ({len(rs)})", *cells])
    return head, body


def table_main(a) -> None:
    print(table(*summary(a.live_csv, a.model_csv)))
