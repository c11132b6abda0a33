//! Metrics of event-driven programs and HTTP traffic (only in runs that have them, so other
//! scenarios' results keep their columns):
//!
//! - kernel CPU by function, as paper 004's kernprof view: `cpu_kernel_frac` (hard IRQ +
//!   softirq + system + spin), `cpu_poll_frac` (poll()'s kernel time over elapsed time),
//!   `poll_kernel_share` (poll()'s share of kernel time: Figs. 9–10, right), `polls_per_s`,
//!   `poll_ready_mean` (ready descriptors per call);
//! - per accelerator process `<p>`: `<p>_requests_per_s`, `_hits_per_s`, `_misses_per_s`,
//!   `_fetched_per_s`, `_accepted_per_s`, `_closed_per_s`, `<p>_conns` (open at the end),
//!   `<p>_fetch_queue` (misses waiting for an origin connection at the end), and per thread
//!   `<t>`: `<p>_<t>_cpu_frac`, `_loops_per_s`, `_sleeps_per_s`, `_yields_per_s`;
//! - per `http_clients` source `<s>`: `<s>_offered_rps` (requests generated), `_completed_rps`
//!   (responses completed in the window: the throughput), `_completed_frac` (completed /
//!   offered), `_resp_ms_mean`, `_p50`, `_p90`, `_p99`,
//!   `_resp_hit_ms_mean`, `_resp_miss_ms_mean`, `_no_conn_per_s` (requests refused for want of
//!   an idle connection), `_timeouts_per_s`, `_conns_open`, `_outstanding` (at the end);
//!   per `http_origin` `<s>`: `<s>_served_per_s`.
//!
//! Requests and responses count from the end of warm-up; response times are those of requests
//! sent after it.

use crate::metrics::stats::Snapshot;
use crate::sim::*;
use crate::types::*;
use hostsim_engine::Histogram;
use hostsim_workload::HttpState;
use std::collections::BTreeMap;

fn ms(h: &Histogram, f: impl Fn(&Histogram) -> f64) -> f64 {
    if h.count() == 0 {
        f64::NAN
    } else {
        f(h) / 1e6
    }
}

impl<M: Mechanisms> Host<M> {
    pub(crate) fn app_metrics(&self, m: &mut BTreeMap<String, f64>, warm: &Snapshot, end: &Snapshot, window_s: f64) {
        let has_http = self.wire.srcs.iter().any(|s| s.src.http().is_some());
        if self.apps.is_empty() && !has_http {
            return;
        }
        let ncpu = self.cpus.len();
        let zero = [0u64; N_STATES];
        let kernel_ns: u64 = (0..ncpu)
            .map(|c| {
                let (e, w) = (&end.acct[c], warm.acct.get(c).unwrap_or(&zero));
                [CpuState::Hardirq, CpuState::Softirq, CpuState::System, CpuState::Spin]
                    .iter()
                    .map(|&s| e[s as usize] - w[s as usize])
                    .sum::<u64>()
            })
            .sum();
        let elapsed = window_s * ncpu as f64;
        let d = |i: usize| (end.poll[i] - warm.poll[i]) as f64;
        m.insert("cpu_kernel_frac".into(), kernel_ns as f64 * 1e-9 / elapsed);
        m.insert("cpu_poll_frac".into(), d(0) * 1e-9 / elapsed);
        m.insert("poll_kernel_share".into(), if kernel_ns == 0 { f64::NAN } else { d(0) / kernel_ns as f64 });
        m.insert("polls_per_s".into(), d(1) / window_s);
        m.insert("poll_ready_mean".into(), if d(1) == 0.0 { f64::NAN } else { d(2) / d(1) });

        for app in &self.apps {
            let pc = &self.cfg.processes[app.group as usize];
            let name = &pc.name;
            let s = &app.accel.stats;
            let w = app.warm.clone().unwrap_or_default();
            let rate = |a: u64, b: u64| (a - b) as f64 / window_s;
            m.insert(format!("{name}_requests_per_s"), rate(s.requests, w.requests));
            m.insert(format!("{name}_hits_per_s"), rate(s.hits, w.hits));
            m.insert(format!("{name}_misses_per_s"), rate(s.misses, w.misses));
            m.insert(format!("{name}_fetched_per_s"), rate(s.fetched, w.fetched));
            m.insert(format!("{name}_accepted_per_s"), rate(s.accepted, w.accepted));
            m.insert(format!("{name}_closed_per_s"), rate(s.closed, w.closed));
            m.insert(format!("{name}_conns"), self.net.eps.live() as f64);
            m.insert(format!("{name}_fetch_queue"), app.accel.queued().0 as f64);
            for (t, &pid) in app.threads.iter().enumerate() {
                let tn = &pc.threads[t].name;
                let cpu = end.proc_cpu[pid as usize] - warm.proc_cpu.get(pid as usize).copied().unwrap_or(0);
                m.insert(format!("{name}_{tn}_cpu_frac"), cpu as f64 * 1e-9 / window_s);
                let g = |v: &Vec<u64>, wv: &Vec<u64>| rate(v[t], wv.get(t).copied().unwrap_or(0));
                m.insert(format!("{name}_{tn}_loops_per_s"), g(&s.loops, &w.loops));
                m.insert(format!("{name}_{tn}_sleeps_per_s"), g(&s.sleeps, &w.sleeps));
                m.insert(format!("{name}_{tn}_yields_per_s"), g(&s.yields, &w.yields));
            }
        }

        for src in &self.wire.srcs {
            let n = &src.name;
            match src.src.http() {
                Some(HttpState::Clients(c)) => {
                    let st = &c.stats;
                    m.insert(format!("{n}_offered_rps"), st.offered as f64 / window_s);
                    m.insert(format!("{n}_completed_rps"), st.completed as f64 / window_s);
                    let frac = if st.offered == 0 { f64::NAN } else { st.completed as f64 / st.offered as f64 };
                    m.insert(format!("{n}_completed_frac"), frac);
                    m.insert(format!("{n}_resp_ms_mean"), ms(&st.resp, |h| h.mean()));
                    m.insert(format!("{n}_resp_ms_p50"), ms(&st.resp, |h| h.quantile(0.5) as f64));
                    m.insert(format!("{n}_resp_ms_p90"), ms(&st.resp, |h| h.quantile(0.9) as f64));
                    m.insert(format!("{n}_resp_ms_p99"), ms(&st.resp, |h| h.quantile(0.99) as f64));
                    m.insert(format!("{n}_resp_hit_ms_mean"), ms(&st.resp_hit, |h| h.mean()));
                    m.insert(format!("{n}_resp_miss_ms_mean"), ms(&st.resp_miss, |h| h.mean()));
                    m.insert(format!("{n}_no_conn_per_s"), st.no_conn as f64 / window_s);
                    m.insert(format!("{n}_timeouts_per_s"), st.timeouts as f64 / window_s);
                    m.insert(format!("{n}_conns_open"), c.open() as f64);
                    m.insert(format!("{n}_outstanding"), c.outstanding() as f64);
                }
                Some(HttpState::Origin(o)) => {
                    m.insert(format!("{n}_served_per_s"), o.stats.served as f64 / window_s);
                }
                None => {}
            }
        }
    }
}
