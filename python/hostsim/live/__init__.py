"""The live experiments' analysis: tables of `hostsim live <experiment>` runs, the model beside
them, and the fits of the model twins' calibrated costs to the live baselines.

    python -m hostsim.live ozaki-pbq compare [LIVE.csv ...]      # live vs the twin, point by point
    python -m hostsim.live ozaki-pbq fit [LIVE.csv] [--write]    # the twin's four costs, baseline only
    python -m hostsim.live goda-rfs table LIVE.csv MODEL.csv     # Fig. 2's classes, live and model
    python -m hostsim.live tabata-speed table LIVE.csv [--model MODEL.csv]
    python -m hostsim.live takeuchi-symbiose table LIVE.csv [--markdown]
    python -m hostsim.live kawai-interval table LIVE.csv [--markdown]
    python -m hostsim.live kawai-interval fit [LIVE.csv]         # the twin's three costs, `none` only
    python -m hostsim.live kawai-interval model OUTDIR [RATE]    # paper 004's scenarios at the live load
    python -m hostsim.live points OUT/<live twin>                # the report's live-vs-model tables

One module per paper id (`ozaki_pbq.py`, `goda_rfs.py`, ...), as `crates/live/src/<paper id>/`
is arranged; what they share (reading results.csv, tables, running the model) is `_common.py`.
The tools that run the model take `--hostsim` (default: `$HOSTSIM_BIN`, else the checkout's
`target/release/hostsim`) and read the scenarios of the checkout this package belongs to.
"""
