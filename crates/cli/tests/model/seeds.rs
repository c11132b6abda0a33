//! Claims judged over seeds, end to end on the ideal machine: an M/M/1 queue whose server is
//! slightly slower in one variant. Over 12 seeds the per-seed mean waits are noisy, so the
//! unpaired interval of the slower variant overlaps the faster one's; the paired comparison (same
//! seed = same arrivals and work draws) still resolves the difference. Two disjoint seed sets
//! must give every claim the same verdict (the acceptance check `hostsim seedcheck` runs on the
//! paper experiments).

use crate::load_text;
use hostsim_scenario::Verdict;

fn scenario(seed: u64) -> String {
    format!(
        r#"
profile = "ideal-4"
duration_ms = 400
warmup_ms = 50
seed = {seed}
seeds = 12
[[nic]]
name = "eth0"
rate_mbps = 100000
irq_routing = "fixed"
irq_cpus = [0]
[[traffic]]
name = "arrivals"
kind = "poisson"
nic = "eth0"
dst_port = 7
rate_pps = 50000
link_mbps = 100000
[[process]]
name = "srv"
program = "udp_sink"
port = 7
work_ns = 10000
work_dist = "exp"
cpus = [1]
rcvbuf_bytes = 100000000

[[variant]]
name = "fast"
[[variant]]
name = "slow"
set = {{ "process.srv.work_ns" = 10100 }}

[[expect]]
claim = "the slower server is busier (paired: same arrivals and draws per seed)"
metric = "srv_cpu_frac"
variant = "slow"
op = ">"
rhs = {{ metric = "srv_cpu_frac", variant = "fast" }}

[[expect]]
claim = "utilisation is about 50% (rho = 50000/s x 10 us)"
role = "calibration"
metric = "srv_cpu_frac"
variant = "fast"
op = "approx"
value = 0.5
tolerance = 0.05

[[expect]]
claim = "the server is far from saturated"
metric = "srv_cpu_frac"
variant = "slow"
op = "<"
value = 0.9
"#
    )
}

#[test]
fn paired_seeds_resolve_a_small_effect_and_disjoint_seed_sets_agree() {
    let a = load_text("seeds", &scenario(1), &[]);
    let b = load_text("seeds", &scenario(13), &[]);
    let checks = hostsim_cli::seed_check_pair(&a, &b, 2, true, None).unwrap();
    assert_eq!(checks.len(), 3);
    for c in &checks {
        assert!(
            c.same,
            "{}: {:?} on seeds {:?}, {:?} on {:?}",
            c.claim, c.a.verdict, c.seeds_a, c.b.verdict, c.seeds_b
        );
        assert_eq!(c.a.verdict, Verdict::Pass, "{}: {:?} (seeds {:?})", c.claim, c.a, c.seeds_a);
        assert_eq!(c.a.seeds, 12);
    }
    let paired = &checks[0].a;
    let [slo, _] = paired.sim_ci.unwrap();
    let [_, fhi] = paired.rhs_ci.unwrap();
    assert!(slo < fhi, "the unpaired intervals overlap ({slo} < {fhi}): only pairing tells them apart");
    assert!(paired.judged_ci.unwrap()[0] > 0.0, "the paired difference is resolved: {paired:?}");
    assert_eq!(paired.held, Some(1.0));
    // The two sets really are disjoint.
    assert!(checks[0].seeds_a.iter().all(|s| !checks[0].seeds_b.contains(s)));
}
