#!/usr/bin/env python3
"""Module dependency graph of each crate's `src/`, its import circles and, for the host crate,
the edges that point up its layers. Exit 1 if there is a circle or an upward edge.

    python3 scripts/import_graph.py          # every crate of the workspace (crates/*/src)
    python3 scripts/import_graph.py host     # one crate

The rules and the parser are those of crates/host/tests/imports.rs (which `cargo test` runs):
this prints its ignored test `print_graphs`. A module is a file under `src/` (`kernel/sched/core.rs`
is `kernel/sched/core`; a folder's `mod.rs` is the folder); every path in the parsed source is an
edge to the longest of its prefixes that is a module, whatever its form (`crate::`, `super::`,
`self::`, a child module's path, the branches of a `use` group, paths inside macro calls).
"""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main(args):
    env = dict(os.environ)
    if args:
        env["IMPORT_GRAPH_CRATE"] = args[0].removeprefix("crates/").removesuffix("/src").strip("/")
    cmd = ["cargo", "test", "-q", "-p", "hostsim-host", "--test", "imports", "--", "--ignored", "--nocapture"]
    r = subprocess.run(cmd + ["print_graphs"], cwd=ROOT, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout + r.stderr)
        return r.returncode
    lines = [ln for ln in r.stdout.splitlines() if not ln.startswith(("running ", "test ", "test result"))]
    out = "\n".join(lines).strip()
    print(out)
    return 1 if ("import circle:" in out or "upward edge(s):" in out) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
