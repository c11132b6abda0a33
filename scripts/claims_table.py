#!/usr/bin/env python3
"""Tally `expectations.json` per paper: the paper's claims under their primary reading, the
other readings apart, calibration and prediction apart.

    python3 scripts/claims_table.py out/expectations.json [--by-variant tabata-speed] [--list]

A claim's reading is its `claim_id` (shared by the readings of one paper sentence) and
`primary`; a claim without `claim_id` is its own sentence. `--by-variant PAPER` also splits that
paper's claims by the variant named first in the claim text (`fast-slot: ...`), for an unknown of
the system that the scenario runs both ways (paper 002's dispatch rule). `--list` prints every
claim that does not pass.
"""

import argparse
import collections
import json

PAPERS = ["ozaki-pbq", "goda-rfs", "tabata-speed", "takeuchi-symbiose", "kawai-interval"]


def paper_of(scenario):
    return next((p for p in PAPERS if scenario.startswith(p)), scenario)


def count(rows):
    c = collections.Counter(r["verdict"] for r in rows)
    parts = [f"{c['pass']} pass", f"{c['fail']} fail"]
    if c["inconclusive"]:
        parts.append(f"{c['inconclusive']} inconclusive")
    if c["not_applicable"]:
        parts.append(f"{c['not_applicable']} n/a")
    return f"{len(rows)}: " + ", ".join(parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("expectations")
    ap.add_argument("--by-variant", action="append", default=[])
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    res = json.load(open(a.expectations))
    by_paper = collections.defaultdict(list)
    for r in res:
        by_paper[paper_of(r["scenario"])].append(r)
    for paper, rows in by_paper.items():
        print(f"== {paper}")
        for role in ("calibration", "prediction"):
            sel = [r for r in rows if r["role"] == role]
            prim = [r for r in sel if r.get("primary", True)]
            other = [r for r in sel if not r.get("primary", True)]
            line = f"  {role:11s} primary {count(prim)}"
            if other:
                line += f"  | other readings {count(other)}"
            print(line)
            if paper in a.by_variant:
                groups = collections.defaultdict(list)
                for r in prim:
                    groups[r["claim"].split(":", 1)[0].split(",", 1)[0]].append(r)
                for g, gr in sorted(groups.items()):
                    print(f"      {g:22s} {count(gr)}")
        if a.list:
            for r in rows:
                if r["verdict"] != "pass":
                    tag = "" if r.get("primary", True) else " [other reading]"
                    print(f"    {r['verdict']:12s} {r['role'][:4]} {r['claim']}{tag}")


if __name__ == "__main__":
    main()
