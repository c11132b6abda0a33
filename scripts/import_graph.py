#!/usr/bin/env python3
"""Module dependency graph of each crate's `src/` and its import circles. Exit 1 if there is one.

    python3 scripts/import_graph.py                    # every crate of the workspace (crates/*/src)
    python3 scripts/import_graph.py crates/host/src    # one crate

A module is a file under `src/` (`kernel/sched/core.rs` is `kernel/sched/core`; a folder's `mod.rs`
is the folder). Every `crate::a::b::c` mention is an edge to the longest of `a/b/c`, `a/b`, `a` that
is a module: `use` lines and inline paths alike, test modules included. `crate::kernel::sched::X`
from `kernel/sched/core.rs` is an edge to `kernel/sched` (its `mod.rs`), the folder's header. The
crate root (`lib.rs`, `main.rs`) is left out: it declares every module and re-exports their items.
crates/host/tests/imports.rs checks the same rules in `cargo test`.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def modules(src):
    mods = {}
    for p in sorted(src.rglob("*.rs")):
        rel = p.relative_to(src).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "mod":
            parts = parts[:-1]
        if parts in (["lib"], ["main"]) or not parts or "bin" in parts[:1]:
            continue
        mods["/".join(parts)] = p.read_text()
    return mods


def graph(mods):
    edges = {}
    for m, text in mods.items():
        deps = set()
        for path in re.findall(r"crate((?:::\w+)+)", text):
            segs = path.strip(":").split("::")
            for k in range(len(segs), 0, -1):
                cand = "/".join(segs[:k])
                if cand in mods:
                    if cand != m:
                        deps.add(cand)
                    break
        edges[m] = sorted(deps)
    return edges


def cycles(edges):
    found, seen = [], set()

    def dfs(node, stack):
        for d in edges[node]:
            if d in stack:
                cyc = stack[stack.index(d) :]
                key = frozenset(cyc)
                if key not in seen:
                    seen.add(key)
                    found.append(cyc + [d])
            elif len(stack) < 64:
                dfs(d, stack + [d])

    for m in sorted(edges):
        dfs(m, [m])
    return found


def main(args):
    srcs = [pathlib.Path(a) for a in args] or sorted(ROOT.glob("crates/*/src"))
    status = 0
    for src in srcs:
        edges = graph(modules(src))
        print(f"== {src}: {len(edges)} modules")
        width = max((len(m) for m in edges), default=0)
        for m in sorted(edges):
            print(f"{m:{width}} -> {', '.join(edges[m])}")
        cyc = cycles(edges)
        if cyc:
            status = 1
            print(f"\n{len(cyc)} import circle(s):")
            for c in cyc:
                print("  " + " -> ".join(c))
        else:
            print("no import circle")
        print()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
