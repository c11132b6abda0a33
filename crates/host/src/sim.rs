//! The `Host`: the subsystems' state side by side, the event enum, and the main loop. Behaviour
//! and each subsystem's state struct live in the subsystem's folder as `impl Host` blocks
//! (`kernel/`, `drivers/net/`, `net/`, `fs/`, `metrics/`, `wire/`); this file wires them up and
//! dispatches events. Small shared types live in `types.rs`, the policy enums in `policies.rs`.
//!
//! The hub is generic over its mechanisms (`M`, the registry of `mechanisms/mod.rs`): it calls
//! their hooks (`crate::hooks`) and never names one, and they reach the host only through the
//! handle this file implements (`Tasks`, `Packets`, `Timers`, `Reach`).

use crate::config::*;
use crate::drivers::net::NetDevs;
pub use crate::hooks::Mechanisms;
use crate::hooks::{Boot, Packets, Reach, Tasks, Timers};
use crate::kernel::app_state::App;
use crate::kernel::cpu::Cpu;
use crate::kernel::sched::SchedState;
use crate::kernel::task::{spawn_cpumap_kthread, spawn_napi_kthreads, spawn_tasks, Pending, Proc, ProcState};
use crate::metrics::stats::Stats;
use crate::metrics::trace::{Trace, TraceSink};
use crate::net::core::backlog::{Backlog, Fifo};
use crate::net::core::skbuff::PacketSlab;
use crate::net::NetStack;
use crate::policies::{Concurrency, Xdp};
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
    /// A mechanism's timer (`crate::hooks`: `id` names the mechanism and its timer), if `gen` is
    /// still live.
    Mech {
        id: u32,
        gen: u32,
    },
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
/// (`kernel/app_state.rs`), `stats` and `trace` (`metrics/`), and the mechanisms `mech` (the
/// registry's, `M`). Their behaviour is `impl Host` blocks in the same folders.
pub struct Host<M> {
    pub cfg: HostConfig,
    /// The event queue; its clock (`q.now()`) is the simulated time.
    pub q: EventQueue<Ev>,
    pub cpus: Vec<Cpu>,
    pub procs: Vec<Proc>,
    pub sched: SchedState,
    /// The kernel concurrency model (`kernel.concurrency`), or the mechanisms' (`Mech`).
    pub conc: Concurrency,
    pub dev: NetDevs,
    pub net: NetStack,
    pub skb: PacketSlab,
    pub wire: Wire,
    /// Multi-threaded programs (`kernel/app.rs`).
    pub apps: Vec<App>,
    pub mech: M,
    pub stats: Stats,
    pub trace: Option<Trace>,
}

/// The profile's costs as this kernel pays them: fine-grained SMP locking (`smp_lock_factor`)
/// on the locking-sensitive costs under `concurrency = "smp"` only; the other models get their
/// locking from their own lock model (`kernel/locking`), a uniprocessor kernel none.
fn effective_costs(cfg: &HostConfig) -> Costs {
    let mut c = cfg.profile.costs.clone();
    let f = cfg.profile.mechanisms.smp_lock_factor;
    if cfg.kernel.concurrency.is("smp") && f != 1.0 {
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

impl<M: Mechanisms> Host<M> {
    /// The simulated time: the event queue's clock.
    #[inline(always)]
    pub fn now(&self) -> Time {
        self.q.now()
    }

    /// Post `ev` for time `at`: the hub dispatches it then (`step`).
    #[inline(always)]
    pub fn post(&mut self, at: Time, ev: Ev) {
        self.q.schedule(at, ev)
    }

    pub fn new(cfg: HostConfig) -> Host<M> {
        let mut cfg = cfg;
        cfg.profile.costs = effective_costs(&cfg);
        let streams = RngStreams::new(cfg.seed);
        let topo = &cfg.profile.topology;
        let ncpu = cfg.online_cpus();
        let mut mech = M::new(&Boot { cfg: &cfg, ncpu, streams: &streams });
        let mut cpus = Vec::with_capacity(ncpu);
        for c in 0..ncpu as u32 {
            let core = c / topo.threads_per_core;
            let pkg = core / topo.cores_per_package;
            let llc = match topo.llc {
                LlcScope::PerCore => core,
                LlcScope::PerPackage => pkg,
            };
            let k = &cfg.kernel;
            let backlog = match mech.backlog(c as usize, streams.stream(&format!("backlog/{c}"))) {
                Some(b) => Backlog::Mech(b),
                None => Backlog::Fifo(Fifo::new(k.netdev_max_backlog as usize, k.rx_path == RxPath::Legacy)),
            };
            cpus.push(Cpu::new(core, llc, backlog));
        }
        let mut dev = NetDevs::new(&cfg, ncpu, streams.stream("irq-routing"));
        let (mut procs, socks, port_sock, ksoftirqd) = spawn_tasks(&cfg, ncpu, &streams);
        for (c, pid) in ksoftirqd.into_iter().enumerate() {
            cpus[c].ksoftirqd = pid;
        }
        let mut kthreads = Vec::new();
        for (tag, k) in mech.kthreads(ncpu) {
            let mut t = Proc::new(
                k.name.clone(),
                None,
                NONE,
                0,
                Some(k.rt_prio),
                1u128 << k.cpu,
                k.cpu,
                streams.stream(&k.name),
            );
            t.pinned_kthread = true;
            t.mech_kthread = tag;
            t.state = ProcState::Sleeping;
            t.pending = Pending::Slept;
            kthreads.push((tag, procs.len() as Pid));
            procs.push(t);
        }
        let cpumap_kthread =
            cfg.kernel.xdp.is("cpumap").then(|| spawn_cpumap_kthread(&cfg.kernel, &mut procs, &streams));
        if cfg.kernel.napi_threaded {
            for (q, pid) in spawn_napi_kthreads(&cfg, &mut procs, &streams).into_iter().enumerate() {
                dev.queues[q].napi_thread = pid;
            }
        }
        mech.booted(&kthreads, procs.len());
        let wire = Wire::new(&cfg, &streams);
        let mut net = NetStack::new(&cfg, socks, port_sock, &procs, &streams);
        net.xdp = Xdp::new(&cfg.kernel, mech.xdp_attached());
        if let (Some(cm), Some(pid)) = (net.cpumap.as_mut(), cpumap_kthread) {
            cm.kthread = pid;
        }
        let stats = Stats::new(&cfg, ncpu, procs.len());
        let conc = Concurrency::new(&cfg.kernel.concurrency, &cfg.profile.mechanisms, mech.has_lock());
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
            mech,
            stats,
            trace: None,
            cfg,
        };
        host.open_connections();
        host.init_apps();
        host.set_routes();
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
            let off = self.tick_ns() * c as u64 / n as u64;
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
        M::start(self);
        self.q.schedule(Time(self.cfg.sample_interval_ns), Ev::Sample);
        M::start_timers(self);
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
                self.q.schedule(self.q.now() + Time(self.tick_ns()), Ev::Tick { cpu });
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
            Ev::Mech { id, gen } => M::poll(self, id, gen),
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

/// The handle mechanisms act through (`crate::hooks`): each operation is the host's own, named
/// as the kernel names it; nothing else of the host is theirs to reach.
impl<M: Mechanisms> Reach<M> for Host<M> {
    #[inline(always)]
    fn mechs(&mut self) -> &mut M {
        &mut self.mech
    }
    #[inline(always)]
    fn mechs_ref(&self) -> &M {
        &self.mech
    }
}

impl<M: Mechanisms> Timers for Host<M> {
    #[inline(always)]
    fn now(&self) -> Time {
        self.q.now()
    }
    fn poll_at(&mut self, id: u32, gen: u32, at: Time) {
        self.q.schedule(at, Ev::Mech { id, gen });
    }
}

impl<M: Mechanisms> Tasks for Host<M> {
    fn ncpus(&self) -> usize {
        self.cpus.len()
    }
    fn curr(&self, cpu: usize) -> Option<Pid> {
        self.cpus[cpu].curr
    }
    fn task_state(&self, pid: Pid) -> ProcState {
        self.procs[pid as usize].state
    }
    fn set_task_state(&mut self, pid: Pid, state: ProcState) {
        self.procs[pid as usize].state = state;
    }
    fn task_cpu(&self, pid: Pid) -> usize {
        self.procs[pid as usize].cpu as usize
    }
    fn task_group(&self, pid: Pid) -> Option<usize> {
        let g = self.procs[pid as usize].group;
        (g != NONE).then_some(g as usize)
    }
    fn task_nice(&self, pid: Pid) -> i8 {
        self.procs[pid as usize].nice
    }
    fn task_sock_fill(&self, pid: Pid) -> Option<(u32, u32)> {
        let s = self.procs[pid as usize].sock;
        (s != NONE).then(|| {
            let sk = &self.net.socks[s as usize];
            (sk.used, sk.rcvbuf)
        })
    }
    fn task_pending(&self, pid: Pid) -> Pending {
        self.procs[pid as usize].pending
    }
    fn set_task_pending(&mut self, pid: Pid, pending: Pending) {
        self.procs[pid as usize].pending = pending;
    }
    fn wake_up(&mut self, pid: Pid, waker: usize) {
        Host::<M>::wake_up(self, pid, waker, true);
    }
    fn enqueue_woken(&mut self, pid: Pid) {
        Host::<M>::enqueue_woken(self, pid);
    }
    fn resched(&mut self, cpu: usize) {
        Host::<M>::resched(self, cpu);
    }
    fn dequeue(&mut self, cpu: usize, pid: Pid) {
        Host::<M>::dequeue(self, cpu, pid);
    }
    fn schedule(&mut self, cpu: usize) {
        Host::<M>::schedule(self, cpu);
    }
    fn kthread_unit(&mut self, cpu: usize, pid: Pid, pending: Pending, cost_ns: u64) {
        Host::<M>::kthread_unit(self, cpu, pid, pending, cost_ns);
    }
    fn task_timer_at(&mut self, pid: Pid, at: Time) {
        let gen = self.procs[pid as usize].timer.arm();
        self.q.schedule(at, Ev::ProcTimer { pid, gen });
    }
    fn napi_kthreads(&self) -> Vec<(Pid, usize)> {
        self.dev
            .queues
            .iter()
            .filter(|q| q.napi_thread != NONE)
            .map(|q| (q.napi_thread, self.dev.nics[q.nic as usize].cfg.irq_cpus.first().map_or(0, |&c| c as usize)))
            .collect()
    }
    fn kthread_set_cpu(&mut self, pid: Pid, cpu: usize) {
        self.napi_kthread_set_cpu(pid, cpu);
    }
    fn kthread_set_class(&mut self, pid: Pid, rt: Option<u8>) {
        self.napi_kthread_set_class(pid, rt);
    }
}

impl<M: Mechanisms> Packets for Host<M> {
    fn drop_pkt(&mut self, pkt: PktId, place: DropPlace) {
        Host::<M>::drop_pkt(self, pkt, place);
    }
    fn drops(&self, place: DropPlace) -> u64 {
        self.stats.drops[place as usize]
    }
    fn pkt_cpu(&self, pkt: PktId) -> u32 {
        self.skb.pkts[pkt as usize].rx_cpu
    }
    fn set_pkt_cpu(&mut self, pkt: PktId, cpu: u32) {
        self.skb.pkts[pkt as usize].rx_cpu = cpu;
    }
    fn pkt_forwarded(&self, pkt: PktId) -> bool {
        self.skb.pkts[pkt as usize].fwd != NONE
    }
    fn proto_cost(&self, pkt: PktId) -> u64 {
        Host::<M>::proto_cost(self, pkt)
    }
    fn xmit_cost(&self) -> u64 {
        Host::<M>::xmit_cost(self)
    }
    fn forward_stage_cost(&self) -> u64 {
        let c = &self.cfg.profile.costs;
        c.ip_forward_ns + c.netif_rx_ns
    }
    fn remote_touch(&mut self, cpu: usize, pkt: PktId) -> u64 {
        let last = self.skb.pkts[pkt as usize].rx_cpu;
        if last == NONE || last as usize == cpu {
            return 0;
        }
        let cache = self.cfg.profile.cache;
        self.stats.llc_load_misses += cache.remote_packet_llc_load_misses;
        self.stats.llc_store_misses += cache.remote_packet_llc_store_misses;
        cache.remote_packet_ns
    }
    fn deliver(&mut self, cpu: usize, pkt: PktId) {
        self.protocol_deliver(cpu, pkt);
    }
    fn forward_xmit(&mut self, pkt: PktId) {
        Host::<M>::forward_xmit(self, pkt);
    }
    fn top_level_sockets(&self) -> (u64, u64) {
        let top = self.net.socks.iter().map(|s| s.level).max().unwrap_or(0);
        let socks = self.net.socks.iter().filter(|s| top > 0 && s.level == top);
        socks.fold((0, 0), |(d, u), s| (d + s.drops, u + u64::from(s.used)))
    }
    fn backlog_high_load_any(&self) -> bool {
        self.cpus.iter().any(|c| c.backlog.high_load())
    }
    fn backlog_len_max(&self) -> u64 {
        self.cpus.iter().map(|c| c.backlog.len() as u64).max().unwrap_or(0)
    }
    fn irq_queues(&self) -> usize {
        self.dev.queues.len()
    }
    fn irq_affinity_empties(&self, cpus: u128) -> bool {
        self.dev.queues.iter().any(|q| q.router.base & !cpus == 0)
    }
    fn irq_mask_cpus(&mut self, cpus: u128) {
        for q in &mut self.dev.queues {
            let ok = q.router.set_affinity(q.router.base & !cpus);
            debug_assert!(ok, "suppression left an empty IRQ affinity");
        }
    }
}
