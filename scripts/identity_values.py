#!/usr/bin/env python3
"""After `scripts/identity_check.sh OLD NEW WORKDIR` reports DIFFER: compare the two binaries'
outputs value by value, so that a change which only *adds* outputs (new metrics, a new drop
place, a new scenario) is told apart from one that changes results.

    python3 scripts/identity_values.py WORKDIR

For every file the old binary wrote that differs byte for byte: JSON (summary.json, rows.json,
expectations.json, reproduce.json) and CSV (results.csv, by column name) are compared key by key;
every value the old binary wrote must be equal in the new output, except `finding_stale` (a
finding's stamp names the model it was measured on, so a new model-source id marks it stale until
it is restamped) and `reproduce.json`'s model id and per-experiment fingerprints (which hash the
configuration and the model). A run's run.json (wall time, memory: the machine, not the model)
is skipped, as identity_check.sh skips it. Keys and rows only in the new output (the aggregate
expectations.json's claims of a scenario the old binary does not have) are listed. Exit 1 if any
old value changed.
"""

import csv
import json
import sys
from pathlib import Path

EXPECTED = ("finding_stale", "reproduce.json.model_source_id", ".fingerprint")


def main() -> None:
    work = Path(sys.argv[1])
    old, new = work / "old", work / "new"
    added: set[str] = set()
    changed: list[str] = []
    expected: list[str] = []
    n = 0

    def walk(a, b, where: str) -> None:
        nonlocal n
        if isinstance(a, dict) and isinstance(b, dict):
            added.update(set(b) - set(a))
            for k in a:
                if k not in b:
                    changed.append(f"{where}.{k}: missing in the new output")
                else:
                    walk(a[k], b[k], f"{where}.{k}")
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{where}[{i}]")
        else:
            n += 1
            if a != b and not (isinstance(a, float) and isinstance(b, float) and a != a and b != b):
                line = f"{where}: {a!r} -> {b!r}"
                (expected if any(e in where for e in EXPECTED) else changed).append(line)

    for f in sorted(p for p in old.rglob("*") if p.is_file()):
        g = new / f.relative_to(old)
        rel = str(f.relative_to(old))
        if not g.exists():
            changed.append(f"{rel}: missing in the new output")
            continue
        if f.name == "run.json" or f.read_bytes() == g.read_bytes() or f.suffix not in (".json", ".csv"):
            continue
        if f.suffix == ".csv":
            a, b = list(csv.DictReader(f.open())), list(csv.DictReader(g.open()))
        else:
            a, b = json.loads(f.read_text()), json.loads(g.read_text())
        if f.name == "expectations.json" and isinstance(a, list) and len(b) > len(a):
            scen = {e["scenario"] for e in a}
            extra = {e["scenario"] for e in b if e["scenario"] not in scen}
            added.update(f"claims of {s}" for s in extra)
            b = [e for e in b if e["scenario"] in scen]
        walk(a, b, rel)
    print(
        f"{n} values compared; {len(changed)} changed; {len(expected)} expected differences "
        f"(finding_stale flags, reproduce.json's model id and fingerprints)"
    )
    names = sorted({k for k in added if not k.endswith("_drop_cpumap_pps")})
    print(
        f"only in the new output: {', '.join(names)}"
        + (" (and <source>_drop_cpumap_pps)" if len(names) < len(added) else "")
    )
    for c in changed[:40]:
        print("  CHANGED", c)
    sys.exit(1 if changed else 0)


if __name__ == "__main__":
    main()
