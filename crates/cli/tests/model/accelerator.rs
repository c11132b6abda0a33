//! Paper 004's event-driven accelerator and the kernel semantics its result hinges on, end to
//! end: a SCHED_FIFO thread that yields lets only equal-priority FIFO threads run; static interval
//! control sleeps `cycle − elapsed` rounded as Linux 2.4/2.5 `sys_nanosleep` rounds (whole
//! jiffies + 1 from the current jiffy); thousands of persistent connections stay open with no
//! leak (opened = closed + open).

use crate::{load, load_text, process, run};
use hostsim_host::Summary;

fn metric(s: &Summary, k: &str) -> f64 {
    *s.metrics.get(k).unwrap_or_else(|| panic!("no metric {k}"))
}

/// `sched_yield()` at SCHED_FIFO (2.5 `sys_sched_yield`: to the tail of the task's priority
/// list) lets only other runnable FIFO tasks of that priority run: a lower FIFO priority and a
/// SCHED_OTHER task on the same CPU get nothing while two equal-priority FIFO yielders alternate.
#[test]
fn a_fifo_thread_that_yields_lets_only_equal_priority_fifo_threads_run() {
    let mk = |name: &str, extra: &str| {
        format!("[[process]]\nname = \"{name}\"\nprogram = \"yielder\"\nwork_ns = 200000\ncpus = [0]\n{extra}\n")
    };
    let text = format!(
        "profile = \"ideal-4\"\nduration_ms = 1000\n{}{}{}{}",
        mk("a", "sched = \"fifo\"\nrt_priority = 20"),
        mk("b", "sched = \"fifo\"\nrt_priority = 20"),
        mk("low", "sched = \"fifo\"\nrt_priority = 10"),
        mk("other", ""),
    );
    let s = run(&load_text("fifo-yield", &text, &[]));
    let cpu = |n: &str| process(&s, n).cpu_ns as f64;
    assert!(
        cpu("low") < 1e6 && cpu("other") < 1e6,
        "yield must not let lower tasks run: low {} other {}",
        cpu("low"),
        cpu("other")
    );
    let (a, b) = (cpu("a"), cpu("b"));
    assert!((a - b).abs() / (a + b) < 0.01, "equal FIFO priorities alternate: a {a} b {b}");
    assert!(a + b > 0.99e9, "the two FIFO yielders have the CPU: {}", a + b);
}

/// A small accelerator at light load (seed 1): the scenario file with fewer connections.
fn light(control: &str, cycle_ms: &str, hz: &str) -> Summary {
    let sc = load(
        "scenarios/kawai-interval-static.toml",
        &[
            ("process.chamomile.accelerator.interval_control", control),
            ("process.chamomile.accelerator.min_cycle_ms", cycle_ms),
            ("kernel.hz", hz),
            ("traffic.clients.http.conns", "300"),
            ("process.chamomile.accelerator.origin_conns", "50"),
            ("traffic.clients.http.rate_rps", "100"),
            ("duration_ms", "2500"),
            ("warmup_ms", "1500"),
        ],
    );
    run(&sc)
}

/// Static control: `stime = cycle − ptime` with ptime of a few hundred µs, and 2.4/2.5's
/// `expire = jiffies + timespec_to_jiffies(stime) + 1` (rounded up) from the current jiffy:
/// at HZ = 100 a 10 ms cycle sleeps to the second jiffy boundary after the loop's start, so the
/// real cycle is 20 ms (50 loops/s), 20 ms gives 30 ms and 30 ms gives 40 ms; at HZ = 1000 the
/// cycle is the requested one + 1 ms (the `+1`) rounded to the jiffy.
#[test]
fn static_control_sleeps_the_rest_of_the_cycle_rounded_as_the_kernel_rounds() {
    for (cycle, hz, want_loops) in
        [("10", "100", 50.0), ("20", "100", 1000.0 / 30.0), ("30", "100", 25.0), ("10", "1000", 1000.0 / 11.0)]
    {
        let s = light("static", cycle, hz);
        let loops = metric(&s, "chamomile_io_loops_per_s");
        assert!(
            (loops - want_loops).abs() <= 1.0,
            "static {cycle} ms at HZ {hz}: {loops} loops/s, want {want_loops:.1}"
        );
        let sleeps = metric(&s, "chamomile_io_sleeps_per_s");
        assert!((sleeps - loops).abs() <= 1.0, "every short loop sleeps: {sleeps} sleeps/s vs {loops} loops/s");
    }
}

/// About 7,000 persistent connections (6,500 clients + 500 to the origins) over a long run with
/// connections closed and re-opened all the time (zipf(16) requests each): every connection
/// the accelerator accepted is either closed or still open, and the clients see the same count.
#[test]
fn seven_thousand_connections_held_open_with_no_leak() {
    let sc = load(
        "scenarios/kawai-interval-static.toml",
        &[
            ("process.chamomile.accelerator.interval_control", "static"),
            ("process.chamomile.accelerator.min_cycle_ms", "20"),
            ("traffic.clients.http.rate_rps", "2000"),
            ("duration_ms", "8000"),
            ("warmup_ms", "1"),
        ],
    );
    let s = run(&sc);
    let window = (s.sim_time_ns - s.measure_from_ns) as f64 * 1e-9;
    let total = |k: &str| (metric(&s, k) * window).round();
    let (accepted, closed) = (total("chamomile_accepted_per_s"), total("chamomile_closed_per_s"));
    let open_clients = metric(&s, "clients_conns_open");
    let live = metric(&s, "chamomile_conns");
    assert!(accepted > 6500.0 + 1000.0, "connections were replaced during the run: {accepted} accepted");
    // The accelerator's live sockets: accepted and not closed, plus its 500 origin connections.
    assert_eq!(accepted - closed + 500.0, live, "opened {accepted} != closed {closed} + open {live} - 500 origin");
    // A connection the clients count as open but the server closed (or the reverse) is in
    // the middle of its FIN exchange: at most a handful.
    assert!(
        (open_clients - (accepted - closed)).abs() <= 50.0,
        "clients hold {open_clients}, the server {}",
        accepted - closed
    );
    assert!((live - 7000.0).abs() / 7000.0 < 0.1, "about 7,000 sockets: {live}");
    // No request silently lost: every one offered (all after the 1 ms warm-up) was completed, is
    // outstanding, or was refused for want of an idle connection.
    let (offered, completed, refused) =
        (total("clients_offered_rps"), total("clients_completed_rps"), total("clients_no_conn_per_s"));
    let outstanding = metric(&s, "clients_outstanding");
    assert_eq!(
        offered,
        completed + outstanding + refused,
        "offered {offered} != completed {completed} + outstanding {outstanding} + refused {refused}"
    );
    assert!(completed / offered > 0.9, "served: {completed} of {offered}");
}

/// `conn_list = "with_work"` (crates/workload/src/accel.rs, `ConnList`): poll() covers the
/// connections gathered with work at the top of the pass, not the thousands held open, so at
/// light load its kernel time is a small fraction of polling every connection; without control
/// the gathering blocks (the loop does not spin), where a blocking poll() over every connection
/// is woken by any event and rescans them all.
#[test]
fn with_work_polls_the_gathered_list_and_blocks_without_control() {
    let run_with = |control: &str, list: &str| {
        let sc = load(
            "scenarios/kawai-interval-static.toml",
            &[
                ("process.chamomile.accelerator.interval_control", control),
                ("process.chamomile.accelerator.min_cycle_ms", "20"),
                ("process.chamomile.accelerator.conn_list", list),
                ("traffic.clients.http.rate_rps", "400"),
                ("duration_ms", "3000"),
                ("warmup_ms", "2000"),
            ],
        );
        run(&sc)
    };
    let (all, ww) = (run_with("static", "all"), run_with("static", "with_work"));
    let (pa, pw) = (metric(&all, "cpu_poll_frac"), metric(&ww, "cpu_poll_frac"));
    assert!(pw < 0.1 * pa, "poll() CPU with_work {pw:.4} vs all {pa:.4}");
    let (la, lw) = (metric(&all, "chamomile_io_loops_per_s"), metric(&ww, "chamomile_io_loops_per_s"));
    assert!((la - lw).abs() <= 1.0, "the same cycle either way: {la} vs {lw} loops/s");
    let (na, nw) = (run_with("none", "all"), run_with("none", "with_work"));
    let (ca, cw) = (metric(&na, "cpu_util"), metric(&nw, "cpu_util"));
    assert!(ca > 0.9 && cw < 0.3, "no control: polling every connection spins ({ca:.2}), gathering blocks ({cw:.2})");
    assert!(metric(&nw, "clients_completed_frac") > 0.95, "and still serves the load");
}
