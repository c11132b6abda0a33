"""tabata-speed live (`hostsim live tabata-speed`): its results.csv as the paper's tables, beside the
model's sweep. From the live points (means over repetitions, ± population standard deviation):
Fig. 1, bandwidth against regulated speed per send() unit, and its ratio to the regulated sender at
100 % (the paper's primary reading of 100 %) and to the unregulated sender, with the model's ratio
at the same speed and unit beside it (`--model`); Figs. 2-3, inter-arrival histograms (100 us bins,
frames per run) at 100, 80 and 50 %; Table 1, frames arriving < 100 us after the previous one by
size (100 B bins) at 100 %; the regulator's accuracy (wake-up lateness, the sender's CPU time
outside its slots, schedule errors) and the evidence of which side limited the transfer
(receive-window-limited time, send-buffer-limited time, the sink's CPU share), with the load
average of each point."""

from __future__ import annotations

from collections import defaultdict

from ._common import mean_sd, num, rows

SPEEDS = (100, 80, 50)


def add_parser(sub) -> None:
    p = sub.add_parser("tabata-speed", help="tabata-speed live: Figs. 1-3 and Table 1 on this machine")
    tools = p.add_subparsers(dest="tool", required=True)
    t = tools.add_parser("table", help="the paper's figures as tables, live (and model)", description=__doc__)
    t.add_argument("live_csv")
    t.add_argument("--model", help="the model's results.csv (hostsim sweep)")
    t.add_argument("--model-variant", default="fast-immediate")
    t.set_defaults(func=table_main)


def group(rs):
    g = defaultdict(list)
    for r in rs:
        g[(r["process.sender.unit_bytes"], r["variant"], int(num(r, "process.sender.speed_pct")))].append(r)
    return g


def fig1(live, model, model_variant, units) -> list[str]:
    out = [
        "## Fig. 1: bandwidth against regulated speed (Mbit/s; ratio to the regulated sender at 100 % and to the unregulated one)"
    ]
    hdr = "| unit B | variant | speed % | bw_mbps mean ± sd | / regulated 100 % | / off |"
    if model:
        hdr += f" model ({model_variant}) bw_mbps | model / its 100 % |"
    out += [hdr, "|" + "---|" * (hdr.count("|") - 1)]
    for u in units:
        b100 = mean_sd(live.get((u, "regulated", 100), []), "bw_mbps")[0]
        boff = mean_sd(live.get((u, "off", 100), []), "bw_mbps")[0]
        m100 = mean_sd(model.get((u, model_variant, 100), []), "bw_mbps")[0] if model else None
        for key in sorted((k for k in live if k[0] == u), key=lambda k: (k[1] != "off", k[2])):
            m, s = mean_sd(live[key], "bw_mbps")
            line = f"| {u} | {key[1]} | {key[2]} | {m:.2f} ± {s:.2f} (n={len(live[key])}) | {m / b100:.3f} | {m / boff:.3f} |"
            if model:
                if key[1] == "regulated":
                    mm = mean_sd(model.get((u, model_variant, key[2]), []), "bw_mbps")[0]
                    line += f" {mm:.2f} | {mm / m100:.3f} |"
                else:
                    line += " | |"
            out.append(line)
    return out


def figs23(live, units) -> list[str]:
    out = ["## Figs. 2-3: inter-arrival times of data frames (frames per run in 100 us bins; last bin >= 3000 us)"]
    for u in units:
        out += [f"\n{u} B units", "| gap (us) | " + " | ".join(f"{s} %" for s in SPEEDS) + " |", "|---|---|---|---|"]
        rs = {s: live.get((u, "regulated", s), []) for s in SPEEDS}
        for lo in range(0, 3100, 100):
            vals = [mean_sd(rs[s], f"receiver_gap_us_h{lo}")[0] for s in SPEEDS]
            if all(v == 0 or v != v for v in vals):
                continue
            out.append(f"| {lo} | " + " | ".join(f"{v:.1f}" for v in vals) + " |")
        out.append(
            "| long (>= 400 us) | "
            + " | ".join(f"{mean_sd(rs[s], 'receiver_long_gaps')[0]:.1f}" for s in SPEEDS)
            + " |"
        )
        out.append(
            "| lengthened (>= 1 ms) share of long | "
            + " | ".join(f"{mean_sd(rs[s], 'receiver_lengthened_frac')[0]:.3f}" for s in SPEEDS)
            + " |"
        )
    return out


def table1(live, units) -> list[str]:
    out = [
        "## Table 1: frames arriving < 100 us after the previous one, by frame size, regulated at 100 % (frames per run)",
        "| size (B) | " + " | ".join(f"{u} B units" for u in units) + " |",
        "|---|" + "---|" * len(units),
    ]
    for lo in range(0, 1600, 100):
        vals = [mean_sd(live.get((u, "regulated", 100), []), f"receiver_short_gap_size_h{lo}")[0] for u in units]
        if all(v == 0 or v != v for v in vals):
            continue
        out.append(f"| {lo}-{lo + 99} | " + " | ".join(f"{v:.1f}" for v in vals) + " |")
    return out


def accuracy(live) -> list[str]:
    out = [
        "## The regulator's accuracy and the bottleneck, per speed (means over units and repetitions)",
        "| speed % | late p50 us | late p99 us | late max us | gate switch p99 us | sender CPU outside slots | schedule errors | rwnd-limited | sndbuf-limited | sink CPU | load avg 1 min |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_speed = defaultdict(list)
    for (_u, v, s), rs in live.items():
        by_speed[(v, s)].extend(rs)
    for v, s in sorted(by_speed, key=lambda k: (k[0] != "off", k[1])):
        rs = by_speed[(v, s)]

        def f(k, rs=rs):
            return mean_sd(rs, k)[0]

        mx = max((num(r, "regulator_late_us_max") for r in rs), default=float("nan"))
        errs = sum(num(r, "regulator_schedule_errors") for r in rs) if v == "regulated" else float("nan")
        la = [num(r, "loadavg_1m") for r in rs]
        out.append(
            f"| {s if v == 'regulated' else 'off'} | {f('regulator_late_us_p50'):.1f} | {f('regulator_late_us_p99'):.1f} | {mx:.0f} | "
            f"{f('regulator_switch_us_p99'):.1f} | {f('sender_runtime_out_frac'):.3f} | {errs:.0f} | {max(num(r, 'sender_rwnd_limited_frac') for r in rs):.3f} (max) | "
            f"{f('sender_sndbuf_limited_frac'):.3f} | {f('sink_cpu_frac'):.3f} | {min(la):.2f}-{max(la):.2f} |"
        )
    return out


def report(live_csv, model_csv=None, model_variant="fast-immediate") -> str:
    live = group(rows(live_csv))
    model = group(rows(model_csv)) if model_csv else {}
    units = sorted({k[0] for k in live}, key=int)
    parts = [fig1(live, model, model_variant, units), figs23(live, units), table1(live, units), accuracy(live)]
    return "\n\n".join("\n".join(p) for p in parts)


def table_main(a) -> None:
    print(report(a.live_csv, a.model, a.model_variant))
