"""Live vs model, point by point, as a Markdown table, from a reproduce directory: for each measured
file a twin's figures draw (e.g. `live/takeuchi-symbiose.csv`), every live point (valid repetitions
averaged) with the model's prediction beside it: the same table as the report's under the figures
(`hostsim.report.live_points`, `hostsim.plot.measured_vs_model`). A live run marks a point invalid
(`valid` = 0) when its generator achieved less than 0.98 of the rate; such repetitions are left out
of the means and counted in the `invalid` column (`hostsim.plot.valid_rows`).

    target/release/hostsim reproduce live-takeuchi-symbiose --no-report --out out
    python -m hostsim.live points out/live-takeuchi-symbiose
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser(
        "points", help="a twin's live points beside the model, from a reproduce directory", description=__doc__
    )
    p.add_argument(
        "scenario_dir", type=Path, help="a reproduce output's directory of one scenario (results.csv, scenario.toml)"
    )
    p.set_defaults(func=main)


def fmt(v: float) -> str:
    if v != v:
        return "–"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"


def main(a) -> None:
    import pandas as pd

    from hostsim import report

    d = a.scenario_dir
    df = pd.read_csv(d / "results.csv")
    figures = json.loads(report._native.scenario_info(str((d / "scenario.toml").resolve())))["figures"]
    tables = report.live_points(d, df, figures)
    if not tables:
        sys.exit(f"no measured file beside {d / 'results.csv'}")
    for name, t in tables:
        ys = [c[: -len("_model")] for c in t.columns if c.endswith("_model")]
        key = t.columns[3]
        print(f"{name}: live (mean of its valid repetitions) / model (mean over its seeds, read at the achieved rate)")
        print(
            "| placement | variant | offered | achieved | reps | invalid | "
            + " | ".join(f"{y} live | model" for y in ys)
            + " |"
        )
        print("|" + "---|" * (6 + 2 * len(ys)))
        for r in t.to_dict("records"):
            cells = [
                str(r["placement"] or "–"),
                str(r["measured_variant"]),
                fmt(r[key]),
                fmt(r["measured_x"]),
                str(int(r["reps"])),
                str(int(r["invalid"])),
            ]
            for y in ys:
                cells += [fmt(r[y]), fmt(r[y + "_model"])]
            print("| " + " | ".join(cells) + " |")
