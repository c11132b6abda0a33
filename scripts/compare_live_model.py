#!/usr/bin/env python3
"""Live vs model, point by point: for each (placement, variant, offered flood) of a `hostsim live
ozaki-pbq` results.csv (valid repetitions averaged), run the model twin (scenarios/live-ozaki-pbq.toml,
variant `<placement>-<variant>`, its seeds averaged) at the rates the live generator achieved,
and print both side by side: bw delivered, bw's loss (1 - received / sent), flood delivered and
the mean softirq share of the two CPUs, with the model's gap.

    python3 scripts/compare_live_model.py [scenarios/live/ozaki-pbq-batch32.csv ...] [--hostsim target/release/hostsim]
        [--seeds 3] [--jobs 2] [--csv OUT.csv] [--flood-spread 0.75]

A live variant without a model form (`supp`, `both`: see the scenario's header) is printed with
"no model" in the model's columns. A file without a `placement` column is taken as `rps`.
A repetition marked invalid (`valid` = 0: the generator fell below its rate) is left out and
counted in the `invalid` column; a point with no valid repetition is listed after the table.
`--flood-spread F` is for a live run made with `--gen-spread F`: the twin's threaded variants
then send each quantum of the flood evenly over that fraction of it (`spread`) instead of at
once (`burst_pps`); the `rps` variants keep their evenly spaced sources, as calibrated.
"""

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import tomllib
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCEN = ROOT / "scenarios/live-ozaki-pbq.toml"
KEY = "traffic.floodclients.rate_pps"
# (column, label, format): what the table shows for each side.
SHOWN = [
    ("bw_rx_pps", "bw delivered", "{:,.0f}"),
    ("bw_loss", "bw loss", "{:.1%}"),
    ("flood_rx_pps", "flood delivered", "{:,.0f}"),
    ("cpu_softirq_frac", "softirq", "{:.3f}"),
]


def live_points(paths):
    """(placement, variant, offered) -> means of the repetitions, from every file in `paths`."""
    acc = defaultdict(lambda: defaultdict(list))
    invalid = defaultdict(int)
    for path in paths:
        for r in csv.DictReader(open(path)):
            k = (r.get("placement") or "rps", r["variant"], float(r[KEY]))
            if r.get("valid") not in (None, "") and float(r["valid"]) == 0:
                invalid[k] += 1
                continue
            for c, v in r.items():
                try:
                    f = float(v)
                except (TypeError, ValueError):
                    continue
                acc[k][c].append(f)
            acc[k]["_file"].append(Path(path).name)
    out = {}
    for k, d in acc.items():
        m = {c: sum(v) / len(v) for c, v in d.items() if c != "_file"}
        m["reps"] = len(d["_file"])
        m["invalid"] = invalid.get(k, 0)
        m["files"] = sorted(set(d["_file"]))
        m["bw_loss"] = m["bw_loss_frac"] if "bw_loss_frac" in m else 1 - m["bw_rx_pps"] / m["bwclient_sent_pps"]
        out[k] = m
    return out, {k: n for k, n in invalid.items() if k not in out}


def spread_twin(frac, d):
    """The twin with its threaded variants' flood spread over `frac` of each quantum, written in `d`
    (the calibration overlay is the built-in one of the same name)."""
    text = SCEN.read_text()
    burst = '"traffic.floodclients.burst_pps" = 2500000'
    if burst not in text:
        sys.exit(f"{SCEN}: no threaded flood burst rate to replace ({burst})")
    out = Path(d) / SCEN.name
    out.write_text(text.replace(burst, f'"traffic.floodclients.spread" = {frac}'))
    return out


def model_point(hostsim, scen, variant, flood, bw, seeds):
    """The twin's metrics at these rates, averaged over `seeds`."""
    runs = []
    for seed in seeds:
        with tempfile.TemporaryDirectory() as d:
            subprocess.run(
                [
                    hostsim,
                    "run",
                    str(scen),
                    "--variant",
                    variant,
                    "--seed",
                    str(seed),
                    "--set",
                    f"{KEY}={max(flood, 1):.0f}",
                    "--set",
                    f"traffic.bwclient.rate_pps={bw:.0f}",
                    "--out",
                    d,
                ],
                check=True,
                capture_output=True,
            )
            runs.append(json.loads((Path(d) / "summary.json").read_text())["metrics"])
    m = {
        k: sum(r.get(k, float("nan")) for r in runs) / len(runs)
        for k in ("bw_rx_pps", "flood_rx_pps", "cpu_softirq_frac")
    }
    m["bw_loss"] = 1 - m["bw_rx_pps"] / bw
    return m


def table(live, models):
    cols = ["placement", "variant", "flood offered", "flood achieved", "reps", "invalid", "load 1m"]
    for _, label, _ in SHOWN:
        cols += [f"{label} live", "model", "gap"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    order = sorted(
        live,
        key=lambda k: (
            k[0],
            ["off", "on", "supp", "both"].index(k[1]) if k[1] in ("off", "on", "supp", "both") else 9,
            k[2],
        ),
    )
    for k in order:
        lv, mv = live[k], models.get(k)
        cells = [
            k[0],
            k[1],
            f"{k[2]:,.0f}",
            f"{lv['floodclients_sent_pps']:,.0f}",
            str(lv["reps"]),
            str(lv["invalid"]),
            f"{lv.get('loadavg_1m_start', float('nan')):.1f}",
        ]
        for c, _, fmt in SHOWN:
            cells.append(fmt.format(lv[c]))
            if mv is None:
                cells += ["no model", "-"]
            else:
                gap = "-" if c == "bw_loss" or not lv[c] else f"{(mv[c] - lv[c]) / lv[c]:+.0%}"
                if c == "bw_loss":
                    gap = f"{(mv[c] - lv[c]) * 100:+.1f} pt"
                cells += [fmt.format(mv[c]), gap]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("live_csv", nargs="*", default=[str(ROOT / "scenarios/live/ozaki-pbq-batch32.csv")])
    ap.add_argument("--hostsim", default=str(ROOT / "target/release/hostsim"))
    ap.add_argument("--seeds", type=int, default=None, help="model seeds per point (default: the scenario's)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--csv", help="also write the table's numbers here")
    ap.add_argument("--flood-spread", type=float, help="the live run's --gen-spread (module doc)")
    a = ap.parse_args()
    if a.flood_spread is not None and not 0 < a.flood_spread <= 1:
        sys.exit("--flood-spread: expected a fraction in (0, 1]")
    tmp = tempfile.TemporaryDirectory()
    scen = spread_twin(a.flood_spread, tmp.name) if a.flood_spread is not None else SCEN
    sc = tomllib.loads(SCEN.read_text())
    twin = {v["name"] for v in sc.get("variant", [])}
    seeds = range(1, 1 + (a.seeds or sc.get("seeds", 1)))
    live, none_valid = live_points(a.live_csv)
    if not live:
        sys.exit("no live rows")
    todo = {k: f"{k[0]}-{k[1]}" for k in live if f"{k[0]}-{k[1]}" in twin}
    with ThreadPoolExecutor(a.jobs) as pool:
        futs = {
            k: pool.submit(
                model_point, a.hostsim, scen, v, live[k]["floodclients_sent_pps"], live[k]["bwclient_sent_pps"], seeds
            )
            for k, v in todo.items()
        }
        models = {k: f.result() for k, f in futs.items()}
    spread = f", threaded flood spread over {a.flood_spread} of each quantum" if a.flood_spread is not None else ""
    print(
        f"live: {', '.join(a.live_csv)}; model: {SCEN.relative_to(ROOT)}{spread}, seeds {seeds.start}..{seeds.stop - 1}, "
        "at the rates the live generator achieved"
    )
    print(table(live, models))
    if none_valid:
        print(
            "\nno valid repetition (left out): "
            + "; ".join(f"{p} {v} {r:,.0f} ({n} invalid)" for (p, v, r), n in sorted(none_valid.items()))
        )
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(
                ["placement", "variant", KEY, "flood_achieved_pps", "reps", "invalid"]
                + [f"{c}_{s}" for c, _, _ in SHOWN for s in ("live", "model")]
            )
            for k in sorted(live):
                lv, mv = live[k], models.get(k)
                w.writerow(
                    [k[0], k[1], k[2], lv["floodclients_sent_pps"], lv["reps"], lv["invalid"]]
                    + [x for c, _, _ in SHOWN for x in (lv[c], mv[c] if mv else "")]
                )


if __name__ == "__main__":
    main()
