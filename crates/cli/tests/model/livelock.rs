//! `scenarios/examples/livelock.toml`: the legacy path's delivered rate rises then collapses
//! (receive livelock) while NAPI holds near its peak. Checked through the scenario's own
//! `[[expect]]` claims, plus the shape of the curve.

use crate::load;

#[test]
fn livelock_emerges_on_legacy_and_not_on_napi() {
    let sc = load("scenarios/examples/livelock.toml", &[]);
    let res = hostsim_cli::sweep(&sc, 2, true).unwrap();
    for r in &res.expectations {
        assert!(r.pass, "claim failed: {} (sim {:?} vs {:?}, {:?})", r.claim, r.sim, r.rhs, r.error);
    }
    assert_eq!(res.expectations.len(), 3);
    let curve = |v: &str| -> Vec<f64> {
        res.rows.iter().filter(|r| r.variant == v).map(|r| r.metrics["delivered_pps"]).collect()
    };
    let legacy = curve("legacy");
    let peak = legacy.iter().cloned().fold(0.0, f64::max);
    let peak_at = legacy.iter().position(|&v| v == peak).unwrap();
    assert!(peak_at > 0 && peak_at < legacy.len() - 1, "legacy peak must be inside the sweep: {legacy:?}");
    // The CPU goes to interrupts: hard-IRQ share grows with load on the legacy path.
    let hardirq: Vec<f64> =
        res.rows.iter().filter(|r| r.variant == "legacy").map(|r| r.metrics["cpu_hardirq_frac"]).collect();
    assert!(hardirq.windows(2).all(|w| w[1] >= w[0] - 1e-9), "hard-IRQ share rises with load: {hardirq:?}");
}
