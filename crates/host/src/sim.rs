//! The `Host`: the subsystems' state side by side, the event enum, and the main loop. Behaviour
//! and each subsystem's state struct live in the subsystem's folder as `impl Host` blocks
//! (`kernel/`, `drivers/net/`, `net/`, `fs/`, `mechanisms/`, `metrics/`, `wire.rs`); this file wires
//! them up and dispatches events. Small shared types live in `types.rs`, the policy enums in
//! `policies.rs`: neither imports this hub, so no policy file depends on `Host`.

use crate::config::*;
use crate::drivers::net::NetDevs;
use crate::kernel::app_state::App;
use crate::kernel::cpu::Cpu;
use crate::kernel::sched::SchedState;
use crate::kernel::task::{spawn_cpumap_kthread, spawn_napi_kthreads, spawn_tasks, Proc};
use crate::mechanisms::takeuchi_symbiose::kthreads::spawn_symbiose_threads;
use crate::mechanisms::takeuchi_symbiose::SymbioseThread;
use crate::mechanisms::MechState;

use crate::metrics::stats::Stats;
use crate::metrics::trace::{Trace, TraceSink};
use crate::net::core::skbuff::PacketSlab;
use crate::net::NetStack;
use crate::policies::{Backlog, Concurrency};
use crate::types::*;
use crate::wire::Wire;
use hostsim_engine::{EventQueue, RngStreams, Time};

/// Simulation events. Small and `Copy`: the queue stores them inline.
#[derive(Clone, Copy, Debug)]
// A 4-byte tag: the default layout's 1-byte tag leaves 11 bytes of fields, which the compiler
// copies as two overlapping words (bytes 1-8 and 8-11) and then reads back whole; the CPU cannot
// forward such stores and stalls on every event popped (`perf annotate` of the event loop:
// about half its samples on those two moves). With `repr(u32)` an event is three aligned words
// (still 12 bytes, `Option<Ev>` too).
#[repr(u32)]
pub enum Ev {
    /// The CPU's current unit of work completes (if `gen` is still live).
    CpuDone {
        cpu: u16,
        gen: u32,
    },
    /// Timer interrupt.
    Tick {
        cpu: u16,
    },
    /// An external source wants to run.
    SourceWake {
        src: u32,
        gen: u32,
    },
    /// A frame reaches the NIC port (after the switch).
    FrameArrive {
        pkt: PktId,
    },
    /// A frame from a source with a long link reaches the switch in front of NIC `nic`.
    AtSwitch {
        pkt: PktId,
        nic: u32,
    },
    /// A frame from the host reaches an external source: `Host::feedback`'s entry `slot` says
    /// which source, what it learns and the payload bytes (kept out of the event so that every
    /// event stays 12 bytes: the queue moves events on every schedule and pop).
    Feedback {
        slot: u32,
    },
    /// The TX ring of NIC queue `q` drained (if `gen` is still live): the TxNoBuf interrupt cause.
    TxDrain {
        q: u32,
        gen: u32,
    },
    /// A frame on queue `q`'s TX ring that asked for a TX-done interrupt has left.
    TxIrq {
        q: u32,
    },
    /// A TCP connection's retransmission timer.
    Rto {
        conn: u32,
        gen: u32,
    },
    /// A speed-regulated process's slot timer (start or end of its allocated slots).
    SlotTimer {
        pid: Pid,
        gen: u32,
    },
    /// Interrupt-moderation timer of a NIC queue.
    Coalesce {
        q: u32,
        gen: u32,
    },
    /// A sleeping process's timer.
    ProcTimer {
        pid: Pid,
        gen: u32,
    },
    /// A process starts (its `start_ms`).
    ProcStart {
        pid: Pid,
    },
    /// TCP delayed-ACK timer of a socket.
    DelAck {
        sock: u32,
        gen: u32,
    },
    /// A scheduled nice change.
    Renice {
        pid: Pid,
        nice: i8,
    },
    /// Delayed-ACK timer of a connected endpoint (`net/ipv4/endpoint.rs`).
    EpDelAck {
        ep: u32,
        gen: u32,
    },
    /// The XDP agent's periodic poll of the counters (`kernel.xdp = "pbq"`).
    XdpPoll,
    /// The suppression agent's check (`kernel.napi_suppress`, `mechanisms/ozaki_pbq/napi_suppress.rs`).
    NapiSuppress,
    Sample,
    WarmupEnd,
    End,
}

// Every event is small: the queue copies it on schedule and pop (see `Ev::Feedback`).
const _: () = assert!(std::mem::size_of::<Ev>() <= 12 && std::mem::size_of::<Option<Ev>>() <= 12);

/// The simulated host and its environment. Each subsystem keeps its state in a struct of its
/// own, defined in the subsystem's folder by a module that does not import this hub: `cpus`
/// (`kernel/cpu.rs`: a CPU's frames, its softnet data and run queues, as Linux keeps them per
/// CPU), `procs` (`kernel/task.rs`), `sched` (`kernel/sched/mod.rs`), `conc` (`policies.rs`:
/// `kernel/locking`, `mechanisms/takeuchi_symbiose`), `dev` (`drivers/net/mod.rs`), `net`
/// (`net/mod.rs`), `skb` (`net/core/skbuff.rs`), `wire` (`wire/mod.rs`), `apps`
/// (`kernel/app_state.rs`), `mech` (`mechanisms/mod.rs`), `stats` and `trace` (`metrics/`).
/// Their behaviour is `impl Host` blocks in the same folders.
pub struct Host {
    pub cfg: HostConfig,
    /// The event queue; its clock (`q.now()`) is the simulated time.
    pub q: EventQueue<Ev>,
    pub cpus: Vec<Cpu>,
    pub procs: Vec<Proc>,
    pub sched: SchedState,
    /// The kernel concurrency model (`kernel.concurrency`): its lock and Symbiose's queues.
    pub conc: Concurrency,
    pub dev: NetDevs,
    pub net: NetStack,
    pub skb: PacketSlab,
    pub wire: Wire,
    /// Multi-threaded programs (`kernel/app.rs`).
    pub apps: Vec<App>,
    pub mech: MechState,
    pub stats: Stats,
    pub trace: Option<Trace>,
    pub tick_ns: u64,
}

/// The profile's costs as this kernel pays them: fine-grained SMP locking (`smp_lock_factor`)
/// on the locking-sensitive costs under `concurrency = "smp"` only; the other models get their
/// locking from their own lock model (`kernel/locking`), a uniprocessor kernel none.
fn effective_costs(cfg: &HostConfig) -> Costs {
    let mut c = cfg.profile.costs.clone();
    let f = cfg.profile.mechanisms.smp_lock_factor;
    if cfg.kernel.concurrency == ConcurrencyKind::Smp && f != 1.0 {
        for v in [
            &mut c.netif_rx_ns,
            &mut c.softirq_entry_ns,
            &mut c.ip_udp_rx_ns,
            &mut c.tcp_rx_ns,
            &mut c.wakeup_ns,
            &mut c.recv_ns,
            &mut c.udp_send_ns,
            &mut c.tcp_ack_send_ns,
            &mut c.tcp_send_ns,
            &mut c.tcp_ack_rx_ns,
            &mut c.ip_forward_ns,
            &mut c.driver_tx_frame_ns,
            &mut c.driver_tx_clean_ns,
        ] {
            *v = (*v as f64 * f).round() as u64;
        }
    }
    c
}

impl Host {
    pub fn new(cfg: HostConfig) -> Host {
        let mut cfg = cfg;
        cfg.profile.costs = effective_costs(&cfg);
        let streams = RngStreams::new(cfg.seed);
        let topo = &cfg.profile.topology;
        let ncpu = cfg.online_cpus();
        let tick_ns = 1_000_000_000 / u64::from(cfg.kernel.hz.max(1));
        let mut cpus = Vec::with_capacity(ncpu);
        for c in 0..ncpu as u32 {
            let core = c / topo.threads_per_core;
            let pkg = core / topo.cores_per_package;
            let llc = match topo.llc {
                LlcScope::PerCore => core,
                LlcScope::PerPackage => pkg,
            };
            let backlog =
                Backlog::new(cfg.kernel.backlog, &cfg.kernel, c as usize, streams.stream(&format!("backlog/{c}")));
            cpus.push(Cpu::new(core, llc, backlog));
        }
        let mut dev = NetDevs::new(&cfg, ncpu, streams.stream("irq-routing"));
        let (mut procs, socks, port_sock, ksoftirqd) = spawn_tasks(&cfg, ncpu, &streams);
        for (c, pid) in ksoftirqd.into_iter().enumerate() {
            cpus[c].ksoftirqd = pid;
        }
        if cfg.kernel.concurrency == ConcurrencyKind::Functional {
            spawn_symbiose_threads(ncpu, &mut procs, &streams);
        }
        let cpumap_kthread =
            (cfg.kernel.xdp == XdpKind::Cpumap).then(|| spawn_cpumap_kthread(&cfg.kernel, &mut procs, &streams));
        if cfg.kernel.napi_threaded {
            for (q, pid) in spawn_napi_kthreads(&cfg, &mut procs, &streams).into_iter().enumerate() {
                dev.queues[q].napi_thread = pid;
            }
        }
        let wire = Wire::new(&cfg, &streams);
        let mut net = NetStack::new(&cfg, socks, port_sock, &procs, &streams);
        if let (Some(cm), Some(pid)) = (net.cpumap.as_mut(), cpumap_kthread) {
            cm.kthread = pid;
        }
        let stats = Stats::new(&cfg, ncpu, procs.len());
        let conc = Concurrency::new(cfg.kernel.concurrency, &cfg.kernel, &cfg.profile.mechanisms, ncpu);
        let mut host = Host {
            sched: SchedState::new(&cfg, &cpus, procs.len()),
            conc,
            q: EventQueue::new(),
            cpus,
            procs,
            dev,
            net,
            skb: PacketSlab::new(),
            wire,
            apps: Vec::new(),
            mech: MechState::new(&cfg, &streams),
            stats,
            trace: None,
            tick_ns,
            cfg,
        };
        host.open_connections();
        host.init_apps();
        host.set_routes();
        if let Some(sym) = host.conc.symbiose_mut() {
            for (pid, p) in host.procs.iter().enumerate() {
                if p.symbiose == Some(SymbioseThread::Stages) {
                    sym.stage_thread[p.cpu as usize] = pid as Pid;
                }
            }
        }
        host
    }

    /// Connect every `stream_send` process to the source it names (instance k: flow k).
    fn open_connections(&mut self) {
        for pid in 0..self.procs.len() {
            let group = self.procs[pid].group;
            if group == NONE {
                continue;
            }
            let pc = &self.cfg.processes[group as usize];
            let Some(dst) = pc.connect.as_ref().and_then(|n| self.wire.srcs.iter().position(|s| &s.name == n)) else {
                continue;
            };
            let sock = self.procs[pid].sock;
            if sock == NONE {
                continue;
            }
            let flow =
                (pid as u32).saturating_sub(self.procs.iter().position(|p| p.group == group).unwrap_or(0) as u32);
            let sndbuf = pc.sndbuf_bytes.unwrap_or(self.cfg.kernel.sndbuf_bytes);
            let nodelay = pc.nodelay;
            let conn = self.tcp_connect(sock, dst as u32, flow, sndbuf, nodelay);
            self.procs[pid].conn = conn;
        }
    }

    /// Run to the configured duration, calling `progress(now)` every 2^20 events (for a
    /// progress bar; it never affects results). With a trace (`self.trace`), its records go to
    /// `sink` as the run goes.
    pub fn run_with_progress(&mut self, mut progress: impl FnMut(Time), mut sink: Option<&mut dyn TraceSink>) {
        let n = self.cpus.len();
        for c in 0..n {
            // Stagger ticks like real per-CPU timers so they don't all fire at once.
            let off = self.tick_ns * c as u64 / n as u64;
            self.q.schedule(Time(off), Ev::Tick { cpu: c as u16 });
            self.cpus[c].next_balance = Time(off + self.cfg.kernel.balance_interval_ms * 1_000_000);
        }
        for i in 0..self.wire.srcs.len() {
            if let Some(t) = self.wire.srcs[i].src.first_wake() {
                let gen = self.wire.srcs[i].timer.arm();
                self.q.schedule(t, Ev::SourceWake { src: i as u32, gen });
            }
        }
        for pid in 0..self.procs.len() {
            let group = self.procs[pid].group;
            if group != NONE {
                let pc = &self.cfg.processes[group as usize];
                let jitter = if pc.start_jitter_us > 0 {
                    (self.procs[pid].rng.uniform() * pc.start_jitter_us as f64 * 1e3) as u64
                } else {
                    0
                };
                let at = Time::from_ms(pc.start_ms) + Time(jitter);
                self.q.schedule(at, Ev::ProcStart { pid: pid as Pid });
                for r in self.cfg.processes[group as usize].renice.clone() {
                    self.q.schedule(Time::from_ms(r.at_ms), Ev::Renice { pid: pid as Pid, nice: r.nice });
                }
            }
        }
        self.symbiose_start();
        self.q.schedule(Time(self.cfg.sample_interval_ns), Ev::Sample);
        if self.mech.xdp.polled() {
            self.q.schedule(Time::from_ms(self.cfg.kernel.xdp_poll_ms.max(1)), Ev::XdpPoll);
        }
        if self.cfg.kernel.napi_suppress != NapiSuppress::Off {
            self.q.schedule(Time::from_ms(self.cfg.kernel.napi_suppress_check_ms.max(1)), Ev::NapiSuppress);
        }
        self.q.schedule(Time(self.cfg.warmup_ns), Ev::WarmupEnd);
        self.q.schedule(Time(self.cfg.duration_ns), Ev::End);
        while let Some((t, ev)) = self.q.pop() {
            if let Ev::End = ev {
                self.end();
                break;
            }
            self.dispatch(ev);
            if self.q.events_popped() & 0xF_FFFF == 0 {
                progress(t);
            }
            if let (Some(tr), Some(s)) = (self.trace.as_mut(), sink.as_deref_mut()) {
                if tr.full() {
                    tr.flush(s);
                }
            }
        }
        if let Some(tr) = self.trace.as_mut() {
            tr.finish(self.q.now());
            if let Some(s) = sink {
                tr.flush(s);
            }
        }
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::CpuDone { cpu, gen } => self.cpu_done(cpu as usize, gen),
            Ev::Tick { cpu } => {
                self.q.schedule(self.q.now() + Time(self.tick_ns), Ev::Tick { cpu });
                self.raise_irq(cpu as usize, IrqSrc::Tick);
            }
            Ev::SourceWake { src, gen } => self.source_wake(src as usize, gen),
            Ev::FrameArrive { pkt } => self.frame_arrive(pkt),
            Ev::AtSwitch { pkt, nic } => {
                let p = &self.skb.pkts[pkt as usize];
                let port_ns = hostsim_engine::round_u64(
                    crate::wire_bytes(p.bytes, p.tcp) as f64 * self.dev.nics[nic as usize].ns_per_byte,
                );
                self.switch_forward(pkt, nic as usize, self.q.now(), port_ns)
            }
            Ev::Feedback { slot } => {
                let (src, fb, bytes) = self.wire.feedback.take(slot);
                self.stats.tx_en_route -= 1;
                self.stats.tx_delivered += 1;
                self.stats.tx_delivered_bytes += u64::from(bytes);
                self.source_feedback(src as usize, fb);
            }
            Ev::TxDrain { q, gen } => {
                if self.dev.queues[q as usize].tx.drain.fires(gen) {
                    self.tx_irq_cause(q as usize);
                }
            }
            Ev::TxIrq { q } => self.tx_irq_cause(q as usize),
            Ev::Rto { conn, gen } => {
                if self.net.conns[conn as usize].timer.fires(gen) {
                    self.net.xmit_cpu = self.net.conns[conn as usize].timer_cpu;
                    self.tcp_retransmit_timer(conn as usize);
                }
            }
            Ev::SlotTimer { pid, gen } => {
                if self.procs[pid as usize].slot_timer.fires(gen) {
                    self.slot_timer(pid);
                }
            }
            Ev::Coalesce { q, gen } => {
                if self.dev.queues[q as usize].coalesce.fires(gen) {
                    self.nic_raise(q as usize);
                }
            }
            Ev::ProcTimer { pid, gen } => {
                if self.procs[pid as usize].timer.fires(gen) {
                    let prev = self.procs[pid as usize].cpu as usize;
                    self.wake_up(pid, prev, false);
                }
            }
            Ev::ProcStart { pid } => self.proc_start(pid),
            Ev::Renice { pid, nice } => self.set_nice(pid, nice),
            Ev::EpDelAck { ep, gen } => self.ep_delack_fire(ep, gen),
            Ev::DelAck { sock, gen } => {
                if self.net.socks[sock as usize].delack.fires(gen) {
                    self.net.xmit_cpu = self.net.socks[sock as usize].delack_cpu;
                    self.delack_fire(sock as usize);
                }
            }
            Ev::Sample => {
                self.sample();
                self.q.schedule(self.q.now() + Time(self.cfg.sample_interval_ns), Ev::Sample);
            }
            Ev::XdpPoll => {
                self.xdp_poll();
                self.q.schedule(self.q.now() + Time::from_ms(self.cfg.kernel.xdp_poll_ms.max(1)), Ev::XdpPoll);
            }
            Ev::NapiSuppress => {
                self.napi_suppress_check();
                self.q.schedule(
                    self.q.now() + Time::from_ms(self.cfg.kernel.napi_suppress_check_ms.max(1)),
                    Ev::NapiSuppress,
                );
            }
            Ev::WarmupEnd => self.warmup_end(),
            Ev::End => unreachable!("the loop ends the run"),
        }
    }

    /// The end of the run: every CPU's time accounted up to now, and a sample due now taken.
    fn end(&mut self) {
        for c in 0..self.cpus.len() {
            self.account(c);
        }
        // A sample due at this very instant was scheduled after End: take it now.
        let iv = self.cfg.sample_interval_ns;
        let now = self.q.now();
        if now.ns().is_multiple_of(iv) && self.stats.samples_taken() < now.ns() / iv {
            self.sample();
        }
    }

    /// Drop a packet at `place`, counting it (in total and for its source), and free it.
    pub fn drop_pkt(&mut self, id: PktId, place: DropPlace) {
        if self.skb.has_frags(id) {
            // A GRO/RSC aggregate: every segment in it is dropped.
            let mut p = self.skb.frag_next[id as usize];
            self.skb.frag_next[id as usize] = NONE;
            while p != NONE {
                let next = self.skb.frag_next[p as usize];
                self.skb.frag_next[p as usize] = NONE;
                self.drop_pkt(p, place);
                p = next;
            }
        }
        self.stats.drops[place as usize] += 1;
        let src = self.skb.pkts[id as usize].src as usize;
        if let Some(d) = self.stats.src_drops.get_mut(src) {
            d[place as usize] += 1;
        }
        self.skb.free(id);
    }
}
