#!/usr/bin/env python3
"""Side-by-side speed of two hostsim binaries on the same machine (issue 12's measurement).

    python3 scripts/speed_compare.py --old OLD/hostsim --new target/release/hostsim [--runs 5]
        [--old-root OLD]   # the old binary's checkout: its scenarios and profiles (default: this one)
    python3 scripts/speed_compare.py --old ... --new ... --callgrind     # instruction counts

Each case runs `hostsim run` with both binaries, alternating old/new/old/new... so that a drift
in machine load (the machine is shared) hits both alike; the table gives the median of the runs.
Figures come from the binaries' own outputs: `run.json` (wall seconds of the simulation proper,
events, peak RSS) and `summary.json` (packets offered, simulated seconds). "pkt/s" is simulated
packets offered per wall second. The two binaries must agree on the simulated results of a case
(its `summary.json`: byte for byte, or on every field both report when the newer one reports more)
unless the case is marked `model_change` below; the script says when they differ.

`--callgrind` runs each case once per binary under `valgrind --tool=callgrind` (shorter
durations, see `CG_DURATION_MS`) and reports instructions executed: repeatable whatever the load.
Only the standard library is used (no pip install needed).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, scenario file, --set overrides, extra args, duration_ms for the timed runs
CASES = [
    (
        "livelock-150k",
        "scenarios/examples/livelock.toml",
        ["traffic.load.rate_pps=150000"],
        ["--variant", "legacy"],
        3000,
    ),
    (
        "livelock-400k",
        "scenarios/examples/livelock.toml",
        ["traffic.load.rate_pps=400000"],
        ["--variant", "legacy"],
        3000,
    ),
    ("udp-flood-150k", "scenarios/bench/udp-flood.toml", ["traffic.flood.rate_pps=150000"], [], 5000),
    ("udp-flood-400k", "scenarios/bench/udp-flood.toml", ["traffic.flood.rate_pps=400000"], [], 5000),
    ("modern-64c", "scenarios/bench/modern-64c.toml", ["warmup_ms=50"], [], 300),
]
# Cases whose simulated results are expected to differ between the binaries (a deliberate model
# change between them, named here so the table says so instead of flagging a mismatch).
MODEL_CHANGE = {}
CG_DURATION_MS = {
    "livelock-150k": 300,
    "livelock-400k": 300,
    "udp-flood-150k": 500,
    "udp-flood-400k": 500,
    "modern-64c": 20,
}
# Overrides for the shorter callgrind runs (a warm-up must stay shorter than the run).
CG_SETS = {"modern-64c": ["warmup_ms=5"]}


def run_case(binary, case, duration_ms, out, callgrind=None, root=ROOT):
    name, scenario, sets, extra, _ = case
    if callgrind:
        sets = sets + CG_SETS.get(name, [])
    cmd = [binary, "run", os.path.join(root, scenario), "--out", out, "--set", f"duration_ms={duration_ms}"]
    for s in sets:
        cmd += ["--set", s]
    cmd += extra
    if callgrind:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={callgrind}"] + cmd
    r = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{name}: {' '.join(cmd)} failed:\n{r.stderr}")
    with open(os.path.join(out, "run.json")) as f:
        run = json.load(f)
    with open(os.path.join(out, "summary.json")) as f:
        summary_text = f.read()
    summary = json.loads(summary_text)
    sim_s = summary["sim_time_ns"] * 1e-9
    return {
        "pkt_per_s": summary["packets"]["offered"] / run["wall_s"],
        "events_per_s": run["events_per_s"],
        "wall_per_sim_s": run["wall_s"] / sim_s,
        "rss_mib": run["peak_rss_bytes"] / 2**20,
        "events": run["events"],
        "summary": summary_text,
        "stderr": r.stderr,
    }


def _common(a, b):
    """`a` and `b` reduced to the keys both have (recursively): a newer binary may report more
    fields, and only what both report can be compared."""
    if isinstance(a, dict) and isinstance(b, dict):
        ks = sorted(set(a) & set(b))
        return {k: _common(a[k], b[k])[0] for k in ks}, {k: _common(a[k], b[k])[1] for k in ks}
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        pairs = [_common(x, y) for x, y in zip(a, b, strict=True)]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    return a, b


def same_results(old_text, new_text):
    """Do the two summary.json texts agree: byte for byte, or else on every field both have?"""
    if old_text == new_text:
        return True
    a, b = _common(json.loads(old_text), json.loads(new_text))
    return a == b


def callgrind_total(path):
    with open(path) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="hostsim binary at the start of the issue")
    ap.add_argument("--new", required=True, help="hostsim binary to compare")
    ap.add_argument("--old-root", default=ROOT, help="the old binary's checkout (its scenarios and profiles)")
    ap.add_argument("--runs", type=int, default=5, help="runs per binary and case (median)")
    ap.add_argument("--cases", nargs="*", help="subset of case names")
    ap.add_argument("--callgrind", action="store_true", help="instruction counts instead of timings")
    ap.add_argument("--json", help="also write the figures to this JSON file")
    a = ap.parse_args()
    cases = [c for c in CASES if not a.cases or c[0] in a.cases]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            name = case[0]
            if a.callgrind:
                row = {}
                for label, binary, root in (("old", a.old, a.old_root), ("new", a.new, ROOT)):
                    cg = os.path.join(tmp, f"cg.{name}.{label}")
                    r = run_case(binary, case, CG_DURATION_MS[name], os.path.join(tmp, label), callgrind=cg, root=root)
                    row[label] = {"instructions": callgrind_total(cg), "events": r["events"], "summary": r["summary"]}
                same = same_results(row["old"]["summary"], row["new"]["summary"])
                ratio = row["old"]["instructions"] / row["new"]["instructions"]
                results[name] = {
                    "old_instructions": row["old"]["instructions"],
                    "new_instructions": row["new"]["instructions"],
                    "ratio": ratio,
                    "duration_ms": CG_DURATION_MS[name],
                    "same_results": same,
                }
                print(
                    f"{name:16} {CG_DURATION_MS[name]:>5} sim ms  old {row['old']['instructions']:>14,} Ir"
                    f"  new {row['new']['instructions']:>14,} Ir  old/new {ratio:5.2f}x"
                    f"  {'same results' if same else 'RESULTS DIFFER'}",
                    flush=True,
                )
                continue
            runs = {"old": [], "new": []}
            for i in range(a.runs):
                order = (("old", a.old, a.old_root), ("new", a.new, ROOT))
                for label, binary, root in order if i % 2 == 0 else order[::-1]:
                    runs[label].append(run_case(binary, case, case[4], os.path.join(tmp, label), root=root))
            med = {
                label: {
                    k: statistics.median(r[k] for r in rs)
                    for k in ("pkt_per_s", "events_per_s", "wall_per_sim_s", "rss_mib")
                }
                for label, rs in runs.items()
            }
            same = same_results(runs["old"][0]["summary"], runs["new"][0]["summary"])
            note = (
                "same results"
                if same
                else ("model change: " + MODEL_CHANGE[name] if name in MODEL_CHANGE else "RESULTS DIFFER")
            )
            results[name] = {
                "old": med["old"],
                "new": med["new"],
                "speedup_pkt_per_s": med["new"]["pkt_per_s"] / med["old"]["pkt_per_s"],
                "sim_ms": case[4],
                "runs": a.runs,
                "same_results": same,
            }
            results[name]["note"] = note
            print(f"\n{name} ({case[4]} simulated ms, median of {a.runs} alternating runs each; {note})")
            print(f"  {'':4} {'pkt/s':>12} {'events/s':>12} {'wall s/sim s':>13} {'peak RSS MiB':>13}")
            for label in ("old", "new"):
                m = med[label]
                print(
                    f"  {label:4} {m['pkt_per_s']:>12,.0f} {m['events_per_s']:>12,.0f} "
                    f"{m['wall_per_sim_s']:>13.3f} {m['rss_mib']:>13.1f}"
                )
            print(f"  new/old packets per wall second: {results[name]['speedup_pkt_per_s']:.2f}x", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
