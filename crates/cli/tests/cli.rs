//! The `hostsim` binary end to end: outputs, CSV shape, exit codes, messages.

use std::path::{Path, PathBuf};
use std::process::Command;

fn hostsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hostsim"))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hostsim-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn run_writes_summary_run_timeseries_and_trace() {
    let out = tmp("run");
    let st = hostsim()
        .args(["run", "scenarios/examples/livelock.toml", "--seed", "3", "--set", "traffic.load.rate_pps=50000"])
        .args(["--set", "duration_ms=200", "--variant", "napi", "--trace", "--out"])
        .arg(&out)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    for key in ["sim_time_ns", "cpus", "processes", "packets", "migrations", "cache", "metrics"] {
        assert!(summary.get(key).is_some(), "summary.json lacks {key}");
    }
    assert_eq!(summary["sim_time_ns"], 200_000_000u64);
    for key in ["hardirq_ns", "softirq_ns", "system_ns", "user_ns", "spin_ns", "idle_ns"] {
        assert!(summary["cpus"][0].get(key).is_some(), "cpus[] lacks {key}");
    }
    for key in ["nic_ring", "backlog", "socket"] {
        assert!(summary["packets"]["drops"].get(key).is_some(), "drops lacks {key}");
    }
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    for key in ["wall_s", "events", "events_per_s", "peak_rss_bytes", "seed", "version"] {
        assert!(run.get(key).is_some(), "run.json lacks {key}");
    }
    assert_eq!(run["seed"], 3);
    let ts = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    assert!(ts.starts_with("time_ms,offered_pps,delivered_pps"));
    assert_eq!(ts.lines().count(), 1 + 20, "10 ms samples over 200 ms");
    // The trace is Perfetto protobuf, streamed; run.json says how many slices it holds.
    let trace = std::fs::read(out.join("trace.perfetto-trace")).unwrap();
    assert_eq!(run["trace_file"], "trace.perfetto-trace");
    let slices = run["trace_slices"].as_u64().unwrap();
    assert!(slices > 100 && trace.len() as u64 > 20 * slices, "{slices} slices in {} bytes", trace.len());
}

#[test]
fn trace_window_and_json_format() {
    let out = tmp("trace-window");
    let st = hostsim()
        .args(["run", "scenarios/examples/livelock.toml", "--set", "traffic.load.rate_pps=50000"])
        .args(["--set", "duration_ms=200", "--variant", "legacy", "--trace-format", "json"])
        .args(["--trace-from", "50", "--trace-to", "60", "--out"])
        .arg(&out)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let trace: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("trace.json")).unwrap()).unwrap();
    let x: Vec<&serde_json::Value> = trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").collect();
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["trace_slices"].as_u64().unwrap(), x.len() as u64);
    assert!(x.len() > 100);
    for e in &x {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(ts >= 50_000.0 && ts + dur <= 60_000.0 + 1e-6, "slice {e} outside the 50-60 ms window");
    }
    let bad = hostsim()
        .args(["run", "scenarios/examples/livelock.toml", "--trace-from", "60", "--trace-to", "50", "--out"])
        .arg(tmp("trace-window-bad"))
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--trace-from must be earlier than --trace-to"));
}

#[test]
fn sweep_writes_results_csv_with_variant_key_and_metric_columns() {
    let out = tmp("sweep");
    let st = hostsim()
        .args(["sweep", "scenarios/examples/udp-rtt.toml", "--jobs", "2", "--set", "duration_ms=300", "--out"])
        .arg(&out)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    assert!(!String::from_utf8_lossy(&st.stderr).contains('\u{1b}'), "no progress bar when piped");
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert_eq!(&header[..2], ["variant", "traffic.load.rate_pps"]);
    for m in ["rtt_us_mean", "delivered_pps", "echo_rx_pps", "cpu_util"] {
        assert!(header.contains(&m), "results.csv lacks {m}");
    }
    assert_eq!(csv.lines().count(), 1 + 4);
    let ej: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("expectations.json")).unwrap()).unwrap();
    assert!(ej.as_array().unwrap().is_empty());
}

#[test]
fn check_reports_file_line_key_and_exits_1() {
    let dir = tmp("check");
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "profile = \"ideal-4\"\nduration_ms = 100\n[kernel]\nrx_path = \"fast\"\n").unwrap();
    let st = hostsim().arg("check").arg(&bad).output().unwrap();
    assert_eq!(st.status.code(), Some(1));
    let err = String::from_utf8_lossy(&st.stderr);
    assert!(err.contains("bad.toml:4"), "{err}");
    assert!(err.contains("kernel.rx_path"), "{err}");
    assert!(err.contains("legacy") && err.contains("napi"), "names what was expected: {err}");
    let good = hostsim().args(["check", "scenarios/examples/livelock.toml"]).current_dir(repo()).output().unwrap();
    assert!(good.status.success());
    assert!(String::from_utf8_lossy(&good.stdout).contains("24 runs"));
}

#[test]
fn bad_set_and_missing_file_are_errors_not_panics() {
    let st = hostsim().args(["run", "no/such/file.toml", "--out", "/tmp/x"]).output().unwrap();
    assert_eq!(st.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&st.stderr).contains("cannot read scenario"));
    let st = hostsim()
        .args(["run", "scenarios/examples/livelock.toml", "--set", "process.nobody.nice=3", "--out", "/tmp/x"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&st.stderr).contains("nobody"));
}

#[test]
fn scenarios_lists_builtins_with_descriptions() {
    let st = hostsim().arg("scenarios").output().unwrap();
    let out = String::from_utf8_lossy(&st.stdout);
    assert!(out.contains("examples/livelock") && out.contains("receive livelock"), "{out}");
}

#[test]
fn builtin_scenarios_run_by_name_from_any_directory() {
    let out = tmp("byname");
    let st = hostsim()
        .args(["run", "livelock", "--set", "duration_ms=50", "--set", "warmup_ms=0", "--out"])
        .arg(&out)
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
}

#[test]
fn bench_quick_prints_json_cases() {
    let st = hostsim().args(["bench", "--quick", "--json"]).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 13);
    assert!(cases.iter().any(|c| c["name"] == "tcp-send-100m"), "the host-sending TCP case");
    assert!(cases.iter().any(|c| c["name"] == "forward-2cpu-148k"));
    assert!(cases.iter().any(|c| c["name"] == "accel-7000-2000rps"), "paper 004's accelerator case");
    for c in cases {
        for k in ["name", "pps", "packets_per_s", "events_per_s", "wall_s_per_sim_s", "peak_rss_bytes"] {
            assert!(c.get(k).is_some(), "bench case lacks {k}");
        }
    }
}
