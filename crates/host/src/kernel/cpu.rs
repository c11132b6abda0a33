//! A CPU's state (Linux keeps it per CPU: the running task and its accounting, `softnet_data`,
//! the run queue `struct rq`): its stack of execution frames and what each is doing, its time by
//! state, its NET_RX pass and backlog, and its run queues. Pure data; what a CPU does with it is
//! in `context.rs` (contexts, preemption, accounting), `net/core/rx.rs` (softnet) and `sched/`.

use crate::net::core::backlog::Backlog;
use crate::types::*;
use hostsim_engine::{Time, Timer};
use std::collections::VecDeque;

/// What the current unit of a frame is doing; its effect happens when it completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    IrqEntry(IrqSrc),
    /// Legacy handler: driver + netif_rx for one frame.
    IrqFrame {
        q: u32,
        pkt: PktId,
    },
    SoftirqEntry,
    /// NAPI poll of one frame; `proto` = protocol processing done in the same unit.
    Poll {
        pkt: PktId,
        proto: bool,
    },
    /// Protocol processing of a packet taken from the backlog.
    Proto {
        pkt: PktId,
    },
    /// NAPI poll of one frame that the XDP program drops (driver + program run).
    XdpDrop {
        pkt: PktId,
    },
    /// NAPI poll of one frame that the XDP program redirects to the CPU map (driver + program
    /// run + `bq_enqueue`; `net/core/cpumap.rs`).
    XdpRedirect {
        pkt: PktId,
    },
    /// NAPI poll of one frame given to GRO (`net/core/gro.rs`): the driver's work; what GRO
    /// passes up runs as the following units.
    GroRx,
    /// TX clean-up of `n` completed frames of queue `q`'s ring in the NIC's interrupt handler
    /// (2.4 path); `rx`: the handler then goes on with the queue's RX frames.
    TxCleanIrq {
        q: u32,
        n: u32,
        rx: bool,
    },
    /// TX clean-up of `n` completed frames of queue `q`'s ring at the start of its NAPI poll.
    TxPoll {
        q: u32,
        n: u32,
    },
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
            Work::SoftirqEntry
            | Work::Poll { .. }
            | Work::Proto { .. }
            | Work::TxPoll { .. }
            | Work::XdpDrop { .. }
            | Work::XdpRedirect { .. }
            | Work::GroRx => Level::Softirq,
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
    /// The current task's program is being stepped (its system call completing): a wake-up
    /// that preempts it only sets `need_resched`, acted on when the step ends, as Linux switches
    /// at the system call's exit (`resched_curr` sets TIF_NEED_RESCHED; `exit_to_user_mode_loop`
    /// calls schedule()), never in the middle of the task's own step.
    pub in_step: bool,
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
    /// When the CPU last switched from a task to idle (2.5's `irq_stat[cpu].idle_timestamp`, set
    /// on entry to cpu_idle()'s loop; interrupts on an idle CPU don't reset it). Read only by
    /// balance_irq's `idle_timestamp` test.
    pub idle_since: Time,
    /// `kernel.o1_runqueue`: which of the two priority arrays is the active one (a task is in the
    /// active array when its `o1.array` equals this), and the jiffy the first task went into
    /// the expired array since the last switch (`rq->expired_timestamp`, 0 = none).
    pub o1_active: u8,
    pub o1_expired_ts: u64,
}

/// An entry of a CPU's NAPI poll list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Napi {
    Queue(u32),
    Backlog,
}

impl Cpu {
    /// An idle CPU of core `core` sharing last-level cache `llc`, with its backlog policy.
    pub fn new(core: u32, llc: u32, backlog: Backlog) -> Cpu {
        Cpu {
            stack: Vec::with_capacity(8),
            seg_start: Time::ZERO,
            run_start: Time::ZERO,
            acct_state: CpuState::Idle,
            acct_ns: [0; N_STATES],
            done: Timer::new(),
            curr: None,
            need_resched: false,
            in_step: false,
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
            backlog,
            poll_list: VecDeque::with_capacity(8),
            napi_quota: 0,
            backlog_scheduled: false,
            input_queue_head: 0,
            input_queue_tail: 0,
            irqs: 0,
            spinning: false,
            o1_active: 0,
            o1_expired_ts: 0,
        }
    }
}
