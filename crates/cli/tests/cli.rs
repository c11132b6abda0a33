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
    let x: Vec<&serde_json::Value> =
        trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").collect();
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

/// A path always means that file: one that exists but cannot be read is an error naming it and
/// the reason, even when its name is also a built-in scenario's.
#[test]
fn an_unreadable_file_is_never_replaced_by_the_builtin_of_the_same_name() {
    let dir = tmp("shadow");
    std::fs::create_dir_all(dir.join("udp-rtt.toml")).unwrap(); // a directory
    let mut latin1 = std::fs::read(repo().join("scenarios/examples/livelock.toml")).unwrap();
    latin1.splice(0..0, b"# caf\xe9\n".iter().copied()); // one Latin-1 byte in a comment
    std::fs::write(dir.join("livelock.toml"), latin1).unwrap();
    for (file, want) in [
        ("udp-rtt.toml", "it is a directory"),
        ("livelock.toml", "livelock.toml:1: not UTF-8 text: byte 0xE9 at column 6"),
    ] {
        let st = hostsim().args(["check", file]).current_dir(&dir).output().unwrap();
        let err = String::from_utf8_lossy(&st.stderr);
        assert_eq!(st.status.code(), Some(1), "{file}: {err}");
        assert!(err.contains(want), "{file}: {err}");
        let st = hostsim().args(["run", file, "--out", "o"]).current_dir(&dir).output().unwrap();
        assert_eq!(st.status.code(), Some(1), "{file}");
        assert!(!dir.join("o/summary.json").exists(), "{file}: the built-in was run");
    }
    // Only a name that is no file at all means a built-in.
    let st = hostsim().args(["check", "udp-rtt"]).current_dir(&dir).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
}

#[test]
fn out_is_checked_before_anything_runs() {
    let dir = tmp("out-first");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("file"), "").unwrap();
    for cmd in ["run", "sweep"] {
        let t0 = std::time::Instant::now();
        let st = hostsim()
            .args([cmd, "scenarios/examples/livelock.toml", "--out"])
            .arg(dir.join("file/out"))
            .current_dir(repo())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&st.stderr);
        assert_eq!(st.status.code(), Some(1), "{err}");
        assert!(err.contains("cannot create output directory") && err.contains("file/out"), "{err}");
        // Not a speed test: a sweep of livelock takes minutes, a refusal does not.
        assert!(t0.elapsed().as_secs() < 60, "{cmd} ran before checking --out");
    }
}

#[test]
fn sweep_counts_runs_first_and_max_runs_raises_the_limit() {
    let dir = tmp("maxruns");
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(repo().join("scenarios/examples/livelock.toml")).unwrap();
    let values: Vec<String> = (1..=100_000).map(|i| i.to_string()).collect();
    let big = text.replace("[sweep]\n", &format!("[sweep]\n\"kernel.netdev_max_backlog\" = [{}]\n", values.join(", ")));
    std::fs::write(dir.join("big.toml"), big).unwrap();
    let st = hostsim().args(["check", "big.toml"]).current_dir(&dir).output().unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    assert_eq!(st.status.code(), Some(1), "{err}");
    assert!(
        err.contains("key `sweep`")
            && err.contains("= 2_400_000 runs, more than the limit of 10000 (allow more with --max-runs N"),
        "{err}"
    );
    let st = hostsim()
        .args(["check", "--max-runs", "24", "scenarios/examples/livelock.toml"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(st.status.success());
    let st = hostsim()
        .args(["check", "--max-runs", "23", "scenarios/examples/livelock.toml"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(1));
}

#[test]
fn jobs_are_an_error_or_capped_never_a_panic() {
    let out = tmp("jobs");
    let st = hostsim()
        .args(["sweep", "scenarios/examples/udp-rtt.toml", "--jobs", "0", "--out"])
        .arg(&out)
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&st.stderr).contains("--jobs: expected at least 1"));
    let st = hostsim()
        .args([
            "sweep",
            "scenarios/examples/udp-rtt.toml",
            "--jobs",
            "3000",
            "--set",
            "duration_ms=30",
            "--set",
            "warmup_ms=0",
            "--out",
        ])
        .arg(&out)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
}

/// `[metrics]` aliases cannot replace a model metric or name one the run lacks (issue 15: they
/// silently made `cpu_util` 1000 or produced null columns).
#[test]
fn metric_aliases_that_replace_or_dangle_are_errors() {
    let base = std::fs::read_to_string(repo().join("crates/scenario/tests/good/minimal.toml")).unwrap();
    for (alias, from, want) in [
        ("cpu_util", "delivered_pps", "one of the model's own metrics"),
        ("throughput", "no_such_metric", "no metric named `no_such_metric`"),
    ] {
        let dir = tmp(&format!("alias-{alias}"));
        std::fs::create_dir_all(&dir).unwrap();
        let text = base.replace("[sweep]", &format!("[metrics]\n{alias} = \"{from}\"\n\n[sweep]"));
        let file = dir.join("s.toml");
        std::fs::write(&file, text).unwrap();
        let st = hostsim()
            .args(["run"])
            .arg(&file)
            .args(["--set", "duration_ms=20", "--set", "warmup_ms=5", "--out"])
            .arg(dir.join("out"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&st.stderr);
        assert_eq!(st.status.code(), Some(1), "{alias}: {err}");
        assert!(err.contains(want) && err.contains(&format!("metrics.{alias}")), "{alias}: {err}");
        assert!(!dir.join("out/summary.json").exists(), "{alias}: numbers written");
    }
}

/// A process with instances reports its CPU share per instance (a fraction of one CPU) and the
/// sum in CPUs separately.
#[test]
fn cpu_frac_of_a_process_with_instances_is_a_fraction() {
    let out = tmp("cpufrac");
    let st = hostsim()
        .args([
            "run",
            "scenarios/ozaki-pbq-throughput.toml",
            "--set",
            "duration_ms=200",
            "--set",
            "warmup_ms=50",
            "--out",
        ])
        .arg(&out)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let m = s["metrics"].as_object().unwrap();
    let mut seen = 0;
    for (k, v) in m {
        if let Some(name) = k.strip_suffix("_cpu_frac") {
            let f = v.as_f64().unwrap();
            assert!((0.0..=1.0).contains(&f), "{k} = {f}");
            if let Some(sum) = m.get(&format!("{name}_cpus")) {
                seen += 1;
                assert!(sum.as_f64().unwrap() >= f, "{name}_cpus below its per-instance mean");
            }
        }
    }
    assert!(seen > 0, "no process with instances reported <name>_cpus");
}
