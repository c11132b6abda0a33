//! Same scenario and seed → byte-identical summary.json; another seed → different numbers.

use crate::{load, run};
use hostsim_cli::summary_json;

#[test]
fn same_seed_gives_identical_summary_json() {
    for variant in ["legacy", "napi"] {
        let sc =
            load("scenarios/examples/livelock.toml", &[("traffic.load.rate_pps", "150000"), ("duration_ms", "300")]);
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
    let sc = load(
        "scenarios/examples/livelock.toml",
        &[("traffic.load.rate_pps", "120000"), ("duration_ms", "100"), ("warmup_ms", "0")],
    );
    let cfg = sc.config_with(Some("legacy"), &[]).unwrap();
    let (a, _, ta) = hostsim_cli::run_traced_json(cfg.clone()).expect("traced run");
    let (b, _, tb) = hostsim_cli::run_traced_json(cfg.clone()).expect("traced run");
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

#[test]
fn with_a_per_boot_rss_key_a_seed_is_a_boot() {
    // Eight constant-rate flows over four MSI-X queues: only the hash decides which CPU's queue
    // takes which flow, so the per-CPU interrupt counts show the flows' placement.
    let text = r#"
profile = "pentium3-xeon-500x4"
duration_ms = 50
[kernel]
rx_path = "napi"
[[nic]]
name = "eth0"
rate_mbps = 1000
queues = 4
irq_routing = "msix"
[[process]]
name = "sink"
program = "udp_sink"
port = 9000
[[traffic]]
name = "load"
kind = "cbr"
nic = "eth0"
dst_port = 9000
rate_pps = 40000
flows = 8
"#;
    let placement = |seed: u64, per_boot: bool| -> Vec<u64> {
        let sets = [("seed", seed.to_string()), ("kernel.rss_key_per_boot", per_boot.to_string())];
        let sets: Vec<(&str, &str)> = sets.iter().map(|(k, v)| (*k, v.as_str())).collect();
        crate::run(&crate::load_text("rsskey", text, &sets)).cpus.iter().map(|c| c.irqs).collect()
    };
    let fixed: Vec<Vec<u64>> = (1..=4).map(|s| placement(s, false)).collect();
    assert!(fixed.windows(2).all(|w| w[0] == w[1]), "a fixed key places flows alike in every run: {fixed:?}");
    let boots: Vec<Vec<u64>> = (1..=4).map(|s| placement(s, true)).collect();
    assert!(boots.windows(2).any(|w| w[0] != w[1]), "per-boot keys must move flows between queues: {boots:?}");
    assert_eq!(placement(3, true), boots[2], "the same seed is the same boot");
}
