"""goda-rfs live (`hostsim live goda-wakeups`): paper 001's Fig. 2 classes, live beside the model's
cfs6 twin (`hostsim sweep scenarios/live-goda-wakeups.toml`), one row per flow count: the mean over
repetitions (live) and seeds (model), with the live range in brackets (`table`, the `linux` variant,
RFS off, as the twin); the variants side by side (`variants`: RFS off and on, one segment per skb);
the flows' segment trains (`trains`, from the run's trains.csv)."""

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
    v = tools.add_parser(
        "variants", help="Fig. 2's classes per flow count and variant (RFS off / on, per-segment)", description=__doc__
    )
    v.add_argument("live_csv", help="results.csv of hostsim live goda-wakeups --variants ...")
    v.set_defaults(func=variants_main)
    tr = tools.add_parser("trains", help="the flows' segment trains per flow count and variant", description=__doc__)
    tr.add_argument("trains_csv", help="trains.csv of hostsim live goda-wakeups")
    tr.set_defaults(func=trains_main)


def groups(path, key):
    g = defaultdict(list)
    for r in rows(path):
        g[key(r)].append(r)
    return g


def summary(live_csv, model_csv) -> tuple[list[str], list[list[str]]]:
    # The twin has RFS off: the live `linux` rows (older runs have no other variant).
    live = groups(
        live_csv, lambda r: int(r["process.reader.instances"]) if r.get("variant", "linux") == "linux" else None
    )
    live.pop(None, None)
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


# The variants' columns (results.csv): Fig. 2's classes, how waker and run CPU agree, the trains.
VARIANT_COLS = [
    ("wakeups_per_s", "wake-ups/s", "{:,.0f}"),
    ("wakeups_remote_frac", "waker != prev", "{:.2f}"),
    ("wakeups_on_waker_frac", "run on waker CPU", "{:.2f}"),
    ("wakeups_delayed_frac", "delayed dequeue", "{:.3f}"),
    ("migrations_per_s", "migrations/s", "{:,.0f}"),
    ("migrations_wakeup_affine_per_s", "wake-up to waker /s", "{:,.0f}"),
    ("migrations_wakeup_other_per_s", "wake-up elsewhere /s", "{:,.0f}"),
    ("migrations_balance_per_s", "balancer /s", "{:,.0f}"),
    ("migrations_unintended_per_s", "unintended /s", "{:,.0f}"),
    ("unintended_fraction", "unintended_fraction", "{:.3f}"),
    ("settle_mean", "settle_mean", "{:.2f}"),
    ("settle_max", "settle_max", "{:.0f}"),
    ("wakeup_wait_us_p50", "wait p50 us", "{:.0f}"),
    ("rx_train_segs_mean", "segs/train", "{:.1f}"),
    ("wakeups_per_train", "wake-ups/train", "{:.2f}"),
    ("rx_on_emit_cpu_frac", "rx on emitting CPU", "{:.2f}"),
    ("reader_rx_mbps", "rx Mbit/s", "{:,.0f}"),
    ("loadavg_1m", "load avg", "{:.1f}"),
]

# The trains' columns (trains.csv, one row per flow): the mean over flows and repetitions, range.
TRAIN_COLS = [
    ("emit_segs_mean", "segs/skb", "{:.1f}"),
    ("emit_autosize_segs_mean", "tcp_tso_autosize", "{:.1f}"),
    ("emit_size_goal_segs_mean", "size goal (half window)", "{:.1f}"),
    ("emit_at_rule_frac", "skb = min(rules)", "{:.2f}"),
    ("emit_from_pacing_timer_frac", "sent by pacing timer", "{:.2f}"),
    ("emit_from_net_rx_frac", "by NET_RX (ACK)", "{:.2f}"),
    ("emit_from_syscall_frac", "by sendmsg", "{:.2f}"),
    ("emit_over_idle_frac", "over idle", "{:.2f}"),
    ("emit_over_other_task_frac", "over other task", "{:.2f}"),
    ("emit_over_sender_frac", "over a sender", "{:.2f}"),
    ("pacing_timer_late_us_p50", "timer late p50 us", "{:.0f}"),
    ("emit_gap_us_p50", "skb gap p50 us", "{:,.0f}"),
    ("rx_train_segs_mean", "train segs", "{:.1f}"),
    ("rx_train_bytes_mean", "train KB", "{:.1f}"),
    ("rx_within_gap_us_p50", "within gap p50 us", "{:.1f}"),
    ("rx_within_gap_us_p90", "within gap p90 us", "{:.1f}"),
    ("rx_between_gap_us_p50", "between gap p50 us", "{:,.0f}"),
    ("rx_on_emit_cpu_frac", "rx on emitting CPU", "{:.2f}"),
    ("rx_delay_us_p50", "skb to rx p50 us", "{:.0f}"),
    ("wakeups_per_train", "wake-ups/train", "{:.2f}"),
    ("wakeups_per_skb", "wake-ups/skb", "{:.2f}"),
    ("trains_read_in_parts_frac", "read in parts", "{:.2f}"),
    ("reader_wakeups_per_s", "wake-ups/s per flow", "{:,.0f}"),
]


def by_variant(path) -> dict[tuple[str, int], list[dict]]:
    """Rows by (variant, flow count): variants in their order of first appearance, flows ascending."""
    g: dict[tuple[str, int], list[dict]] = {}
    order: list[str] = []
    for r in rows(path):
        if r["variant"] not in order:
            order.append(r["variant"])
        g.setdefault((r["variant"], int(r["process.reader.instances"])), []).append(r)
    return dict(sorted(g.items(), key=lambda kv: (kv[0][1], order.index(kv[0][0]))))


def variants_summary(live_csv) -> tuple[list[str], list[list[str]]]:
    head = ["flows", "variant", "reps"] + [h for _, h, _ in VARIANT_COLS]
    body = [
        [str(n), v, str(len(rs))] + [cell(rs, k, f) for k, _, f in VARIANT_COLS]
        for (v, n), rs in by_variant(live_csv).items()
    ]
    return head, body


def trains_summary(trains_csv) -> tuple[list[str], list[list[str]]]:
    """One row per (flow count, variant): the per-flow summaries' mean over flows and
    repetitions, with their range; `train KB` from bytes; `wake-ups/skb`, the reader's wake-ups
    over the skbs its sender's TCP emitted."""
    head = ["flows", "variant", "flow rows"] + [h for _, h, _ in TRAIN_COLS]
    body = []
    for (v, n), rs in by_variant(trains_csv).items():
        for r in rs:
            r["rx_train_bytes_mean"] = str(num(r, "rx_train_bytes_mean") / 1024)
            r["wakeups_per_skb"] = str(num(r, "reader_wakeups_per_s") / num(r, "emits_per_s"))
        body.append([str(n), v, str(len(rs))] + [cell(rs, k, f) for k, _, f in TRAIN_COLS])
    return head, body


def variants_main(a) -> None:
    print(table(*variants_summary(a.live_csv)))


def trains_main(a) -> None:
    print(table(*trains_summary(a.trains_csv)))
