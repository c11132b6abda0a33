#!/usr/bin/env python3
"""Tables of a `hostsim live tabata-speed` run (its results.csv), beside the model's sweep.

    python3 scripts/summarize_live_tabata.py LIVE.csv [--model MODEL.csv --model-variant fast-immediate]

Prints, from the live points (means over repetitions, ± population standard deviation):
  Fig. 1   bandwidth against regulated speed, per send() unit, and its ratio to the regulated
           sender at 100 % (the paper's primary reading of 100 %) and to the unregulated sender;
           with --model, the model's ratio at the same speed and unit beside it;
  Figs 2-3 inter-arrival histograms (100 us bins, frames per run) at 100, 80 and 50 %;
  Table 1  frames arriving < 100 us after the previous one, by size (100 B bins), at 100 %;
  the regulator's accuracy (wake-up lateness, the sender's CPU time outside its slots, schedule
  errors) and the evidence of which side limited the transfer (receive-window-limited time,
  send-buffer-limited time, the sink's CPU share), with the load average of each point.
Standard library only.
"""

import argparse
import csv
import statistics as st
from collections import defaultdict


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def val(r, k):
    v = r.get(k, "")
    return float(v) if v not in ("", None) else float("nan")


def mean_sd(rows, k):
    v = [val(r, k) for r in rows]
    v = [x for x in v if x == x]
    if not v:
        return float("nan"), float("nan")
    return st.mean(v), st.pstdev(v)


def group(rows, variant_key="variant"):
    g = defaultdict(list)
    for r in rows:
        g[(r["process.sender.unit_bytes"], r[variant_key], int(float(r["process.sender.speed_pct"])))].append(r)
    return g


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("live")
    ap.add_argument("--model", help="the model's results.csv (hostsim sweep)")
    ap.add_argument("--model-variant", default="fast-immediate")
    a = ap.parse_args()
    live = group(load(a.live))
    model = group(load(a.model)) if a.model else {}
    units = sorted({k[0] for k in live}, key=int)

    print(
        "## Fig. 1: bandwidth against regulated speed (Mbit/s; ratio to the regulated sender at 100 % and to the unregulated one)"
    )
    hdr = "| unit B | variant | speed % | bw_mbps mean ± sd | / regulated 100 % | / off |"
    if model:
        hdr += f" model ({a.model_variant}) bw_mbps | model / its 100 % |"
    print(hdr)
    print("|" + "---|" * (hdr.count("|") - 1))
    for u in units:
        b100 = mean_sd(live.get((u, "regulated", 100), []), "bw_mbps")[0]
        boff = mean_sd(live.get((u, "off", 100), []), "bw_mbps")[0]
        m100 = mean_sd(model.get((u, a.model_variant, 100), []), "bw_mbps")[0] if model else None
        for key in sorted((k for k in live if k[0] == u), key=lambda k: (k[1] != "off", k[2])):
            m, s = mean_sd(live[key], "bw_mbps")
            line = f"| {u} | {key[1]} | {key[2]} | {m:.2f} ± {s:.2f} (n={len(live[key])}) | {m / b100:.3f} | {m / boff:.3f} |"
            if model:
                if key[1] == "regulated":
                    mm = mean_sd(model.get((u, a.model_variant, key[2]), []), "bw_mbps")[0]
                    line += f" {mm:.2f} | {mm / m100:.3f} |"
                else:
                    line += " | |"
            print(line)

    print()
    print("## Figs. 2-3: inter-arrival times of data frames (frames per run in 100 us bins; last bin >= 3000 us)")
    bins = [f"receiver_gap_us_h{lo}" for lo in range(0, 3100, 100)]
    for u in units:
        print(f"\n{u} B units")
        print("| gap (us) | " + " | ".join(f"{s} %" for s in (100, 80, 50)) + " |")
        print("|---|---|---|---|")
        rows = {s: live.get((u, "regulated", s), []) for s in (100, 80, 50)}
        for b in bins:
            vals = [mean_sd(rows[s], b)[0] for s in (100, 80, 50)]
            if all(v == 0 or v != v for v in vals):
                continue
            print(f"| {b.rsplit('_h', 1)[1]} | " + " | ".join(f"{v:.1f}" for v in vals) + " |")
        print(
            "| long (>= 400 us) | "
            + " | ".join(f"{mean_sd(rows[s], 'receiver_long_gaps')[0]:.1f}" for s in (100, 80, 50))
            + " |"
        )
        print(
            "| lengthened (>= 1 ms) share of long | "
            + " | ".join(f"{mean_sd(rows[s], 'receiver_lengthened_frac')[0]:.3f}" for s in (100, 80, 50))
            + " |"
        )

    print()
    print(
        "## Table 1: frames arriving < 100 us after the previous one, by frame size, regulated at 100 % (frames per run)"
    )
    print("| size (B) | " + " | ".join(f"{u} B units" for u in units) + " |")
    print("|---|" + "---|" * len(units))
    for lo in range(0, 1600, 100):
        k = f"receiver_short_gap_size_h{lo}"
        vals = [mean_sd(live.get((u, "regulated", 100), []), k)[0] for u in units]
        if all(v == 0 or v != v for v in vals):
            continue
        print(f"| {lo}-{lo + 99} | " + " | ".join(f"{v:.1f}" for v in vals) + " |")

    print()
    print("## The regulator's accuracy and the bottleneck, per speed (means over units and repetitions)")
    print(
        "| speed % | late p50 us | late p99 us | late max us | gate switch p99 us | sender CPU outside slots | schedule errors | rwnd-limited | sndbuf-limited | sink CPU | load avg 1 min |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    by_speed = defaultdict(list)
    for (_u, v, s), rows in live.items():
        by_speed[(v, s)].extend(rows)
    for v, s in sorted(by_speed, key=lambda k: (k[0] != "off", k[1])):
        rows = by_speed[(v, s)]

        def f(k, rows=rows):
            return mean_sd(rows, k)[0]

        mx = max((val(r, "regulator_late_us_max") for r in rows), default=float("nan"))
        errs = sum(val(r, "regulator_schedule_errors") for r in rows) if v == "regulated" else float("nan")
        la = [val(r, "loadavg_1m") for r in rows]
        print(
            f"| {s if v == 'regulated' else 'off'} | {f('regulator_late_us_p50'):.1f} | {f('regulator_late_us_p99'):.1f} | {mx:.0f} | "
            f"{f('regulator_switch_us_p99'):.1f} | {f('sender_runtime_out_frac'):.3f} | {errs:.0f} | {max(val(r, 'sender_rwnd_limited_frac') for r in rows):.3f} (max) | "
            f"{f('sender_sndbuf_limited_frac'):.3f} | {f('sink_cpu_frac'):.3f} | {min(la):.2f}-{max(la):.2f} |"
        )


if __name__ == "__main__":
    main()
