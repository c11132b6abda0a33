//! Same scenario and seed → byte-identical summary.json; another seed → different numbers.

use crate::{load, run};
use hostsim_cli::summary_json;

#[test]
fn same_seed_gives_identical_summary_json() {
    for variant in ["legacy", "napi"] {
        let sc = load("scenarios/examples/livelock.toml", &[("traffic.load.rate_pps", "150000"), ("duration_ms", "300")]);
        let cfg = sc.config_with(Some(variant), &[]).unwrap();
        let a = summary_json(&hostsim_host::run(cfg.clone()).summary);
        let b = summary_json(&hostsim_host::run(cfg).summary);
        assert_eq!(a, b, "variant {variant}: two runs with seed {} differ", sc.base_config().seed);
    }
}

#[test]
fn another_seed_gives_other_numbers() {
    let a = run(&load("scenarios/examples/livelock.toml", &[("seed", "1"), ("duration_ms", "300")]));
    let b = run(&load("scenarios/examples/livelock.toml", &[("seed", "2"), ("duration_ms", "300")]));
    assert_ne!(a.packets.offered, b.packets.offered, "Poisson arrivals must depend on the seed");
}

#[test]
fn timeseries_and_trace_are_deterministic_too() {
    let sc = load("scenarios/examples/livelock.toml", &[("traffic.load.rate_pps", "120000"), ("duration_ms", "100"), ("warmup_ms", "0")]);
    let cfg = sc.config_with(Some("legacy"), &[]).unwrap();
    let (a, _, ta) = hostsim_cli::run_traced_json(cfg.clone());
    let (b, _, tb) = hostsim_cli::run_traced_json(cfg.clone());
    assert_eq!(a.timeseries.to_csv(), b.timeseries.to_csv());
    assert_eq!(ta, tb);
    // Tracing never changes the results.
    assert_eq!(summary_json(&a.summary), summary_json(&hostsim_host::run(cfg).summary));
    let trace: serde_json::Value = serde_json::from_str(&ta).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    assert!(events.iter().any(|e| e["cat"] == "hardirq"), "trace shows hard IRQs");
    assert!(events.iter().any(|e| e["name"] == "sink"), "trace shows the sink process");
    assert_eq!(events.iter().filter(|e| e["ph"] == "X").count() as u64, a.trace_slices);
}
