//! The end of a run: windowed metrics over the measurement window (the columns of `results.csv`),
//! the time-series samples, and the `summary.json` structure, all computed from the counters in
//! `metrics/stats.rs`. Every statistic has one name used in `summary.json`, in `results.csv` and in the
//! time series.

use super::*;
use crate::metrics::stats::Snapshot;
use crate::sim::*;
use crate::types::*;
use hostsim_engine::Histogram;
use std::collections::BTreeMap;

impl<M: Mechanisms> Host<M> {
    fn snapshot(&mut self) -> Snapshot {
        for c in 0..self.cpus.len() {
            self.account(c);
        }
        let s = &self.stats;
        Snapshot {
            t: self.now().ns(),
            offered: s.offered,
            delivered: s.delivered,
            drops: s.drops,
            acct: self.cpus.iter().map(|c| c.acct_ns).collect(),
            proc_rx: self.procs.iter().map(|p| p.rx_packets).collect(),
            proc_rx_bytes: self.procs.iter().map(|p| p.rx_bytes).collect(),
            proc_tx: self.procs.iter().map(|p| p.tx_packets).collect(),
            proc_tx_bytes: self.procs.iter().map(|p| p.tx_bytes).collect(),
            proc_cpu: self.procs.iter().map(|p| p.cpu_ns).collect(),
            migrations: s.migrations,
            cache: [s.llc_load_misses, s.llc_store_misses, s.dtlb_load_misses, s.dtlb_store_misses],
            wakeups: s.wakeups,
            src_acked: self.wire.srcs.iter().map(|x| x.src.stats.acked_bytes).collect(),
            src_timeouts: self.wire.srcs.iter().map(|x| x.src.stats.timeouts).collect(),
            src_drops: self.stats.src_drops.clone(),
            poll: [s.poll_ns, s.polls, s.poll_ready],
            src_received: self.wire.srcs.iter().map(|x| x.src.stats.received).collect(),
            forwarded: s.forwarded,
            ipis: s.ipis,
            lock: self.kernel_lock().map_or([0, 0], |l| [l.acquisitions, l.transfers]),
        }
    }

    pub fn warmup_end(&mut self) {
        let snap = self.snapshot();
        self.stats.warm = Some(snap);
        self.mech.warmup_end(self.now());
        self.stats.class.reset();
        for p in &mut self.procs {
            p.wait.reset();
        }
        self.apps_warmup();
    }

    pub fn sample(&mut self) {
        let now = self.snapshot();
        let prev = std::mem::replace(&mut self.stats.last_sample, now);
        let now = &self.stats.last_sample;
        let dt = (now.t - prev.t) as f64 * 1e-9;
        let ncpu = self.cpus.len() as f64;
        let state = |i: usize| -> f64 {
            let sum: u64 = now
                .acct
                .iter()
                .zip(prev.acct.iter().chain(std::iter::repeat(&[0; N_STATES])))
                .map(|(a, b)| a[i] - b[i])
                .sum();
            sum as f64 * 1e-9 / dt / ncpu
        };
        let runnable: usize =
            self.cpus.iter().map(|c| c.rq_cfs.len() + c.rq_rt.len() + usize::from(c.curr.is_some())).sum();
        let row = [
            (now.offered - prev.offered) as f64 / dt,
            (now.delivered - prev.delivered) as f64 / dt,
            (now.drops.iter().sum::<u64>() - prev.drops.iter().sum::<u64>()) as f64 / dt,
            state(CpuState::Hardirq as usize),
            state(CpuState::Softirq as usize),
            state(CpuState::System as usize),
            state(CpuState::User as usize),
            state(CpuState::Idle as usize),
            (now.migrations.iter().sum::<u64>() - prev.migrations.iter().sum::<u64>()) as f64 / dt,
            runnable as f64,
            self.cpus.iter().filter(|c| !c.backlog.is_empty()).map(|c| c.backlog.len()).sum::<usize>() as f64,
            self.cpus.iter().filter(|c| c.backlog.high_load()).count() as f64,
        ];
        self.stats.series.push_row(&row);
    }

    /// Build the summary at the end of the run.
    pub fn summary(&mut self) -> Summary {
        let end = self.snapshot();
        let warm = self.stats.warm.clone().unwrap_or_default();
        let window_s = ((end.t - warm.t) as f64 * 1e-9).max(1e-12);
        let ncpu = self.cpus.len();
        let mut m: BTreeMap<String, f64> = BTreeMap::new();
        let rate = |a: u64, b: u64| (a - b) as f64 / window_s;
        m.insert("offered_pps".into(), rate(end.offered, warm.offered));
        m.insert("delivered_pps".into(), rate(end.delivered, warm.delivered));
        for (i, name) in DROP_NAMES.iter().enumerate() {
            m.insert(format!("drop_{name}_pps"), rate(end.drops[i], warm.drops[i]));
        }
        let zero = [0u64; N_STATES];
        for (i, name) in STATE_NAMES.iter().enumerate() {
            let sum: u64 = (0..ncpu).map(|c| end.acct[c][i] - warm.acct.get(c).unwrap_or(&zero)[i]).sum();
            m.insert(format!("cpu_{name}_frac"), sum as f64 * 1e-9 / window_s / ncpu as f64);
        }
        m.insert("cpu_util".into(), 1.0 - m["cpu_idle_frac"]);
        self.load_metrics(&mut m, &end, &warm, window_s);
        // Per `[[process]]` entry, its instances summed: (rx packets, rx bytes, CPU ns).
        let mut groups = vec![[0u64; 5]; self.cfg.processes.len()];
        for (i, p) in self.procs.iter().enumerate().filter(|(_, p)| p.group != NONE) {
            let w = |v: &Vec<u64>| v.get(i).copied().unwrap_or(0);
            let g = &mut groups[p.group as usize];
            g[0] += end.proc_rx[i] - w(&warm.proc_rx);
            g[1] += end.proc_rx_bytes[i] - w(&warm.proc_rx_bytes);
            g[2] += end.proc_cpu[i] - w(&warm.proc_cpu);
            g[3] += end.proc_tx[i] - w(&warm.proc_tx);
            g[4] += end.proc_tx_bytes[i] - w(&warm.proc_tx_bytes);
        }
        for (p, g) in self.cfg.processes.iter().zip(&groups) {
            m.insert(format!("{}_rx_pps", p.name), rate(g[0], 0));
            m.insert(format!("{}_rx_mbps", p.name), rate(g[1], 0) * 8e-6);
            // A fraction of one CPU: with several instances, their mean (each is one thread, so
            // it stays in 0..=1); the sum, in CPUs, is `<name>_cpus` (0..=instances).
            let cpus = rate(g[2], 0) * 1e-9;
            m.insert(format!("{}_cpu_frac", p.name), cpus / f64::from(p.instances.max(1)));
            if p.instances > 1 {
                m.insert(format!("{}_cpus", p.name), cpus);
            }
            if p.program == hostsim_workload::ProgramKind::StreamSend {
                // Segments put out and bytes that send() took, per second of the window.
                m.insert(format!("{}_tx_pps", p.name), rate(g[3], 0));
                m.insert(format!("{}_tx_mbps", p.name), rate(g[4], 0) * 8e-6);
            }
        }
        let mig_total: u64 = end.migrations.iter().sum::<u64>() - warm.migrations.iter().sum::<u64>();
        m.insert("migrations_per_s".into(), mig_total as f64 / window_s);
        for (i, name) in CAUSE_NAMES.iter().enumerate() {
            m.insert(format!("migrations_{name}_per_s"), rate(end.migrations[i], warm.migrations[i]));
        }
        for (i, name) in ["llc_load", "llc_store", "dtlb_load", "dtlb_store"].iter().enumerate() {
            m.insert(format!("{name}_miss_per_s"), rate(end.cache[i], warm.cache[i]));
        }
        m.insert("wakeups_per_s".into(), rate(end.wakeups, warm.wakeups));
        self.mech.metrics(&mut m, self.now(), window_s);
        self.class_metrics(&mut m, mig_total, window_s);
        self.app_metrics(&mut m, &warm, &end, window_s);

        let mut rtt = Histogram::new();
        let mut timeouts = 0;
        let mut any_pingpong = false;
        let mut traffic = Vec::new();
        for (i, s) in self.wire.srcs.iter().enumerate() {
            let st = &s.src.stats;
            let w = |v: &Vec<u64>| v.get(i).copied().unwrap_or(0);
            match s.src.config().kind {
                hostsim_workload::SourceKind::PingPong => {
                    let lat = Latency::of(&st.rtt);
                    let ok = lat.count > 0;
                    let us = |v: f64| if ok { v / 1e3 } else { f64::NAN };
                    m.insert(format!("{}_rtt_us_mean", s.name), us(lat.mean));
                    m.insert(format!("{}_rtt_us_p50", s.name), us(lat.p50 as f64));
                    m.insert(format!("{}_rtt_us_p99", s.name), us(lat.p99 as f64));
                    m.insert(format!("{}_rtt_us_max", s.name), us(lat.max as f64));
                    m.insert(format!("{}_rtt_count", s.name), lat.count as f64);
                    m.insert(format!("{}_rtt_timeouts", s.name), (end.src_timeouts[i] - w(&warm.src_timeouts)) as f64);
                }
                hostsim_workload::SourceKind::StreamSink => crate::metrics::sink::insert(&mut m, &s.name, &st.sink),
                hostsim_workload::SourceKind::Sink => {
                    let got = end.src_received[i] - w(&warm.src_received);
                    m.insert(format!("{}_rx_pps", s.name), got as f64 / window_s);
                }
                hostsim_workload::SourceKind::TcpWindow => {
                    // Goodput over the part of the window in which the source was sending.
                    let cfg = s.src.config();
                    let from = warm.t.max(cfg.start_ns);
                    let to = end.t.min(cfg.stop_ns);
                    let secs = (to.saturating_sub(from) as f64 * 1e-9).max(1e-12);
                    let bytes = end.src_acked[i] - w(&warm.src_acked);
                    m.insert(format!("{}_goodput_mbps", s.name), bytes as f64 * 8e-6 / secs);
                }
                _ => {}
            }
            if s.src.config().kind == hostsim_workload::SourceKind::PingPong {
                any_pingpong = true;
                timeouts += st.timeouts;
                // Merge by re-recording is lossy; ping-pong scenarios use one source, so take its
                // histogram when there is one and otherwise the first.
                if rtt.count() == 0 {
                    rtt = st.rtt.clone();
                }
            }
            // Where this source lost packets, per place, over the window: `<source>_drop_<place>_pps`.
            let zero = [0u64; N_DROPS];
            let wd = warm.src_drops.get(i).unwrap_or(&zero);
            for (k, place) in DROP_NAMES.iter().enumerate() {
                m.insert(format!("{}_drop_{place}_pps", s.name), rate(end.src_drops[i][k], wd[k]));
            }
            traffic.push(TrafficSummary {
                name: s.name.clone(),
                emitted: st.emitted,
                replies: st.replies,
                timeouts: st.timeouts,
                retransmits: st.retransmits,
                acked_bytes: st.acked_bytes,
                rtt_ns: (st.rtt.count() > 0).then(|| Latency::of(&st.rtt)),
                drops: DROP_NAMES
                    .iter()
                    .zip(self.stats.src_drops[i])
                    .filter(|(_, v)| *v > 0)
                    .map(|(n, v)| (n.to_string(), v))
                    .collect(),
                http: match s.src.http() {
                    Some(hostsim_workload::HttpState::Clients(c)) => Some(HttpTotals {
                        sent: c.stats.sent_total,
                        completed: c.stats.completed_total,
                        outstanding: c.outstanding(),
                    }),
                    _ => None,
                },
            });
        }
        if any_pingpong {
            let lat = Latency::of(&rtt);
            let nan = f64::NAN;
            let ok = lat.count > 0;
            m.insert("rtt_count".into(), lat.count as f64);
            m.insert("rtt_timeouts".into(), timeouts as f64);
            m.insert("rtt_us_mean".into(), if ok { lat.mean / 1e3 } else { nan });
            m.insert("rtt_us_p50".into(), if ok { lat.p50 as f64 / 1e3 } else { nan });
            m.insert("rtt_us_p99".into(), if ok { lat.p99 as f64 / 1e3 } else { nan });
            m.insert("rtt_us_max".into(), if ok { lat.max as f64 / 1e3 } else { nan });
        }

        let sim_ns = self.now().ns();
        let mut s = Summary {
            sim_time_ns: sim_ns,
            measure_from_ns: warm.t,
            cpus: (0..ncpu)
                .map(|c| {
                    let a = self.cpus[c].acct_ns;
                    CpuSummary {
                        id: c as u32,
                        hardirq_ns: a[0],
                        softirq_ns: a[1],
                        system_ns: a[2],
                        user_ns: a[3],
                        spin_ns: a[4],
                        idle_ns: a[5],
                        irqs: self.cpus[c].irqs,
                        flow_limit_drops: self.stats.flow_limit_drops[c],
                    }
                })
                .collect(),
            processes: self
                .procs
                .iter()
                .map(|p| ProcessSummary {
                    name: p.name.clone(),
                    nice: p.nice,
                    kernel_thread: p.pinned_kthread,
                    cpu_ns: p.cpu_ns,
                    migrations: p.migrations,
                    rx_packets: p.rx_packets,
                    rx_bytes: p.rx_bytes,
                    tx_packets: p.tx_packets,
                    tx_bytes: p.tx_bytes,
                    wait_ns: (p.wait.count() > 0).then(|| Latency::of(&p.wait)),
                    speed: None, // a mechanism's (`Mechanism::summary`)
                })
                .collect(),
            packets: PacketSummary {
                offered: self.stats.offered,
                delivered: self.stats.delivered,
                in_flight: self.skb.in_flight(),
                drops: DROP_NAMES.iter().zip(self.stats.drops).map(|(n, v)| (n.to_string(), v)).collect(),
                reordered: self.stats.reordered,
                rfs_flow_moves: self.stats.rfs_flow_moves,
                fdir: self.fdir_summary(),
                tcp_prequeued: self.cfg.kernel.tcp_prequeue.then_some(self.stats.prequeued),
                itr_dynamic_us: self
                    .dev
                    .queues
                    .iter()
                    .any(|q| q.dyn_itr.is_some())
                    .then(|| self.dev.queues.iter().map(|q| q.dyn_itr.map_or(0, |d| d.itr >> 2)).collect()),
                gro_rsc: self.dev.queues.iter().any(|q| q.gro.is_some() || q.rsc.is_some()).then_some(GroRscSummary {
                    gro_merged: self.stats.gro_merged,
                    gro_aggregates: self.stats.gro_aggregates,
                    rsc_joined: self.stats.rsc_joined,
                }),
                net_dim_profile: self.dev.queues.iter().any(|q| q.net_dim.is_some()).then(|| {
                    self.dev.queues.iter().map(|q| q.net_dim.as_ref().map_or(0, |d| d.dim.profile_ix as u32)).collect()
                }),
                rfs_moves_deferred: self.stats.rfs_moves_deferred,
                rfs_unsafe_moves: self.stats.rfs_unsafe_moves,
                rps_ipis: self.stats.ipis,
                tx_frames: self.stats.tx_frames,
                tx_ring_drops: self.stats.tx_ring_drops,
                tx_bytes: self.stats.tx_bytes,
                tx_delivered: self.stats.tx_delivered,
                tx_delivered_bytes: self.stats.tx_delivered_bytes,
                tx_in_flight: self.tx_in_flight(),
                acks_consumed: self.stats.acks_consumed,
                ctrl_consumed: self.stats.ctrl_consumed,
                forwarded: self.stats.forwarded,
            },
            concurrency: ConcurrencySummary {
                model: self.cfg.kernel.concurrency.0.clone(),
                online_cpus: self.cpus.len() as u32,
                machine_cpus: self.cfg.profile.topology.cpus() as u32,
                lock_acquisitions: self.kernel_lock().map_or(0, |l| l.acquisitions),
                lock_transfers: self.kernel_lock().map_or(0, |l| l.transfers),
                // The mechanisms' (paper 003's exchanges and pool): `Mechanism::summary`.
                exchanges: Vec::new(),
                pool_buffers_used: 0,
                exchange_queued: 0,
            },
            tcp: TcpSummary {
                connections: self.net.conns.len() as u64,
                retransmits: self.net.conns.iter().map(|c| c.snd.retransmits).sum::<u64>() + self.stats.tcp_closed[4],
                timeouts: self.net.conns.iter().map(|c| c.snd.timeouts).sum::<u64>() + self.stats.tcp_closed[5],
                written_bytes: self.net.conns.iter().map(|c| c.snd.write_seq).sum::<u64>() + self.stats.tcp_closed[0],
                acked_bytes: self.net.conns.iter().map(|c| c.snd.snd_una).sum::<u64>() + self.stats.tcp_closed[1],
                unacked_bytes: self.tcp_unacked_bytes() + self.stats.tcp_closed[2],
                sent_bytes: self.net.conns.iter().map(|c| c.tx_bytes).sum::<u64>() + self.stats.tcp_closed[3],
            },
            speed_violations: 0, // a mechanism's (paper 002's rule: `Mechanism::summary`)
            migrations: {
                let mut mm: BTreeMap<String, u64> =
                    CAUSE_NAMES.iter().zip(self.stats.migrations).map(|(n, v)| (n.to_string(), v)).collect();
                mm.insert("total".into(), self.stats.migrations.iter().sum());
                mm
            },
            cache: CacheSummary {
                llc_load_misses: self.stats.llc_load_misses,
                llc_store_misses: self.stats.llc_store_misses,
                dtlb_load_misses: self.stats.dtlb_load_misses,
                dtlb_store_misses: self.stats.dtlb_store_misses,
            },
            latency_ns: (any_pingpong && rtt.count() > 0).then(|| Latency::of(&rtt)),
            sockets: (0..self.net.socks.len())
                .map(|s| {
                    self.sock_len_changed(s);
                    let sk = &self.net.socks[s];
                    SocketSummary {
                        port: sk.port,
                        enqueued: sk.enqueued,
                        queue_len_mean: sk.len_area as f64 / sim_ns.max(1) as f64,
                        queued_at_end: sk.queue.len() as u64,
                    }
                })
                .collect(),
            traffic,
            metrics: m,
        };
        self.mech.summary(&mut s);
        s
    }
}

/// Hosts with at most this many online CPUs get per-CPU load metrics (four per CPU; a 64-CPU
/// host's would be 256 columns of every result).
const PER_CPU_METRICS_MAX: usize = 8;

/// CPU load and the kernel concurrency models' counters as metrics.
impl<M: Mechanisms> Host<M> {
    /// Load with and without lock spinning, over the online CPUs and over the whole machine
    /// (offline CPUs idle: a uniprocessor run's load spread over the machine, notes 003 §6.1);
    /// forwarding; IPIs; the lock and Symbiose exchange counters.
    fn load_metrics(&self, m: &mut BTreeMap<String, f64>, end: &Snapshot, warm: &Snapshot, window_s: f64) {
        let zero = [0u64; N_STATES];
        let busy = |c: usize, spin: bool| -> f64 {
            let d = |i: usize| (end.acct[c][i] - warm.acct.get(c).unwrap_or(&zero)[i]) as f64 * 1e-9 / window_s;
            1.0 - d(CpuState::Idle as usize) - if spin { 0.0 } else { d(CpuState::Spin as usize) }
        };
        let online = self.cpus.len();
        let machine = self.cfg.profile.topology.cpus().max(online);
        let sum = |spin: bool| (0..online).map(|c| busy(c, spin)).sum::<f64>();
        m.insert("online_cpus".into(), online as f64);
        m.insert("cpu_busy_frac".into(), sum(true) / online as f64);
        m.insert("cpu_busy_nospin_frac".into(), sum(false) / online as f64);
        m.insert("machine_busy_frac".into(), sum(true) / machine as f64);
        m.insert("machine_busy_nospin_frac".into(), sum(false) / machine as f64);
        m.insert("cpu_busy_max_frac".into(), (0..online).map(|c| busy(c, true)).fold(0.0, f64::max));
        if online <= PER_CPU_METRICS_MAX {
            // Per CPU: its load and where the time went (`cpu<N>_busy_frac`, `cpu<N>_<state>_frac`
            // for hard IRQ, softirq and system: kernel threads and system calls), the names the
            // live experiments use for their per-CPU columns.
            let share = |c: usize, s: CpuState| {
                (end.acct[c][s as usize] - warm.acct.get(c).unwrap_or(&zero)[s as usize]) as f64 * 1e-9 / window_s
            };
            for c in 0..online {
                m.insert(format!("cpu{c}_busy_frac"), busy(c, true));
                m.insert(format!("cpu{c}_hardirq_frac"), share(c, CpuState::Hardirq));
                m.insert(format!("cpu{c}_softirq_frac"), share(c, CpuState::Softirq));
                m.insert(format!("cpu{c}_system_frac"), share(c, CpuState::System));
            }
        }
        let rate = |a: u64, b: u64| (a - b) as f64 / window_s;
        m.insert("forwarded_pps".into(), rate(end.forwarded, warm.forwarded));
        let lat = &self.stats.forward_latency;
        let us = |v: f64| if lat.count() > 0 { v / 1e3 } else { f64::NAN };
        m.insert("forward_latency_us_mean".into(), us(lat.mean()));
        m.insert("forward_latency_us_p99".into(), us(lat.quantile(0.99) as f64));
        m.insert("ipis_per_s".into(), rate(end.ipis, warm.ipis));
        m.insert("lock_acquisitions_per_s".into(), rate(end.lock[0], warm.lock[0]));
        m.insert("lock_transfers_per_s".into(), rate(end.lock[1], warm.lock[1]));
    }
}

/// Paper 001's migration classes (`metrics/migration_class.rs`) as metrics.
impl<M: Mechanisms> Host<M> {
    /// The classification's metrics over the measurement window (`migrations` = all causes).
    pub(crate) fn class_metrics(&self, m: &mut BTreeMap<String, f64>, migrations: u64, window_s: f64) {
        crate::metrics::migration_class::insert(m, &self.stats.class.counts, migrations, window_s);
    }
}

/// The NIC features of issue 26 (Flow Director ATR) in the summary.
impl<M: Mechanisms> Host<M> {
    fn fdir_summary(&self) -> Option<FdirSummary> {
        let fds: Vec<_> = self.dev.nics.iter().filter_map(|n| n.fdir.as_ref()).collect();
        if fds.is_empty() {
            return None;
        }
        Some(FdirSummary {
            samples: self.stats.fdir_samples,
            filters: fds.iter().map(|f| f.filters() as u64).sum(),
            overflows: fds.iter().map(|f| f.overflows).sum(),
        })
    }
}
