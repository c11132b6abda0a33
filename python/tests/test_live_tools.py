"""`python -m hostsim.live`: each paper's live analysis tools, on the live results committed under
scenarios/live/ (their numbers recomputed here from the CSV, independently of the tools), and the
fits on a model whose answer is known (a stand-in for `hostsim run` whose CPU times are linear in
the fitted costs), so that a fit that does not converge fails."""

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hostsim.live import __main__ as live_main
from hostsim.live import _common, goda_rfs, kawai_interval, ozaki_pbq, takeuchi_symbiose

ROOT = Path(__file__).resolve().parents[2]
LIVE = ROOT / "scenarios" / "live"


def run_tool(*args: str) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "hostsim.live", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, f"python -m hostsim.live {args}: {r.stderr}"
    return r.stdout


def csv_rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def md_rows(text: str) -> list[list[str]]:
    """The body rows of the first Markdown table in `text`."""
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[2:]]


def test_every_paper_id_has_its_tools():
    help_text = live_main.parser().format_help()
    for pid in ("ozaki-pbq", "goda-rfs", "tabata-speed", "takeuchi-symbiose", "kawai-interval", "points"):
        assert pid in help_text, pid
    # The live command's own name for paper 001 reaches the same tools.
    a = live_main.parser().parse_args(["goda-wakeups", "table", "l.csv", "m.csv"])
    assert a.func is goda_rfs.table_main
    with pytest.raises(SystemExit):
        live_main.parser().parse_args(["nosuch-paper", "table"])


def test_kawai_interval_table_is_the_mean_and_range_of_the_repetitions():
    path = LIVE / "kawai-interval.csv"
    out = run_tool("kawai-interval", "table", str(path), "--markdown")
    body = md_rows(out)
    rs = csv_rows(path)
    pairs = {(r["variant"], float(r[kawai_interval.KEY])) for r in rs}
    assert len(body) == len(pairs)
    row = next(b for b in body if b[0] == "static-20" and b[1] == "6000")
    g = [r for r in rs if r["variant"] == "static-20" and float(r[kawai_interval.KEY]) == 6000]
    done = [float(r["clients_completed_rps"]) for r in g]
    assert row[2] == str(len(g))
    assert row[4] == f"{sum(done) / len(done):.0f} [{min(done):.0f}-{max(done):.0f}]"


def test_takeuchi_symbiose_table_averages_the_valid_repetitions_only():
    path = LIVE / "takeuchi-symbiose.csv"
    head, body = takeuchi_symbiose.summary(_common.rows(path))
    rs = csv_rows(path)
    assert len(body) == len({(r["variant"], r[takeuchi_symbiose.KEY]) for r in rs})
    for b in body:
        g = [
            r for r in rs if r["variant"] == b[0] and float(r[takeuchi_symbiose.KEY]) == float(b[head.index("offered")])
        ]
        ok = [r for r in g if r["valid"] == "1"]
        assert (int(b[1]), int(b[2])) == (len(ok), len(g) - len(ok))
        use = ok or g
        assert b[head.index("out")] == f"{sum(float(r['out_rx_pps']) for r in use) / len(use):.0f}"
    out = run_tool("takeuchi-symbiose", "table", str(path))
    assert out.splitlines()[0].split() == [h for h in " ".join(head).split()]


def test_goda_rfs_table_puts_live_and_model_side_by_side():
    live, model = LIVE / "goda-wakeups.csv", LIVE / "goda-wakeups-model.csv"
    head, body = goda_rfs.summary(live, model)
    lr = csv_rows(live)
    flows = sorted({int(r["process.reader.instances"]) for r in lr})
    assert [b[0] for b in body[::2]] == [str(n) for n in flows]
    one = [r for r in lr if r["process.reader.instances"] == "1"]
    w = [float(r["wakeups_per_s"]) for r in one]
    assert body[0][1] == f"live ({len(one)})"
    assert body[0][2] == f"{sum(w) / len(w):,.0f} [{min(w):,.0f}-{max(w):,.0f}]"
    # The model's balancer migrations are its two causes summed (the tracepoint cannot tell them apart).
    mr = [r for r in csv_rows(model) if r["variant"] == "flows-1"]
    bal = [float(r["migrations_load_balance_per_s"]) + float(r["migrations_idle_balance_per_s"]) for r in mr]
    col = head.index("balancer /s")
    assert body[1][1].startswith("model") and body[1][col] == f"{sum(bal) / len(bal):,.0f}"
    assert md_rows(run_tool("goda-rfs", "table", str(live), str(model))) == body


def test_tabata_speed_tables_relate_each_speed_to_the_regulated_and_unregulated_sender():
    out = run_tool("tabata-speed", "table", str(LIVE / "tabata-speed.csv"))
    assert out.count("## ") == 4, "Fig. 1, Figs. 2-3, Table 1 and the regulator's accuracy"
    fig1 = md_rows(out.split("## Figs. 2-3")[0])
    full = [b for b in fig1 if b[1] == "regulated" and b[2] == "100"]
    assert full and all(b[4] == "1.000" for b in full), "the regulated sender at 100 % is its own reference"
    off = [b for b in fig1 if b[1] == "off"]
    assert off and all(b[5] == "1.000" for b in off)
    rs = [r for r in csv_rows(LIVE / "tabata-speed.csv") if r["variant"] == "regulated"]
    at = {(r["process.sender.unit_bytes"], r["process.sender.speed_pct"]) for r in rs}
    assert len([b for b in fig1 if b[1] == "regulated"]) == len(at)


def test_ozaki_pbq_live_points_leave_invalid_repetitions_out_and_count_them():
    path = LIVE / "ozaki-pbq-batch32.csv"
    live, none_valid = ozaki_pbq.live_points([path])
    rs = csv_rows(path)
    for (placement, variant, rate), m in live.items():
        g = [
            r
            for r in rs
            if (r.get("placement") or "rps") == placement
            and r["variant"] == variant
            and float(r[ozaki_pbq.KEY]) == rate
        ]
        ok = [r for r in g if r["valid"] != "0"]
        assert (m["reps"], m["invalid"]) == (len(ok), len(g) - len(ok))
        assert math.isclose(m["bw_loss"], sum(float(r["bw_loss_frac"]) for r in ok) / len(ok))
    for k, n in none_valid.items():
        assert k not in live and n > 0


def test_ozaki_pbq_compare_runs_the_twin_at_the_achieved_rates(hostsim_bin, tmp_path):
    # One valid point of the committed sweep, so that one model run answers it.
    rs = csv_rows(LIVE / "ozaki-pbq-batch32.csv")
    r = next(
        r
        for r in rs
        if r["placement"] == "rps" and r["variant"] == "off" and r["valid"] == "1" and r[ozaki_pbq.KEY] == "400000"
    )
    one = tmp_path / "one.csv"
    with open(one, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(r))
        w.writeheader()
        w.writerow(r)
    numbers = tmp_path / "numbers.csv"
    out = run_tool(
        "ozaki-pbq", "compare", str(one), "--hostsim", str(hostsim_bin), "--seeds", "1", "--csv", str(numbers)
    )
    body = md_rows(out.split("\n", 1)[1])
    assert len(body) == 1 and body[0][:2] == ["rps", "off"]
    assert body[0][3] == f"{float(r['floodclients_sent_pps']):,.0f}", "the flood the live generator achieved"
    got = csv_rows(numbers)[0]
    assert float(got["bw_rx_pps_live"]) == pytest.approx(float(r["bw_rx_pps"]))
    # The model's bw at the achieved rates, as `hostsim run` of the twin gives it.
    m = _common.run_model(
        str(hostsim_bin),
        ROOT / ozaki_pbq.SCENARIO,
        "rps-off",
        1,
        {
            ozaki_pbq.KEY: f"{float(r['floodclients_sent_pps']):.0f}",
            "traffic.bwclient.rate_pps": f"{float(r['bwclient_sent_pps']):.0f}",
        },
    )
    assert float(got["bw_rx_pps_model"]) == pytest.approx(m["metrics"]["bw_rx_pps"])


def linear_model(costs_of):
    """A stand-in for `hostsim run` (`_common.run_model`) whose summary's per-packet CPU times are
    `costs_of(sets)`: the fits must find the costs that give the live targets."""

    def run(hostsim, scenario, variant, seed, sets):
        c1, c0, procs = costs_of(sets)
        pps = 1e5
        t = 1e9
        return {
            "sim_time_ns": t,
            "metrics": {"offered_pps": pps, "drop_nic_ring_pps": 0.0, "delivered_pps": pps, "drop_socket_pps": 0.0},
            "cpus": [{"softirq_ns": c0 * pps, "hardirq_ns": 0.0}, {"softirq_ns": c1 * pps, "hardirq_ns": 0.0}],
            "processes": [{"cpu_ns": procs * pps, "kernel_thread": False}],
        }

    return run


def test_ozaki_pbq_fit_finds_the_costs_that_give_the_live_baseline(monkeypatch, tmp_path, capsys):
    targets = ozaki_pbq.live_targets(LIVE / "ozaki-pbq-batch32.csv", "rps", 100000)
    assert len(targets) >= 4 and all(t["cpu1_softirq"] > 0 for t in targets.values())
    # A cost constant over the points minimises the sum of squared relative gaps at
    # sum(1/t) / sum(1/t^2) (the derivative of sum((m - t)^2 / t^2) in m).
    want = {
        k: sum(1 / t[k] for t in targets.values()) / sum(1 / t[k] ** 2 for t in targets.values())
        for k in ozaki_pbq.TARGETS
    }

    def costs(sets):
        g = {k.rsplit(".", 1)[1]: float(v) for k, v in sets.items() if k.startswith("profile_set.")}
        return g["driver_rx_frame_ns"], g["ip_udp_rx_ns"] + g["ipi_ns"] / 4, g["recv_ns"]

    monkeypatch.setattr(ozaki_pbq, "run_model", linear_model(costs))
    overlay = tmp_path / "overlay.toml"
    ozaki_pbq.fit(
        live_main.parser().parse_args(
            [
                "ozaki-pbq",
                "fit",
                str(LIVE / "ozaki-pbq-batch32.csv"),
                "--write",
                "--overlay",
                str(overlay),
                "--maxfev",
                "400",
            ]
        )
    )
    out = capsys.readouterr().out
    values = json.loads(out.strip().splitlines()[-1])
    assert values["driver_rx_frame_ns"] == pytest.approx(want["cpu1_softirq"], abs=60)
    assert values["recv_ns"] == pytest.approx(want["procs"], abs=60)
    text = overlay.read_text()
    assert "[values]" in text and 'command = ".venv/bin/python -m hostsim.live ozaki-pbq fit --write"' in text
    assert "objective_after" in text


def test_kawai_interval_fit_converges_on_a_linear_model(monkeypatch, capsys):
    live = kawai_interval.live_targets(LIVE / "kawai-interval.csv", {2000.0, 6000.0, 10000.0})
    assert sorted(live) == [2000.0, 6000.0, 10000.0]
    want = {s: sum(t[s] for t in live.values()) / len(live) for s in kawai_interval.STATES}

    def run(hostsim, scenario, variant, seed, sets):
        assert variant == "none"
        rate = float(sets[kawai_interval.KEY])
        share = {name: float(sets[key]) * rate * 1e-9 for name, (key, _, _) in kawai_interval.PARAMS.items()}
        return {
            "metrics": {
                "cpu_softirq_frac": share["tcp_rx_ns"],
                "cpu_hardirq_frac": 0.0,
                "cpu_system_frac": share["request_kernel_ns"],
                "cpu_user_frac": share["request_ns"],
            }
        }

    monkeypatch.setattr(kawai_interval, "run_model", run)
    kawai_interval.fit(live_main.parser().parse_args(["kawai-interval", "fit", "--seeds", "1", "--iters", "3"]))
    out = capsys.readouterr().out
    means = out.split("means: ", 1)[1]
    for s in kawai_interval.STATES:
        model, live_v = (float(x) for x in means.split(f"{s} ", 1)[1].split(";")[0].split(" vs "))
        assert model == pytest.approx(want[s], rel=0.02), (s, out)
        assert live_v == pytest.approx(want[s], rel=1e-3)


def test_kawai_interval_model_writes_one_row_per_sleep_and_variant(monkeypatch, tmp_path):
    seen = []

    def run(hostsim, scenario, variant, seed, sets):
        seen.append((Path(scenario).name, variant, seed, dict(sets)))
        return {"metrics": {k: float(seed) for k in kawai_interval.MODEL_KEYS}}

    monkeypatch.setattr(kawai_interval, "run_model", run)
    kawai_interval.model_main(live_main.parser().parse_args(["kawai-interval", "model", str(tmp_path), "3000"]))
    rows = csv_rows(tmp_path / "model.csv")
    assert [(r["sleep"], r["variant"]) for r in rows] == [
        (s, v) for s in ("hr", "tick") for v in kawai_interval.MODEL_VARIANTS
    ]
    assert all(r["seeds"] == "2" and float(r["cpu_util"]) == 1.5 for r in rows), "the mean of seeds 1 and 2"
    hr = [x for x in seen if x[3].get("kernel.hz") == 250]
    assert len(hr) == len(seen) // 2 and all(x[3]["kernel.timer_tick_sleep"] == "false" for x in hr)
    assert all(x[3][kawai_interval.KEY] == "3000" and x[3]["traffic.clients.http.conns"] == 6000 for x in seen)
    assert {x[0] for x in seen if "dynamic" in x[1]} == {"kawai-interval-dynamic.toml"}


def test_goda_rfs_variants_and_trains_summarise_the_committed_runs():
    """The RFS off / on / one-segment-per-skb run (`--variants linux,rfs,per-segment`) and its
    per-flow segment trains: one row per (flow count, variant), each cell the mean over the rows
    with their range, recomputed here from the CSVs."""
    live, trains = LIVE / "goda-wakeups-variants.csv", LIVE / "goda-wakeups-trains.csv"
    head, body = goda_rfs.variants_summary(live)
    lr = csv_rows(live)
    assert len(body) == len({(r["variant"], r["process.reader.instances"]) for r in lr})
    for b in body:
        rs = [r for r in lr if r["variant"] == b[1] and r["process.reader.instances"] == b[0]]
        assert b[2] == str(len(rs))
        w = [float(r["wakeups_per_s"]) for r in rs]
        assert b[head.index("wake-ups/s")] == f"{sum(w) / len(w):,.0f} [{min(w):,.0f}-{max(w):,.0f}]"
    head, body = goda_rfs.trains_summary(trains)
    tr = csv_rows(trains)
    col = head.index("wake-ups/skb")
    for b in body:
        rs = [r for r in tr if r["variant"] == b[1] and r["process.reader.instances"] == b[0]]
        assert b[2] == str(len(rs)), "one row per flow and repetition"
        ratio = [float(r["reader_wakeups_per_s"]) / float(r["emits_per_s"]) for r in rs]
        assert b[col].startswith(f"{sum(ratio) / len(ratio):.2f}")
        if b[1] == "per-segment":
            assert b[head.index("segs/skb")].startswith("1.0"), "gso_max_segs 1: one segment per skb"
    assert md_rows(run_tool("goda-rfs", "trains", str(trains))) == body
