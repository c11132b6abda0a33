#!/usr/bin/env python3
"""Module dependency graph of a crate's `src/` (every `crate::<module>` mention, `use` lines and
inline paths alike, test modules included) and its import circles. Exit 1 if there is a circle.

    python3 scripts/import_graph.py crates/host/src
"""
import pathlib
import re
import sys

src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "crates/host/src")
mods = {p.stem: p.read_text() for p in src.glob("*.rs") if p.stem not in ("lib", "main")}
edges = {m: sorted({d for d in re.findall(r"crate::(\w+)", t) if d in mods and d != m}) for m, t in mods.items()}
# `use super::*` inside a file's own test module refers to that file: no edge.
cycles, seen = [], set()


def dfs(node, stack):
    for d in edges[node]:
        if d in stack:
            cyc = stack[stack.index(d):]
            key = frozenset(cyc)
            if key not in seen:
                seen.add(key)
                cycles.append(cyc + [d])
        else:
            dfs(d, stack + [d])


for m in sorted(edges):
    dfs(m, [m])
for m in sorted(edges):
    print(f"{m:16} -> {', '.join(edges[m])}")
if cycles:
    print(f"\n{len(cycles)} import circle(s):")
    for c in cycles:
        print("  " + " -> ".join(c))
    sys.exit(1)
print("\nno import circle")
