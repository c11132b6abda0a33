//! The `Host`: all model state, the event enum, and the main loop. Behaviour lives in the sibling
//! modules as `impl Host` blocks (cpu, nic, rx, proto, sched, process); this file wires them up.
//! Small shared types live in `types.rs`, the policy enums in `policies.rs`: neither imports this
//! hub, so no policy file depends on `Host`.

use crate::config::*;
use crate::irq_route::IrqRouter;
use crate::concurrency::{Stage, SymbioseThread};
use crate::policies::{Backlog, Balancer, Concurrency, WakePlacement, Xdp};
use crate::slots::SlotPlan;
use crate::stats::Stats;
use crate::tcp_conn::Conn;
use crate::trace::{Trace, TraceSink};
use crate::txring::TxQueue;
use crate::types::*;
use hostsim_engine::{EventQueue, Histogram, Rng, RngStreams, Time, Timer};
use hostsim_workload::{Emit, Feedback, Program, ProgramConfig, Source, SourceConfig, SourceKind};
use std::collections::{BTreeMap, VecDeque};

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
    CpuDone { cpu: u16, gen: u32 },
    /// Timer interrupt.
    Tick { cpu: u16 },
    /// An external source wants to run.
    SourceWake { src: u32, gen: u32 },
    /// A frame reaches the NIC port (after the switch).
    FrameArrive { pkt: PktId },
    /// A frame from a source with a long link reaches the switch in front of NIC `nic`.
    AtSwitch { pkt: PktId, nic: u32 },
    /// A frame from the host reaches an external source: `Host::feedback`'s entry `slot` says
    /// which source, what it learns and the payload bytes (kept out of the event so that every
    /// event stays 12 bytes: the queue moves events on every schedule and pop).
    Feedback { slot: u32 },
    /// The TX ring of NIC queue `q` drained (if `gen` is still live): the TxNoBuf interrupt cause.
    TxDrain { q: u32, gen: u32 },
    /// A frame on queue `q`'s TX ring that asked for a TX-done interrupt has left.
    TxIrq { q: u32 },
    /// A TCP connection's retransmission timer.
    Rto { conn: u32, gen: u32 },
    /// A speed-regulated process's slot timer (start or end of its allocated slots).
    SlotTimer { pid: Pid, gen: u32 },
    /// Interrupt-moderation timer of a NIC queue.
    Coalesce { q: u32, gen: u32 },
    /// A sleeping process's timer.
    ProcTimer { pid: Pid, gen: u32 },
    /// A process starts (its `start_ms`).
    ProcStart { pid: Pid },
    /// TCP delayed-ACK timer of a socket.
    DelAck { sock: u32, gen: u32 },
    /// A scheduled nice change.
    Renice { pid: Pid, nice: i8 },
    /// Delayed-ACK timer of a connected endpoint (`endpoint.rs`).
    EpDelAck { ep: u32, gen: u32 },
    /// The XDP agent's periodic poll of the counters (`kernel.xdp = "pbq"`).
    XdpPoll,
    Sample,
    WarmupEnd,
    End,
}

// Every event is small: the queue copies it on schedule and pop (see `Ev::Feedback`).
const _: () = assert!(std::mem::size_of::<Ev>() <= 12 && std::mem::size_of::<Option<Ev>>() <= 12);

/// Frames from the host in flight to a source: (source, what it learns, payload bytes), in
/// slots reused through a free list (an `Ev::Feedback` names its slot).
#[derive(Default)]
pub struct FeedbackSlab {
    slots: Vec<(u32, Feedback, u32)>,
    free: Vec<u32>,
}

impl FeedbackSlab {
    pub fn put(&mut self, src: u32, fb: Feedback, bytes: u32) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = (src, fb, bytes);
                i
            }
            None => {
                self.slots.push((src, fb, bytes));
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// The entry in `slot`, left in place.
    pub fn peek(&self, slot: u32) -> (u32, Feedback, u32) {
        self.slots[slot as usize]
    }

    pub fn take(&mut self, slot: u32) -> (u32, Feedback, u32) {
        self.free.push(slot);
        self.slots[slot as usize]
    }
}

/// What the current unit of a frame is doing; its effect happens when it completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    IrqEntry(IrqSrc),
    /// Legacy handler: driver + netif_rx for one frame.
    IrqFrame { q: u32, pkt: PktId },
    SoftirqEntry,
    /// NAPI poll of one frame; `proto` = protocol processing done in the same unit.
    Poll { pkt: PktId, proto: bool },
    /// Protocol processing of a packet taken from the backlog.
    Proto { pkt: PktId },
    /// NAPI poll of one frame that the XDP program drops (driver + program run).
    XdpDrop { pkt: PktId },
    /// TX clean-up of `n` completed frames of queue `q`'s ring in the NIC's interrupt handler
    /// (2.4 path); `rx`: the handler then goes on with the queue's RX frames.
    TxCleanIrq { q: u32, n: u32, rx: bool },
    /// TX clean-up of `n` completed frames of queue `q`'s ring at the start of its NAPI poll.
    TxPoll { q: u32, n: u32 },
    /// Context switch into the CPU's current process.
    Switch,
    /// The current process's unit (see `Proc::unit`).
    ProcUnit,
}

#[derive(Clone, Copy, Debug)]
pub struct Frame {
    pub work: Work,
    pub state: CpuState,
    pub remaining: u64,
}

impl Frame {
    pub fn level(&self) -> Level {
        match self.work {
            Work::IrqEntry(_) | Work::IrqFrame { .. } | Work::TxCleanIrq { .. } => Level::Hardirq,
            Work::SoftirqEntry | Work::Poll { .. } | Work::Proto { .. } | Work::TxPoll { .. } | Work::XdpDrop { .. } => {
                Level::Softirq
            }
            Work::Switch | Work::ProcUnit => Level::Process,
        }
    }
}

// Field order (`repr(C)`): what every change of what runs touches (`account`, `start_top`,
// `pause_top`, `cpu_done`) is in the first cache line, the NET_RX and softnet state next, the
// scheduler's after. The default layout spread the first group over three lines of a `Cpu`'s
// seven. Layout only: no behaviour depends on it.
#[repr(C, align(64))]
pub struct Cpu {
    // -- line 0: running and accounting
    pub stack: Vec<Frame>,
    pub curr: Option<Pid>,
    pub done: Timer,
    pub seg_start: Time,
    /// When the top frame's current run (since start or resume) began.
    pub run_start: Time,
    pub acct_state: CpuState,
    /// The running NET_RX pass was started by ksoftirqd (task context), not at IRQ exit.
    pub sirq_ksoftirqd: bool,
    /// The top frame waits for the kernel-concurrency model's lock (state `spin`).
    pub spinning: bool,
    pub need_resched: bool,
    // NET_RX state of the running pass
    pub softirq_pending: bool,
    pub backlog_scheduled: bool,
    // -- line 1: time by state, NET_RX pass
    pub acct_ns: [u64; N_STATES],
    pub sirq_budget: u32,
    pub napi_quota: u32,
    pub ksoftirqd: Pid,
    // -- softnet
    pub sirq_pass_start: Time,
    pub poll_list: VecDeque<Napi>,
    pub backlog: Backlog,
    pub input_queue_head: u64,
    pub input_queue_tail: u64,
    pub pending_irqs: VecDeque<IrqSrc>,
    pub sirq_start: Time,
    pub sirq_restarts: u32,
    /// Frames handled by the running legacy IRQ handler.
    pub irq_frames: u32,
    pub irqs: u64,
    // -- scheduler
    pub core: u32,
    pub llc: u32,
    pub rq_cfs: Vec<Pid>,
    pub rq_rt: Vec<Pid>,
    pub min_vruntime: u64,
    pub curr_since: Time,
    pub next_balance: Time,
    /// When the CPU last switched from a task to idle (2.4 `irq_stat[cpu].idle_timestamp`, set
    /// in cpu_idle(); interrupts on an idle CPU don't reset it).
    pub idle_since: Time,
}

/// An entry of a CPU's NAPI poll list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Napi {
    Queue(u32),
    Backlog,
}

pub struct NicQueue {
    pub nic: u32,
    pub ring: VecDeque<PktId>,
    pub ring_max: u32,
    pub irq_enabled: bool,
    /// Interrupt raised and not yet finished (pending on a CPU or its handler running).
    pub irq_active: bool,
    pub napi_scheduled: bool,
    pub since_irq: u32,
    pub coalesce: Timer,
    /// The TX half of the queue pair: device queue and TX ring (`txring.rs`, `tx.rs`).
    pub tx: TxQueue,
    /// NAPI: the TX ring was cleaned in the poll now running (once per poll call, as
    /// `ixgbe_poll` does at its start).
    pub tx_polled: bool,
    /// When the queue last interrupted (for throttling).
    pub last_irq: Time,
    pub router: IrqRouter,
    /// RFS device flow table: (cpu, last_qtail) per hash bucket.
    pub rflow: Vec<(u32, u64)>,
}

pub struct Nic {
    pub cfg: NicConfig,
    pub first_queue: u32,
    pub ns_per_byte: f64,
    /// When the switch→host wire is next free.
    pub rx_wire_free: Time,
    /// When the host→switch wire, fed by every TX ring of the NIC (`NicQueue::tx`), is next free.
    pub tx_wire_free: Time,
    /// Where packets arriving here that no local socket takes are forwarded: the sink source
    /// (`Host::srcs` index) on the route's output NIC, NONE if no route.
    pub fwd_to: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcState {
    NotStarted,
    Runnable,
    BlockedRecv,
    /// Blocked in send() on a full send buffer.
    BlockedSend,
    Sleeping,
    /// A speed-regulated process outside its allocated slots (not on any run queue).
    Throttled,
    KsoftirqdIdle,
    Exited,
}

/// What a process's current unit will report when it completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pending {
    Start,
    Computed,
    Received { bytes: u32 },
    Replied { bytes: u32 },
    Slept,
    Yielded,
    NiceSet { nice: i8 },
    /// ksoftirqd: check for pending softirqs.
    Ksoftirqd,
    /// Blocked in recv(): retry it when woken.
    RetryRecv { max_bytes: u32 },
    /// Symbiose thread: a splice of a local and a global queue (holds the global-queue lock).
    Exchange,
    /// Symbiose stage thread: one buffer through its stage.
    Stage { pkt: PktId, stage: Stage },
    /// A unit of send(): the copy and/or one segment's output; `tx` segments reach the device
    /// when it completes.
    SendUnit { tx: u32 },
    /// Blocked in send(): continue it when woken.
    RetrySend,
    /// send() has returned `bytes`.
    Sent { bytes: u32 },
    /// A system call of a multi-threaded program's thread (`app.rs`).
    App(crate::app_state::AppPending),
}

/// A send() in progress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendOp {
    pub total: u32,
    pub left: u32,
    /// No byte of this call is queued yet (`per_send` starts a new segment).
    pub first: bool,
}

// Field order (`repr(C)`) and 64-byte alignment: the fields that CPU accounting, wake-ups,
// receives and a process's units touch on every packet come first, in five cache lines (the
// wait histogram's hot part, its buffer and sum, included), and the rest (configuration, names,
// state of other kinds of programs) after. The default layout put the fields `account_task`
// alone reads (pending, weight, vruntime, cpu_ns, speed, rt) in four different lines of a
// `Proc`'s nine, and the 64-CPU bench case has ~110 processes (cachegrind's per-line misses
// guided the grouping). Layout only: no behaviour depends on it.
#[repr(C, align(64))]
pub struct Proc {
    // -- line 0: accounting (`account_task`, `charge_process`) and the unit in progress
    pub state: ProcState,
    pub unit_state: CpuState,
    pub nice: i8,
    pub pinned_kthread: bool,
    pub rt: Option<u8>,
    /// A Symbiose exchange thread (`functional`), and which.
    pub symbiose: Option<SymbioseThread>,
    pub sock: u32,
    pub cpu: u32,
    pub pending: Pending,
    pub weight: u64,
    pub vruntime: u64,
    pub cpu_ns: u64,
    pub unit_remaining: u64,
    // -- line 1: speed regulation (tested at every accounting of a task), receive counts
    /// Tender speed regulation (None: unregulated) and its slot timer.
    pub speed: Option<SlotPlan>,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub last_ran: Option<u32>,
    // -- line 2: replies, wake-up and scheduling
    /// Where the last received message came from (for replies).
    pub reply_to: (u32, u32, u64),
    pub enq_seq: u64,
    /// When it last left a CPU in `schedule()` (the O(1) scheduler's `sleep_timestamp`).
    pub left_cpu_at: Time,
    pub timer: Timer,
    pub migrations: u64,
    pub tx_packets: u64,
    /// Payload bytes sent (send() returned, or replies).
    pub tx_bytes: u64,
    // -- line 3: the program
    pub program: Option<Program>,
    /// Its TCP connection (`Host::conns`), NONE if none.
    pub conn: u32,
    /// Index of the `[[process]]` entry it was started from (NONE for kernel threads).
    pub group: u32,
    // -- line 4: affinity, then the wait histogram (its buffer and sum first)
    pub allowed: u128,
    pub wait: Histogram,
    // -- the rest: not touched per packet by the common paths
    pub send: SendOp,
    pub slot_timer: Timer,
    /// A Symbiose thread: the period boundary its current (or last) activation belongs to.
    pub period_start_ns: u64,
    /// A thread of a multi-threaded program: its `Host::apps` index (NONE: not one) and
    /// thread number.
    pub app: u32,
    pub thread: u32,
    pub name: String,
    pub rng: Rng,
}

/// Per-flow TCP receive state.
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpFlowState {
    pub rcv_nxt: u64,
    pub unacked_segs: u32,
}

// Field order (`repr(C)`, 64-byte aligned): what every datagram's enqueue and read touch comes
// first, in two cache lines (the default layout used all three of a `Sock`'s lines), the TCP-only
// state after. Layout only: no behaviour depends on it.
#[repr(C, align(64))]
pub struct Sock {
    // -- line 0: the receive queue and its accounting
    pub queue: VecDeque<PktId>,
    pub rcvbuf: u32,
    pub used: u32,
    /// Bytes of the head segment already read (stream sockets).
    pub head_off: u32,
    pub hash: u32,
    pub port: u16,
    pub tcp: bool,
    /// Priority level (19 − nice) of the highest-priority process bound to the socket: the
    /// port → priority table of `ozaki-pbq`, filled at bind() and updated at nice().
    pub level: u8,
    pub len_changed: Time,
    // -- line 1: readers and statistics
    pub waiters: VecDeque<Pid>,
    pub len_area: u128,
    /// Packets dropped at this socket (receive buffer full).
    pub drops: u64,
    pub enqueued: u64,
    // -- TCP
    pub delack: Timer,
    /// The CPU that armed `delack` (its callback sends from there, `Host::xmit_cpu`).
    pub delack_cpu: u32,
    pub flows: BTreeMap<(u32, u32), TcpFlowState>,
    /// Sending connections of this socket by (source, flow) of their far end.
    pub conns: BTreeMap<(u32, u32), u32>,
}

impl Sock {
    /// An empty socket bound to `port` with a receive buffer of `rcvbuf` bytes.
    pub fn new(port: u16, tcp: bool, rcvbuf: u32) -> Self {
        Sock {
            port,
            tcp,
            rcvbuf,
            used: 0,
            queue: VecDeque::new(),
            head_off: 0,
            waiters: VecDeque::new(),
            hash: 0,
            flows: BTreeMap::new(),
            level: 0,
            drops: 0,
            delack: Timer::new(),
            delack_cpu: 0,
            conns: BTreeMap::new(),
            enqueued: 0,
            len_area: 0,
            len_changed: Time::ZERO,
        }
    }
}

// One cache line per packet (`align(64)`, 56 bytes of fields): a queued packet's first touch
// after a wait (the NIC ring, a backlog, a socket queue) is a cache miss on the 64-CPU host, and
// a 96-byte packet straddled two lines. The fields only TCP packets use are beside the slab, in
// `PacketTcp`. Layout only: no behaviour depends on it.
#[repr(align(64))]
pub struct Packet {
    pub src: u32,
    pub flow: u32,
    pub seq: u64,
    pub bytes: u32,
    pub tcp: bool,
    /// False once freed (slab bookkeeping).
    pub live: bool,
    pub dst_port: u16,
    pub hash: u32,
    pub queue: u32,
    pub rx_cpu: u32,
    /// The sink it is forwarded to (`Host::srcs` index), NONE if it is for a local socket.
    pub fwd: u32,
    pub t_sock: Time,
    /// When the frame reached the NIC.
    pub t_nic: Time,
}

// (A packet must stay within one cache line: see above.)
const _: () = assert!(std::mem::size_of::<Packet>() == 64);

/// A TCP packet's TCP fields, kept in `Host::pkts_tcp` at the packet's index (written when a TCP
/// packet is allocated; read through [`Host::pkt_tcp`], which gives a UDP packet the defaults:
/// no ACK, window 0, no flags, no tag).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketTcp {
    /// A TCP acknowledgement (pure ACK to a sending connection) and its window.
    pub ack: Option<u64>,
    /// The application's label of the message the segment carries (`Emit::tag`).
    pub tag: u64,
    pub win: u32,
    /// Segments an ACK's processing lets out (decided when its unit starts).
    pub tx_segs: u32,
    /// TCP flags beyond ACK (`hostsim_workload::http::FLAG_*`).
    pub flags: u8,
}

pub struct Src {
    pub name: String,
    pub src: Source,
    pub nic: u32,
    pub dst_port: u16,
    pub dst_port_per_flow: bool,
    pub link_ns_per_byte: f64,
    /// When each client's link is next free.
    pub link_free: Vec<Time>,
    /// When each client's link from the switch (frames from the host) is next free.
    pub down_free: Vec<Time>,
    /// One-way propagation delay of the client links.
    pub link_delay_ns: u64,
    /// All frames go to `dst_port` (HTTP clients and origins talk to one listening port).
    pub fixed_port: bool,
    pub timer: Timer,
    pub rng: Rng,
    /// The last frame size's serialisation times, (payload, tcp) -> (link ns, port ns): a
    /// rate source sends one size, so the float products and rounding run once, not per frame.
    pub wire_cache: Option<(u32, bool, u64, u64)>,
    /// Per flow (index = flow, the first 4096): its client, port, RSS hash and queue, computed
    /// at its first frame (`Src::flow_wire` in nic.rs).
    pub flow_cache: Vec<FlowWire>,
}

/// What a source's frames of one flow share: the client machine sending them, the destination
/// port, the RSS hash and the RX queue (within the whole host). All follow from the flow and the
/// source's fixed configuration. `hash` 0 marks an empty entry (`flow_hash` is never 0).
#[derive(Clone, Copy, Default)]
pub struct FlowWire {
    pub client: u32,
    pub dst_port: u16,
    pub hash: u32,
    pub queue: u32,
}


/// The simulated host and its environment.
pub struct Host {
    pub cfg: HostConfig,
    pub q: EventQueue<Ev>,
    pub now: Time,
    pub cpus: Vec<Cpu>,
    pub nics: Vec<Nic>,
    pub queues: Vec<NicQueue>,
    pub procs: Vec<Proc>,
    pub socks: Vec<Sock>,
    pub port_sock: Vec<u32>,
    pub srcs: Vec<Src>,
    pub pkts: Vec<Packet>,
    /// TCP fields of the TCP packets of `pkts`, same index (`PacketTcp`).
    pub pkts_tcp: Vec<PacketTcp>,
    pub free_pkts: Vec<PktId>,
    /// TCP connections of in-host senders (`tcp_conn.rs`, `tcp_out.rs`).
    pub conns: Vec<Conn>,
    /// Slots of closed connections, reused by `tcp_connect`.
    pub free_conns: Vec<u32>,
    /// Connected and listening sockets of event-driven programs, their poll sets
    /// (`endpoint.rs`, `poll.rs`).
    pub eps: crate::sockets::Endpoints,
    /// Multi-threaded programs (`app.rs`).
    pub apps: Vec<crate::app_state::App>,
    pub sock_flow: Vec<u32>,
    pub rps_cpus: Vec<u32>,
    pub wake: WakePlacement,
    /// The era's load balancer (`kernel.scheduler`).
    pub balancer: Balancer,
    /// Per-CPU LLC masks and core boundaries (fixed), and the idle CPUs kept up to date by
    /// `sched.rs` (`placement::SchedMasks`).
    pub masks: crate::placement::SchedMasks,
    /// The kernel concurrency model (`kernel.concurrency`): its lock and Symbiose's queues.
    pub conc: Concurrency,
    pub stats: Stats,
    pub trace: Option<Trace>,
    pub emit_buf: Vec<Emit>,
    /// The CPU whose work hands frames to the device now (`smp_processor_id()` for the TX
    /// queue choice, `tx.rs`): set as each unit of work completes, and by timers to the CPU that
    /// armed them (Linux runs a timer on the CPU whose base holds it, `mod_timer`).
    pub xmit_cpu: u32,
    /// Frames from the host on their way to a source (`Ev::Feedback`).
    pub feedback: FeedbackSlab,
    pub rng_route: Rng,
    pub rng_suppress: Rng,
    /// Key of the flow hash (RSS, RPS, RFS, flow limit): 0, or drawn per run (per boot).
    pub hash_key: u64,
    /// CPUs currently taken out of the NICs' IRQ affinity by interrupt suppression.
    pub suppressed: u128,
    /// The program at the driver's entry point (`kernel.xdp`).
    pub xdp: Xdp,
    /// Counters at the XDP agent's previous poll: backlog drops, top-level socket drops.
    pub xdp_last_poll: (u64, u64),
    pub tick_ns: u64,
    pub enq_seq: u64,
    pub ended: bool,
}

/// The profile's costs as this kernel pays them: fine-grained SMP locking (`smp_lock_factor`)
/// on the locking-sensitive costs under `concurrency = "smp"` only; the other models get their
/// locking from their own lock model (`concurrency.rs`), a uniprocessor kernel none.
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

/// The highest priority level among the processes bound to socket `s`.
pub fn sock_level(procs: &[Proc], s: u32) -> u8 {
    procs.iter().filter(|p| p.sock == s).map(|p| level_of_nice(p.nice)).max().unwrap_or(0)
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
            cpus.push(Cpu {
                stack: Vec::with_capacity(8),
                seg_start: Time::ZERO,
                run_start: Time::ZERO,
                acct_state: CpuState::Idle,
                acct_ns: [0; N_STATES],
                done: Timer::new(),
                curr: None,
                need_resched: false,
                pending_irqs: VecDeque::with_capacity(8),
                idle_since: Time::ZERO,
                irq_frames: 0,
                softirq_pending: false,
                sirq_budget: 0,
                sirq_pass_start: Time::ZERO,
                sirq_start: Time::ZERO,
                sirq_restarts: 0,
                sirq_ksoftirqd: false,
                ksoftirqd: NONE,
                rq_cfs: Vec::with_capacity(16),
                rq_rt: Vec::new(),
                min_vruntime: 0,
                curr_since: Time::ZERO,
                next_balance: Time::ZERO,
                core,
                llc,
                backlog: Backlog::new(cfg.kernel.backlog, &cfg.kernel, c as usize, streams.stream(&format!("backlog/{c}"))),
                poll_list: VecDeque::with_capacity(8),
                napi_quota: 0,
                backlog_scheduled: false,
                input_queue_head: 0,
                input_queue_tail: 0,
                irqs: 0,
                spinning: false,
            });
        }
        let mut nics = Vec::new();
        let mut queues = Vec::new();
        for (i, n) in cfg.nics.iter().enumerate() {
            let first_queue = queues.len() as u32;
            for qi in 0..n.queues {
                let router = IrqRouter::new(n, qi, ncpu);
                queues.push(NicQueue {
                    nic: i as u32,
                    ring: VecDeque::with_capacity(n.rx_ring as usize),
                    ring_max: n.rx_ring,
                    irq_enabled: true,
                    irq_active: false,
                    napi_scheduled: false,
                    since_irq: 0,
                    coalesce: Timer::new(),
                    tx: TxQueue::new(n.tx_ring, n.tx_queue_len, n.tx_irq_ring_level),
                    tx_polled: false,
                    last_irq: Time::ZERO,
                    router,
                    rflow: if cfg.kernel.rfs {
                        vec![(NONE, 0); cfg.kernel.rfs_entries as usize]
                    } else {
                        Vec::new()
                    },
                });
            }
            nics.push(Nic {
                cfg: n.clone(),
                first_queue,
                ns_per_byte: 8_000.0 / n.rate_mbps as f64,
                rx_wire_free: Time::ZERO,
                tx_wire_free: Time::ZERO,
                fwd_to: NONE,
            });
        }

        let mut port_sock = vec![NONE; 65536];
        let mut socks: Vec<Sock> = Vec::new();
        let mut procs = Vec::new();
        // `instances` expand into one process each; instance k binds port + k.
        let instances = cfg.processes.iter().enumerate().flat_map(|(i, p)| (0..p.instances.max(1)).map(move |k| (i, k)));
        for (i, k) in instances {
            let p = &cfg.processes[i];
            if p.program == hostsim_workload::ProgramKind::Accelerator {
                // A multi-threaded program: one task per `[[process.thread]]`, named
                // `<process>/<thread>`, with the process's nice, class and CPUs (a thread's own
                // `cpus` override them); `init_apps` (app.rs) builds the program around them.
                for th in &p.threads {
                    let allowed = cpu_mask(if th.cpus.is_empty() { &p.cpus } else { &th.cpus }, ncpu);
                    let name = format!("{}/{}", p.name, th.name);
                    let rt = match p.sched {
                        SchedPolicy::Fifo => Some(p.rt_priority.max(1)),
                        SchedPolicy::Normal => None,
                    };
                    let stream = streams.stream(&format!("process/{i}/{name}"));
                    procs.push(Proc::new(name, None, NONE, p.nice, rt, allowed, allowed.trailing_zeros(), stream));
                    procs.last_mut().expect("pushed").group = i as u32;
                }
                continue;
            }
            let prog = Program::new(ProgramConfig {
                kind: p.program,
                work_ns: p.work_ns,
                work_dist: p.work_dist,
                read_bytes: p.read_bytes,
                reply_bytes: p.reply_bytes,
                sleep_ns: p.sleep_ns,
                unit_bytes: p.unit_bytes,
                total_bytes: p.total_bytes,
            });
            let mut sock = NONE;
            let port = p.port.map(|port| port + k as u16);
            if let (true, Some(port)) = (prog.uses_socket(), port) {
                if port_sock[port as usize] == NONE {
                    port_sock[port as usize] = socks.len() as u32;
                    socks.push(Sock::new(port, prog.is_tcp(), p.rcvbuf_bytes.unwrap_or(cfg.kernel.rcvbuf_bytes)));
                }
                sock = port_sock[port as usize];
            }
            let allowed = cpu_mask(&p.cpus, ncpu);
            let name = if p.instances > 1 { format!("{}-{k}", p.name) } else { p.name.clone() };
            let stream = if k == 0 { format!("process/{i}/{}", p.name) } else { format!("process/{i}/{name}") };
            procs.push(Proc::new(
                name,
                Some(prog),
                sock,
                p.nice,
                match p.sched {
                    SchedPolicy::Fifo => Some(p.rt_priority.max(1)),
                    SchedPolicy::Normal => None,
                },
                allowed,
                allowed.trailing_zeros(),
                streams.stream(&stream),
            ));
            procs.last_mut().expect("pushed").group = i as u32;
        }
        for c in 0..ncpu as u32 {
            let pid = procs.len() as Pid;
            let mut k = Proc::new(
                format!("ksoftirqd/{c}"),
                None,
                NONE,
                cfg.kernel.ksoftirqd_nice,
                None,
                1u128 << c,
                c,
                streams.stream(&format!("ksoftirqd/{c}")),
            );
            k.pinned_kthread = true;
            k.state = ProcState::KsoftirqdIdle;
            procs.push(k);
            cpus[c as usize].ksoftirqd = pid;
        }
        if cfg.kernel.concurrency == ConcurrencyKind::Functional {
            // Each OS's polling and bulk-send threads (paper 003 Fig. 2), above everything else,
            // and its stage thread just below them (notes 003 §6.10).
            for c in 0..ncpu as u32 {
                let threads = [
                    (SymbioseThread::Poll, "symbiose-poll", 99),
                    (SymbioseThread::Send, "symbiose-send", 99),
                    (SymbioseThread::Stages, "symbiose-stage", 98),
                ];
                for (op, name, prio) in threads {
                    let mut t = Proc::new(
                        format!("{name}/{c}"),
                        None,
                        NONE,
                        0,
                        Some(prio),
                        1u128 << c,
                        c,
                        streams.stream(&format!("{name}/{c}")),
                    );
                    t.pinned_kthread = true;
                    t.symbiose = Some(op);
                    t.state = ProcState::Sleeping;
                    t.pending = Pending::Slept;
                    procs.push(t);
                }
            }
        }

        let mut srcs = Vec::new();
        for (i, t) in cfg.traffic.iter().enumerate() {
            let nic = cfg.nics.iter().position(|n| n.name == t.nic).expect("validated nic") as u32;
            let stop_ns = t.stop_ms.map_or(cfg.duration_ns, |s| s * 1_000_000).min(cfg.duration_ns);
            srcs.push(Src {
                name: t.name.clone(),
                src: Source::new(SourceConfig {
                    kind: t.kind,
                    rate_pps: t.rate_pps,
                    payload_bytes: t.payload_bytes,
                    flows: t.flows.max(t.clients),
                    start_ns: t.start_ms * 1_000_000,
                    stop_ns,
                    client_stack_ns: t.client_stack_ns,
                    timeout_ns: t.timeout_ms * 1_000_000,
                    window_bytes: t.window_bytes,
                    rto_ns: t.rto_ms * 1_000_000,
                    total_bytes: t.total_bytes,
                    tcp: t.protocol == Protocol::Tcp,
                    record_from_ns: cfg.warmup_ns,
                    http: t.http.clone(),
                    clients: t.clients.max(1),
                }),
                nic,
                dst_port: t.dst_port,
                dst_port_per_flow: t.dst_port_per_flow,
                link_ns_per_byte: 8_000.0 / t.link_mbps as f64,
                link_free: vec![Time::ZERO; t.clients.max(1) as usize],
                down_free: vec![Time::ZERO; t.clients.max(1) as usize],
                link_delay_ns: t.link_delay_us * 1000,
                fixed_port: matches!(t.kind, SourceKind::HttpClients | SourceKind::HttpOrigin),
                timer: Timer::new(),
                rng: streams.stream(&format!("traffic/{i}/{}", t.name)),
                wire_cache: None,
                flow_cache: Vec::new(),
            });
        }

        let rps_cpus = cfg.kernel.rps_cpus.clone();
        let sock_flow = if cfg.kernel.rfs { vec![NONE; cfg.kernel.rfs_entries as usize] } else { Vec::new() };
        for s in 0..socks.len() {
            socks[s].level = sock_level(&procs, s as u32);
        }
        let stats = Stats::new(&cfg, ncpu, procs.len());
        let conc = Concurrency::new(cfg.kernel.concurrency, &cfg.kernel, &cfg.profile.mechanisms, ncpu);
        let mut host = Host {
            wake: WakePlacement::new(cfg.kernel.wake_policy, cfg.kernel.scheduler, procs.len(), ncpu),
            balancer: Balancer::new(&cfg.kernel, ncpu, cpus.iter().map(|c| c.llc as usize + 1).max().unwrap_or(1)),
            masks: crate::placement::SchedMasks::new(
                &cpus.iter().map(|c| c.llc).collect::<Vec<_>>(),
                cfg.profile.topology.threads_per_core as usize,
            ),
            conc,
            q: EventQueue::new(),
            now: Time::ZERO,
            cpus,
            nics,
            queues,
            procs,
            socks,
            port_sock,
            srcs,
            pkts: Vec::with_capacity(4096),
            pkts_tcp: Vec::new(),
            free_pkts: Vec::with_capacity(4096),
            conns: Vec::new(),
            free_conns: Vec::new(),
            eps: crate::sockets::Endpoints::default(),
            apps: Vec::new(),
            sock_flow,
            rps_cpus,
            stats,
            trace: None,
            emit_buf: Vec::with_capacity(256),
            xmit_cpu: 0,
            feedback: FeedbackSlab::default(),
            rng_route: streams.stream("irq-routing"),
            rng_suppress: streams.stream("irq-suppression"),
            hash_key: if cfg.kernel.rss_key_per_boot { streams.stream("rss-key").next_u64() } else { 0 },
            suppressed: 0,
            xdp: Xdp::new(&cfg.kernel),
            xdp_last_poll: (0, 0),
            tick_ns,
            enq_seq: 0,
            ended: false,
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
            let Some(dst) = pc.connect.as_ref().and_then(|n| self.srcs.iter().position(|s| &s.name == n)) else {
                continue;
            };
            let sock = self.procs[pid].sock;
            if sock == NONE {
                continue;
            }
            let flow = (pid as u32).saturating_sub(self.procs.iter().position(|p| p.group == group).unwrap_or(0) as u32);
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
        for i in 0..self.srcs.len() {
            if let Some(t) = self.srcs[i].src.first_wake() {
                let gen = self.srcs[i].timer.arm();
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
        if self.xdp.polled() {
            self.q.schedule(Time::from_ms(self.cfg.kernel.xdp_poll_ms.max(1)), Ev::XdpPoll);
        }
        self.q.schedule(Time(self.cfg.warmup_ns), Ev::WarmupEnd);
        self.q.schedule(Time(self.cfg.duration_ns), Ev::End);
        while let Some((t, ev)) = self.q.pop() {
            self.now = t;
            self.dispatch(ev);
            if self.ended {
                break;
            }
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
            tr.finish(self.now);
            if let Some(s) = sink {
                tr.flush(s);
            }
        }
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::CpuDone { cpu, gen } => self.cpu_done(cpu as usize, gen),
            Ev::Tick { cpu } => {
                self.q.schedule(self.now + Time(self.tick_ns), Ev::Tick { cpu });
                self.raise_irq(cpu as usize, IrqSrc::Tick);
            }
            Ev::SourceWake { src, gen } => self.source_wake(src as usize, gen),
            Ev::FrameArrive { pkt } => self.frame_arrive(pkt),
            Ev::AtSwitch { pkt, nic } => {
                let p = &self.pkts[pkt as usize];
                let port_ns = hostsim_engine::round_u64(crate::wire_bytes(p.bytes, p.tcp) as f64 * self.nics[nic as usize].ns_per_byte);
                self.switch_forward(pkt, nic as usize, self.now, port_ns)
            }
            Ev::Feedback { slot } => {
                let (src, fb, bytes) = self.feedback.take(slot);
                self.stats.tx_en_route -= 1;
                self.stats.tx_delivered += 1;
                self.stats.tx_delivered_bytes += u64::from(bytes);
                self.source_feedback(src as usize, fb);
            }
            Ev::TxDrain { q, gen } => {
                if self.queues[q as usize].tx.drain.fires(gen) {
                    self.tx_irq_cause(q as usize);
                }
            }
            Ev::TxIrq { q } => self.tx_irq_cause(q as usize),
            Ev::Rto { conn, gen } => {
                if self.conns[conn as usize].timer.fires(gen) {
                    self.xmit_cpu = self.conns[conn as usize].timer_cpu;
                    self.tcp_retransmit_timer(conn as usize);
                }
            }
            Ev::SlotTimer { pid, gen } => {
                if self.procs[pid as usize].slot_timer.fires(gen) {
                    self.slot_timer(pid);
                }
            }
            Ev::Coalesce { q, gen } => {
                if self.queues[q as usize].coalesce.fires(gen) {
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
                if self.socks[sock as usize].delack.fires(gen) {
                    self.xmit_cpu = self.socks[sock as usize].delack_cpu;
                    self.delack_fire(sock as usize);
                }
            }
            Ev::Sample => {
                self.sample();
                self.q.schedule(self.now + Time(self.cfg.sample_interval_ns), Ev::Sample);
            }
            Ev::XdpPoll => {
                self.xdp_poll();
                self.q.schedule(self.now + Time::from_ms(self.cfg.kernel.xdp_poll_ms.max(1)), Ev::XdpPoll);
            }
            Ev::WarmupEnd => self.warmup_end(),
            Ev::End => {
                for c in 0..self.cpus.len() {
                    self.account(c);
                }
                // A sample due at this very instant was scheduled after End: take it now.
                let iv = self.cfg.sample_interval_ns;
                if self.now.ns() % iv == 0 && self.stats.samples_taken() < self.now.ns() / iv {
                    self.sample();
                }
                self.ended = true;
            }
        }
    }

    // ----- packet slab: no allocation in steady state -----

    /// A new packet; `t`: its TCP fields (the defaults for a UDP packet).
    pub fn alloc_pkt(&mut self, p: Packet, t: PacketTcp) -> PktId {
        let tcp = p.tcp;
        debug_assert!(tcp || t == PacketTcp::default(), "TCP fields on a UDP packet");
        let id = if let Some(id) = self.free_pkts.pop() {
            self.pkts[id as usize] = p;
            id
        } else {
            self.pkts.push(p);
            (self.pkts.len() - 1) as PktId
        };
        if tcp {
            let i = id as usize;
            if self.pkts_tcp.len() <= i {
                self.pkts_tcp.resize(self.pkts.len(), PacketTcp::default());
            }
            self.pkts_tcp[i] = t;
        }
        id
    }

    /// The TCP fields of packet `id` (the defaults for a UDP packet).
    #[inline]
    pub fn pkt_tcp(&self, id: PktId) -> PacketTcp {
        if self.pkts[id as usize].tcp {
            self.pkts_tcp[id as usize]
        } else {
            PacketTcp::default()
        }
    }

    pub fn free_pkt(&mut self, id: PktId) {
        debug_assert!(self.pkts[id as usize].live, "double free of packet {id}");
        self.pkts[id as usize].live = false;
        self.free_pkts.push(id);
    }

    /// Drop a packet at `place`, counting it.
    pub fn drop_pkt(&mut self, id: PktId, place: DropPlace) {
        self.stats.drops[place as usize] += 1;
        let src = self.pkts[id as usize].src as usize;
        if let Some(d) = self.stats.src_drops.get_mut(src) {
            d[place as usize] += 1;
        }
        self.free_pkt(id);
    }

    pub fn packets_in_flight(&self) -> u64 {
        (self.pkts.len() - self.free_pkts.len()) as u64
    }
}

impl Proc {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: String,
        program: Option<Program>,
        sock: u32,
        nice: i8,
        rt: Option<u8>,
        allowed: u128,
        cpu: u32,
        rng: Rng,
    ) -> Proc {
        Proc {
            name,
            program,
            sock,
            nice,
            weight: nice_weight(nice),
            rt,
            allowed,
            state: ProcState::NotStarted,
            cpu,
            last_ran: None,
            left_cpu_at: Time::ZERO,
            vruntime: 0,
            enq_seq: 0,
            unit_state: CpuState::System,
            unit_remaining: 0,
            pending: Pending::Start,
            timer: Timer::new(),
            cpu_ns: 0,
            migrations: 0,
            rx_packets: 0,
            rx_bytes: 0,
            tx_packets: 0,
            tx_bytes: 0,
            wait: Histogram::new(),
            conn: NONE,
            send: SendOp::default(),
            speed: None,
            slot_timer: Timer::new(),
            reply_to: (NONE, 0, 0),
            pinned_kthread: false,
            symbiose: None,
            period_start_ns: 0,
            group: NONE,
            app: NONE,
            thread: 0,
            rng,
        }
    }
}

