#!/usr/bin/env python3
"""Move the findings written against one model to another: rewrite `finding_model = "OLD"` as
`finding_model = "NEW"` in scenario files (crates/scenario/src/finding.rs says what the stamp is).

A stamp says "the numbers in this finding and its detail were measured on model OLD". Move it
only when that stays true:
- after a change that keeps every result identical (`scripts/identity_check.sh OLD_BIN NEW_BIN`
  says `same` for everything; e.g. a reorganisation of the sources, which changes the model-source
  hash but not the model), move all of them at once;
- otherwise re-check each stale finding against the new results (the report marks them; `hostsim
  reproduce` then `python -m hostsim.report out`), correct its numbers, and move only those
  (`--claim`).

    python3 scripts/restamp_findings.py --from 2f13bc2843a45ea7            # to the current build's id
    python3 scripts/restamp_findings.py --from OLD --to NEW scenarios/x.toml --claim "004-Q1:"

The current id: `target/release/hostsim --version`.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def current_id(binary: Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"model source ([0-9a-f]{16})", out)
    if not m:
        sys.exit(f"{binary} --version does not print a model-source id: {out.strip()!r}")
    return m.group(1)


def restamp(text: str, old: str, new: str, claim_prefix: str | None) -> tuple[str, int]:
    """The text with the stamps moved (only in the [[expect]] blocks whose claim starts with
    `claim_prefix`, if given), and how many moved."""
    blocks = re.split(r"(?m)^(?=\[)", text)
    n = 0
    for i, b in enumerate(blocks):
        if claim_prefix is not None:
            m = re.search(r'(?m)^claim = "(.*)"$', b)
            if not (b.startswith("[[expect]]") and m and m.group(1).startswith(claim_prefix)):
                continue
        b2, k = re.subn(rf'(?m)^finding_model = "{re.escape(old)}"$', f'finding_model = "{new}"', b)
        blocks[i], n = b2, n + k
    return "".join(blocks), n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="old", required=True, help="the model-source id the findings name now")
    ap.add_argument("--to", dest="new", help="the id to name instead (default: target/release/hostsim --version's)")
    ap.add_argument("--claim", help="only the claims whose text starts with this")
    ap.add_argument("files", nargs="*", type=Path, help="scenario files (default: every scenarios/**/*.toml)")
    a = ap.parse_args()
    new = a.new or current_id(ROOT / "target" / "release" / "hostsim")
    files = a.files or sorted((ROOT / "scenarios").rglob("*.toml"))
    total = 0
    for f in files:
        text = f.read_text(encoding="utf-8")
        out, n = restamp(text, a.old, new, a.claim)
        if n:
            f.write_text(out, encoding="utf-8")
            print(f"{f}: {n} finding(s) moved to {new}")
            total += n
    print(f"{total} moved")
    return 0


if __name__ == "__main__":
    sys.exit(main())
