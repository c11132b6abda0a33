"""ozaki-pbq live (`hostsim live ozaki-pbq`) against its model twin, `scenarios/live-ozaki-pbq.toml`.

`compare`: live vs model, point by point. For each (placement, variant, offered flood) of the
live results.csv files (valid repetitions averaged), the twin (variant `<placement>-<variant>`,
its seeds averaged) runs at the rates the live generator achieved, and both are printed side by
side: bw delivered, bw's loss (1 - received / sent), flood delivered and the mean softirq share of
the two CPUs, with the model's gap. A live variant without a model form (`supp`, `both`: see the
scenario's header) is printed with "no model". A file without a `placement` column is taken as
`rps`. A repetition marked invalid (`valid` = 0: the generator fell below its rate) is left out and
counted in the `invalid` column; a point with no valid repetition is listed after the table.
`--flood-spread F` is for a live run made with `--gen-spread F`: the twin's threaded variants then
send each quantum of the flood evenly over that fraction of it (`spread`) instead of at once
(`burst_pps`); the `rps` variants keep their evenly spaced sources, as calibrated.

`fit`: the twin's four calibrated costs, fitted to the live *baseline* sweep only. It reads the
`off` rows (the program counting, no drop) of one placement (default `rps`), skips the points
marked invalid, averages the repetitions per offered flood rate, runs the twin (variant
`rps-off`, seed 1) at the rates the live generator *achieved* there, and fits the costs declared
in the scenario's `[[calibrate]]` (with their bounds) to three CPU times per packet at each point,
each a CPU share over the packets that cost it:

    CPU 1 softirq share / frames polled           (the veth poll, the program, the RPS enqueue
                                                   and IPI send; frames polled = the program's
                                                   count live, offered less ring drops in the model)
    CPU 0 softirq + hardirq share / packets that  (the RPS IPI, the backlog, IP/UDP, the socket;
      reached a socket (delivered + socket drops)  the live kernel has no IRQ time accounting)
    bw + flood processes' CPU / datagrams read    (recv(), wake-ups, context switches)

by minimising the sum over points of the squared relative gaps (scipy's bounded Nelder-Mead on the
costs scaled to their bounds, from the profile's estimates before any fit). Per packet, not as
shares: a share says how a saturated CPU's time divides, a time per packet what each packet costs,
which is what the costs are. The points are those with at least --min-rate pkt/s of flood offered
(default 100,000: the overloaded points, the regime of every claim); at 1,000 pkt/s the live
machine spent less per packet (285 / 708 / 1,105 ns) than the profile's fixed costs per interrupt,
softirq pass, wake-up and context switch add up to in the model, so no value of these four costs
reaches it (the residuals printed include it, unfitted). Prints the values, the per-point residuals
and the overlay for calibration/live-ozaki-pbq.toml (`--write` writes it). No mechanism-on row is
read.
"""

from __future__ import annotations

import csv
import json
import sys
import tempfile
import tomllib
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from ._common import checkout, default_hostsim, num, rows, run_model

SCENARIO = "scenarios/live-ozaki-pbq.toml"
OVERLAY = "calibration/live-ozaki-pbq.toml"
LIVE = "scenarios/live/ozaki-pbq-batch32.csv"
KEY = "traffic.floodclients.rate_pps"
# (column, label, format): what the comparison shows for each side.
SHOWN = [
    ("bw_rx_pps", "bw delivered", "{:,.0f}"),
    ("bw_loss", "bw loss", "{:.1%}"),
    ("flood_rx_pps", "flood delivered", "{:,.0f}"),
    ("cpu_softirq_frac", "softirq", "{:.3f}"),
]
VARIANTS = ("off", "on", "supp", "both")
# The fit's three CPU times per packet, and the costs' starting values: the profile's estimates
# before any fit (its comments: driver 900, IP/UDP 300, recv 220 ns; the IPI 2 us).
TARGETS = ("cpu1_softirq", "cpu0_irq", "procs")
START = {"driver_rx_frame_ns": 900, "ip_udp_rx_ns": 300, "recv_ns": 220, "ipi_ns": 2000}


def add_parser(sub) -> None:
    p = sub.add_parser("ozaki-pbq", help="ozaki-pbq live against its model twin")
    tools = p.add_subparsers(dest="tool", required=True)
    c = tools.add_parser("compare", help="live vs the twin, point by point", description=__doc__.split("\n\n")[1])
    c.add_argument("live_csv", nargs="*", help=f"live results.csv files (default: {LIVE})")
    c.add_argument("--hostsim", default=None, help="the hostsim binary (default: $HOSTSIM_BIN or target/release)")
    c.add_argument("--seeds", type=int, default=None, help="model seeds per point (default: the scenario's)")
    c.add_argument("--jobs", type=int, default=2)
    c.add_argument("--csv", help="also write the table's numbers here")
    c.add_argument("--flood-spread", type=float, help="the live run's --gen-spread (see the description)")
    c.set_defaults(func=compare)
    f = tools.add_parser("fit", help="the twin's calibrated costs, fitted to the live baseline")
    f.add_argument("live_csv", nargs="?", help=f"a live results.csv (default: {LIVE})")
    f.add_argument("--hostsim", default=None)
    f.add_argument("--placement", default="rps")
    f.add_argument("--jobs", type=int, default=2)
    f.add_argument("--min-rate", type=float, default=100000, help="fit on the points with at least this flood offered")
    f.add_argument("--maxfev", type=int, default=160)
    f.add_argument("--write", action="store_true", help="write the overlay (--overlay)")
    f.add_argument("--overlay", default=None, help=f"where --write writes it (default: the checkout's {OVERLAY})")
    f.set_defaults(func=fit)


# ------------------------------------------------------------------------------------- compare


def live_points(paths):
    """(placement, variant, offered) -> means of the valid repetitions, from every file in `paths`,
    and the points that had none (with their invalid counts)."""
    acc = defaultdict(lambda: defaultdict(list))
    invalid = defaultdict(int)
    for path in paths:
        for r in rows(path):
            k = (r.get("placement") or "rps", r["variant"], float(r[KEY]))
            if r.get("valid") not in (None, "") and float(r["valid"]) == 0:
                invalid[k] += 1
                continue
            for c in r:
                v = num(r, c)
                if v == v:
                    acc[k][c].append(v)
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


def spread_twin(scenario: Path, frac: float, d: str) -> Path:
    """The twin with its threaded variants' flood spread over `frac` of each quantum, written in `d`
    (the calibration overlay is the built-in one of the same name)."""
    text = scenario.read_text()
    burst = '"traffic.floodclients.burst_pps" = 2500000'
    if burst not in text:
        sys.exit(f"{scenario}: no threaded flood burst rate to replace ({burst})")
    out = Path(d) / scenario.name
    out.write_text(text.replace(burst, f'"traffic.floodclients.spread" = {frac}'))
    return out


def model_point(hostsim, scen, variant, flood, bw, seeds):
    """The twin's metrics at these rates, averaged over `seeds`."""
    sets = {KEY: f"{max(flood, 1):.0f}", "traffic.bwclient.rate_pps": f"{bw:.0f}"}
    runs = [run_model(hostsim, scen, variant, seed, sets)["metrics"] for seed in seeds]
    m = {
        k: sum(r.get(k, float("nan")) for r in runs) / len(runs)
        for k in ("bw_rx_pps", "flood_rx_pps", "cpu_softirq_frac")
    }
    m["bw_loss"] = 1 - m["bw_rx_pps"] / bw
    return m


def compare_table(live, models) -> str:
    cols = ["placement", "variant", "flood offered", "flood achieved", "reps", "invalid", "load 1m"]
    for _, label, _ in SHOWN:
        cols += [f"{label} live", "model", "gap"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    order = sorted(live, key=lambda k: (k[0], VARIANTS.index(k[1]) if k[1] in VARIANTS else 9, k[2]))
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
            elif c == "bw_loss":
                cells += [fmt.format(mv[c]), f"{(mv[c] - lv[c]) * 100:+.1f} pt"]
            else:
                cells += [fmt.format(mv[c]), "-" if not lv[c] else f"{(mv[c] - lv[c]) / lv[c]:+.0%}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def compare(a) -> None:
    root = checkout()
    scenario = root / SCENARIO
    paths = a.live_csv or [str(root / LIVE)]
    if a.flood_spread is not None and not 0 < a.flood_spread <= 1:
        sys.exit("--flood-spread: expected a fraction in (0, 1]")
    hostsim = a.hostsim or default_hostsim()
    tmp = tempfile.TemporaryDirectory()
    scen = spread_twin(scenario, a.flood_spread, tmp.name) if a.flood_spread is not None else scenario
    sc = tomllib.loads(scenario.read_text())
    twin = {v["name"] for v in sc.get("variant", [])}
    seeds = range(1, 1 + (a.seeds or sc.get("seeds", 1)))
    live, none_valid = live_points(paths)
    if not live:
        sys.exit("no live rows")
    todo = {k: f"{k[0]}-{k[1]}" for k in live if f"{k[0]}-{k[1]}" in twin}
    with ThreadPoolExecutor(a.jobs) as pool:
        futs = {
            k: pool.submit(
                model_point, hostsim, scen, v, live[k]["floodclients_sent_pps"], live[k]["bwclient_sent_pps"], seeds
            )
            for k, v in todo.items()
        }
        models = {k: f.result() for k, f in futs.items()}
    spread = f", threaded flood spread over {a.flood_spread} of each quantum" if a.flood_spread is not None else ""
    print(
        f"live: {', '.join(paths)}; model: {SCENARIO}{spread}, seeds {seeds.start}..{seeds.stop - 1}, "
        "at the rates the live generator achieved"
    )
    print(compare_table(live, models))
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


# ----------------------------------------------------------------------------------------- fit


def live_targets(path, placement, min_rate=0.0):
    """Per offered flood rate, the valid `off` rows' rates and CPU times per packet (means)."""
    acc = defaultdict(lambda: defaultdict(list))
    for r in rows(path):
        if r["variant"] != "off" or (r.get("placement") or "rps") != placement or float(r[KEY]) < min_rate:
            continue
        if num(r, "valid") == 0:
            continue  # the generator fell short of its rate (it shares CPU 1 with the veth's poll)
        x = float(r[KEY])
        acc[x]["flood_pps"].append(num(r, "floodclients_sent_pps"))
        acc[x]["bw_pps"].append(num(r, "bwclient_sent_pps"))
        polled = num(r, "xdp_rx_pps")
        to_socket = num(r, "bw_rx_pps") + num(r, "flood_rx_pps") + num(r, "drop_socket_pps")
        read = num(r, "bw_rx_pps") + num(r, "flood_rx_pps")
        acc[x]["cpu1_softirq"].append(num(r, "cpu1_softirq_frac") * 1e9 / polled)
        acc[x]["cpu0_irq"].append((num(r, "cpu0_softirq_frac") + num(r, "cpu0_hardirq_frac")) * 1e9 / to_socket)
        acc[x]["procs"].append((num(r, "bw_cpu_frac") + num(r, "flood_cpu_frac")) * 1e9 / read)
    return {x: {k: sum(v) / len(v) for k, v in d.items()} for x, d in sorted(acc.items())}


def model_costs(s: dict) -> dict:
    """The twin's CPU times per packet from its summary.json: CPU shares over the whole run
    (the totals include the warm-up; the sources are constant-rate, so the warm-up's shares are
    the window's), rates over the window."""
    m = s["metrics"]
    t_ns = s["sim_time_ns"]
    c0, c1 = s["cpus"][0], s["cpus"][1]
    polled = m["offered_pps"] - m["drop_nic_ring_pps"]
    to_socket = m["delivered_pps"] + m["drop_socket_pps"]
    return {
        "cpu1_softirq": c1["softirq_ns"] / t_ns * 1e9 / max(polled, 1.0),
        "cpu0_irq": (c0["softirq_ns"] + c0["hardirq_ns"]) / t_ns * 1e9 / max(to_socket, 1.0),
        # The sinks' CPU summed over the instances (the model's `flood_cpu_frac` is the mean of
        # the four sinks, the live one their sum).
        "procs": sum(p["cpu_ns"] for p in s["processes"] if not p["kernel_thread"])
        / t_ns
        * 1e9
        / max(m["delivered_pps"], 1.0),
    }


def fit(a) -> None:
    import numpy as np
    from scipy.optimize import minimize

    root = checkout()
    scenario = root / SCENARIO
    live_csv = a.live_csv or str(root / LIVE)
    hostsim = a.hostsim or default_hostsim()
    targets = live_targets(live_csv, a.placement, a.min_rate)
    shown = live_targets(live_csv, a.placement)
    if not targets:
        sys.exit(f"no `off` rows of placement {a.placement}")
    variant = f"{a.placement}-off"
    sc = tomllib.loads(scenario.read_text())
    params = sc["calibrate"]
    prof = tomllib.loads((root / "profiles" / f"{sc['profile']}.toml").read_text())
    x0 = np.array([float(START.get(p["name"], prof["costs"][p["key"].rsplit(".", 1)[1]])) for p in params])
    lo = np.array([float(p["min"]) for p in params])
    hi = np.array([float(p["max"]) for p in params])
    x0 = np.clip(x0, lo, hi)
    pool = ThreadPoolExecutor(a.jobs)

    def at(t, x):
        sets = {KEY: f"{t['flood_pps']:.0f}", "traffic.bwclient.rate_pps": f"{t['bw_pps']:.0f}"}
        sets |= {p["key"]: int(round(v)) for p, v in zip(params, x, strict=True)}
        return model_costs(run_model(hostsim, scenario, variant, 1, sets))

    def run_all(x, pts=targets):
        return list(pool.map(lambda t: at(t, x), pts.values()))

    def loss(x):
        ms = run_all(x)
        return sum(((m[k] - t[k]) / t[k]) ** 2 for m, t in zip(ms, targets.values(), strict=True) for k in TARGETS)

    before = loss(x0)
    # Nelder-Mead on the costs scaled to their bounds (0..1), so that one simplex step means the
    # same for every cost.
    res = minimize(
        lambda u: loss(lo + u * (hi - lo)),
        (x0 - lo) / (hi - lo),
        method="Nelder-Mead",
        bounds=[(0.0, 1.0)] * len(params),
        options={"maxfev": a.maxfev, "xatol": 1e-3, "fatol": 1e-3, "initial_simplex": None},
    )
    x = np.round(lo + res.x * (hi - lo), -1)
    after = loss(x)
    ms = run_all(x, shown)
    lines = [
        f"fitted on {Path(live_csv).name}, placement {a.placement}, variant off, {len(targets)} points; "
        f"objective {before:.3f} at the start -> {after:.3f} ({res.nfev} evaluations)"
    ]
    for p, v in zip(params, x, strict=True):
        lines.append(f"  {p['name']:<20} = {v:>6.0f} ns  (bounds {p['min']}..{p['max']})")
    lines.append("  residuals per point (model vs live CPU ns per packet):")
    for (rate, t), m in zip(shown.items(), ms, strict=True):
        cells = "; ".join(f"{k} {m[k]:.0f} vs {t[k]:.0f} ({(m[k] - t[k]) / max(t[k], 1e-9):+.0%})" for k in TARGETS)
        lines.append(
            f"  {rate:>9,.0f} (sent {t['flood_pps']:,.0f}){'' if rate in targets else ' [not fitted]'}: {cells}"
        )
    print("\n".join(lines))
    values = {p["name"]: int(v) for p, v in zip(params, x, strict=True)}
    print(json.dumps(values))
    if a.write:
        live_name = Path(live_csv).resolve()
        live_name = live_name.relative_to(root) if live_name.is_relative_to(root) else live_name
        hdr = "\n".join("# " + ln for ln in lines)
        overlay = Path(a.overlay) if a.overlay else root / OVERLAY
        overlay.write_text(
            "# Calibration overlay of scenarios/live-ozaki-pbq.toml (the model twin of `hostsim live ozaki-pbq`),\n"
            "# fitted by `.venv/bin/python -m hostsim.live ozaki-pbq fit --write` on the live baseline only\n"
            "# (mechanism off, placement rps; see `python -m hostsim.live ozaki-pbq fit --help` and the scenario's [[calibrate]]).\n"
            f"{hdr}\n\n[values]\n"
            + "".join(f"{k} = {v}\n" for k, v in values.items())
            + f'\n[fit]\ndate = "{datetime.now(UTC).replace(microsecond=0).isoformat()}"\n'
            'command = ".venv/bin/python -m hostsim.live ozaki-pbq fit --write"\n'
            'method = "bounded Nelder-Mead (scipy) on the costs scaled to their bounds; objective: sum of squared relative gaps of three CPU times per packet at each point"\n'
            'scenarios = ["live-ozaki-pbq"]\n'
            f'live = "{live_name}, placement {a.placement}, variant off, {", ".join(f"{r:.0f}" for r in targets)} pkt/s of flood, means of the repetitions"\n'
            f"min_rate = {a.min_rate:.0f}\n"
            "seeds = [1]\n"
            f"objective_before = {before:.4f}\nobjective_after = {after:.4f}\n"
        )
        print(f"wrote {overlay}", file=sys.stderr)
