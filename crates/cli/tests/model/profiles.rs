//! `[profile_set]`: a scenario (or `--set`, a variant, a sweep) overrides machine-profile keys.

use crate::repo;

#[test]
fn profile_set_overrides_a_cost_and_rejects_unknown_keys() {
    let path = repo().join("scenarios/examples/livelock.toml");
    let base = [("traffic.load.rate_pps", "100000"), ("duration_ms", "200"), ("warmup_ms", "0")];
    let load = |extra: &[(&str, &str)]| {
        let sets: Vec<(String, String)> =
            base.iter().chain(extra).map(|(k, v)| (k.to_string(), v.to_string())).collect();
        hostsim_scenario::load(&path, &sets)
    };
    let hardirq = |extra: &[(&str, &str)]| {
        let sc = load(extra).unwrap_or_else(|e| panic!("{e}"));
        let cfg = sc.config_with(Some("legacy"), &[]).unwrap();
        let driver = cfg.profile.costs.driver_rx_frame_ns;
        (driver, hostsim_host::run(cfg).summary.metrics["cpu_hardirq_frac"])
    };
    let (d0, h0) = hardirq(&[]);
    let (d1, h1) = hardirq(&[("profile_set.costs.driver_rx_frame_ns", "4000")]);
    assert_eq!(d1, 4000);
    assert_ne!(d0, d1);
    assert!(h1 > h0, "a dearer driver takes more hard-IRQ time: {h0} -> {h1}");
    let err = load(&[("profile_set.costs.driver_rx_frame_nz", "1")]).unwrap_err().to_string();
    assert!(err.contains("profile_set") && err.contains("driver_rx_frame_nz"), "{err}");
}
