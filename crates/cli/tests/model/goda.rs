//! goda-rfs (paper 001): the built-in scenario, cut short. Linux's placement makes unintended
//! (ping-pong) migrations under RFS; the proposal makes none; RFS never
//! reorders a flow under either; the migration classes partition the migrations.

use crate::load;
use hostsim_host::Summary;

/// One second measured: what the test asserts on is rare in this model (ping-pongs ~9/s, moves
/// the no-reorder rule defers a few a second: seed 1, issue 26's fixes), so the 300 ms measured
/// before held a handful of each, and none of one after the TCP fixes of issue 26 (seed 1).
fn run(variant: &str) -> Summary {
    let sc = load("scenarios/goda-rfs-migrations.toml", &[("duration_ms", "1100"), ("warmup_ms", "100")]);
    hostsim_host::run(sc.config_with(Some(variant), &[]).unwrap()).summary
}

fn check_classes(s: &Summary, what: &str) {
    let m = &s.metrics;
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(1.0);
    let wake = m["migrations_wakeup_per_s"];
    let parts = m["migrations_wakeup_affine_per_s"] + m["migrations_wakeup_other_per_s"];
    assert!(close(wake, parts), "{what}: wake-up migrations {wake}/s, classes sum to {parts}/s (seed 1)");
    let all = m["migrations_wakeup_per_s"] + m["migrations_load_balance_per_s"] + m["migrations_idle_balance_per_s"];
    assert!(close(m["migrations_per_s"], all), "{what}: causes don't sum to all migrations (seed 1)");
    assert!(
        m["migrations_unintended_per_s"] <= m["migrations_wakeup_affine_per_s"],
        "{what}: unintended is a kind of affine pull"
    );
    assert_eq!(s.packets.reordered, 0, "{what}: RFS reordered a flow (seed 1)");
}

#[test]
fn linux_ping_pongs_the_proposal_does_not() {
    let (e, p) = (run("existing"), run("proposed"));
    check_classes(&e, "existing");
    check_classes(&p, "proposed");
    assert!(e.metrics["migrations_unintended_per_s"] > 0.0, "Linux 3.2 should ping-pong under RFS (seed 1)");
    assert!(e.metrics["settle_episodes"] > 0.0 && e.metrics["settle_mean"] >= 1.0);
    assert_eq!(p.metrics["migrations_unintended_per_s"], 0.0, "the proposal forbids the swap (seed 1)");
    // Whether the proposal lowers the total is the paper's prediction (-48%), judged over 10 seeds
    // by `hostsim reproduce goda`, not asserted here: with the 82599's EITR throttle the model's
    // migrations are nearly all first moves to idle cores, which the proposal does not touch
    // (seed 1 of this 1 s run migrates 2.4% more with the proposal).
    assert!(e.packets.rfs_moves_deferred > 0, "the no-reorder rule must have held flows back (seed 1)");
}
