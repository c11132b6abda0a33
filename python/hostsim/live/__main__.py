"""`python -m hostsim.live <paper id> <tool> ...`: see the package's doc (`hostsim/live/__init__.py`)
and each tool's `--help`."""

from __future__ import annotations

import argparse
import sys

from . import goda_rfs, kawai_interval, ozaki_pbq, points, tabata_speed, takeuchi_symbiose


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m hostsim.live",
        description="The live experiments' analysis: tables, the model beside them, the twins' fits.",
    )
    sub = ap.add_subparsers(dest="paper", required=True, metavar="<paper id> | points")
    for m in (ozaki_pbq, goda_rfs, tabata_speed, takeuchi_symbiose, kawai_interval, points):
        m.add_parser(sub)
    return ap


def main(argv: list[str] | None = None) -> None:
    a = parser().parse_args(argv)
    a.func(a)


if __name__ == "__main__":
    sys.exit(main())
