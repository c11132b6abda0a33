"""takeuchi-symbiose live (`hostsim live takeuchi-symbiose`): its results.csv as Fig. 4 on this
machine. One row per variant and input rate, means over the valid repetitions (`n` says how many
were valid, `inv` how many were not): offered and achieved input, forwarded (the router's IP
forwarding), output (frames at the sink with right checksums), the share of the window's frames
that arrived, per-CPU load of the router with softirq and kthread time apart, the generator's and
the sink's CPU, the load average, and the invalid frames at the sink (whole points, summed)."""

from __future__ import annotations

from ._common import by_variant_and, mean, num, rows, table

KEY = "traffic.load.rate_pps"
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


def add_parser(sub) -> None:
    p = sub.add_parser("takeuchi-symbiose", help="takeuchi-symbiose live: Fig. 4 on this machine")
    tools = p.add_subparsers(dest="tool", required=True)
    t = tools.add_parser("table", help="one row per variant and input rate", description=__doc__)
    t.add_argument("live_csv")
    t.add_argument("--markdown", action="store_true")
    t.set_defaults(func=table_main)


def summary(live_rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    head = ["variant", "n", "inv"] + [c[0] for c in COLS] + ["sink invalid"]
    body = []
    for (variant, _rate), g in by_variant_and(live_rows, KEY):
        ok = [r for r in g if num(r, "valid") == 1.0]
        use = ok or g
        cells = [variant, str(len(ok)), str(len(g) - len(ok))]
        cells += [fmt.format(mean(num(r, key) for r in use)) for _, key, fmt in COLS]
        cells.append("{:.0f}".format(sum(num(r, "sink_invalid_count") for r in g)))
        body.append(cells)
    return head, body


def table_main(a) -> None:
    print(table(*summary(rows(a.live_csv)), markdown=a.markdown, right=True))
