//! The model against queueing theory, on the ideal machine (zero kernel costs): Poisson arrivals
//! to a UDP socket served by processes with exponential work are M/M/1 and M/M/c queues, so the
//! mean time a packet waits in the socket must match the formulas; and the time-averaged queue
//! length must equal arrival rate × mean wait (Little's law).

use crate::{load_text, process, run};

/// `servers` sink processes, each pinned to its own CPU (1..=servers), share one socket.
fn scenario(servers: usize, lambda_pps: f64, mean_work_ns: u64, seed: u64) -> String {
    let mut s = format!(
        r#"
profile = "ideal-4"
duration_ms = 20000
seed = {seed}
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
rate_pps = {lambda_pps}
link_mbps = 100000
"#
    );
    for i in 1..=servers {
        s.push_str(&format!(
            "[[process]]\nname = \"srv{i}\"\nprogram = \"udp_sink\"\nport = 7\nwork_ns = {mean_work_ns}\nwork_dist = \"exp\"\ncpus = [{i}]\nrcvbuf_bytes = 100000000\n"
        ));
    }
    s
}

/// Erlang C: probability that an arrival waits in an M/M/c queue with offered load a = λ/μ.
fn erlang_c(c: usize, a: f64) -> f64 {
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..c {
        term *= a / k as f64;
        sum += term;
    }
    let last = term * a / c as f64 * (c as f64 / (c as f64 - a));
    last / (sum + last)
}

fn mean_wait_ns(servers: usize, lambda: f64, mean_work_ns: u64, seed: u64) -> (f64, hostsim_host::Summary) {
    let sc = load_text("mmc", &scenario(servers, lambda, mean_work_ns, seed), &[]);
    let s = run(&sc);
    assert_eq!(s.packets.drops.values().sum::<u64>(), 0, "no drops expected (seed {seed})");
    let (mut n, mut total) = (0u64, 0.0);
    for i in 1..=servers {
        let w = process(&s, &format!("srv{i}")).wait_ns.clone().expect("waits recorded");
        n += w.count;
        total += w.mean * w.count as f64;
    }
    (total / n as f64, s)
}

/// Tolerance: at ρ = 0.7 and ~1.4 million arrivals the batch-means standard error of the mean
/// wait is about 1.5%; 5% is over three standard errors.
const TOL: f64 = 0.05;

#[test]
fn mm1_mean_wait_matches_formula() {
    let (lambda, mu) = (70_000.0, 100_000.0);
    let expect_s = (lambda / mu) / (mu - lambda); // Wq = ρ / (μ − λ)
    let (w, _) = mean_wait_ns(1, lambda, 10_000, 11);
    let err = (w * 1e-9 - expect_s).abs() / expect_s;
    assert!(
        err < TOL,
        "M/M/1 Wq {:.3} us vs formula {:.3} us ({:.1}% off, seed 11)",
        w / 1e3,
        expect_s * 1e6,
        err * 100.0
    );
}

#[test]
fn mmc_mean_wait_matches_erlang_c() {
    let (c, mu) = (3usize, 100_000.0);
    let lambda = 0.7 * c as f64 * mu;
    let expect_s = erlang_c(c, lambda / mu) / (c as f64 * mu - lambda);
    let (w, _) = mean_wait_ns(c, lambda, 10_000, 12);
    let err = (w * 1e-9 - expect_s).abs() / expect_s;
    assert!(
        err < TOL,
        "M/M/3 Wq {:.3} us vs Erlang C {:.3} us ({:.1}% off, seed 12)",
        w / 1e3,
        expect_s * 1e6,
        err * 100.0
    );
}

#[test]
fn littles_law_holds_in_the_socket_queue() {
    let (w, s) = mean_wait_ns(2, 150_000.0, 10_000, 13);
    let sock = &s.sockets[0];
    let lambda = sock.enqueued as f64 / (s.sim_time_ns as f64 * 1e-9);
    let l = sock.queue_len_mean;
    let lw = lambda * w * 1e-9;
    assert!((l - lw).abs() / lw < 0.01, "L = {l:.4} but λW = {lw:.4} (seed 13)");
}

#[test]
fn erlang_c_sanity() {
    // c = 1 reduces to ρ.
    assert!((erlang_c(1, 0.7) - 0.7).abs() < 1e-12);
    // A textbook value: c = 2, a = 1 → C = 1/3.
    assert!((erlang_c(2, 1.0) - 1.0 / 3.0).abs() < 1e-12);
}
