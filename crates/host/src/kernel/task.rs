//! Tasks (Linux's `task_struct`): a process's or kernel thread's state, what its current unit
//! of work will report when it completes, and a send() in progress. What a task *does* is in
//! `kernel/process.rs` (a program's actions) and `kernel/app.rs` (a thread of a multi-threaded program); how it
//! is scheduled is in `sched/`.

use crate::config::{HostConfig, KernelConfig, SchedPolicy, TcpReceiver};
use crate::kernel::app_state::AppPending;
use crate::kernel::sched::o1_rq::O1Task;
use crate::net::core::sock::Sock;
use crate::net::ipv4::tcp_rcv_window::{RcvWindow, RcvWindowParams};
use crate::types::*;
use hostsim_engine::{Histogram, Rng, RngStreams, Time, Timer};
use hostsim_workload::{Program, ProgramConfig};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcState {
    NotStarted,
    Runnable,
    BlockedRecv,
    /// Blocked in send() on a full send buffer.
    BlockedSend,
    Sleeping,
    /// Held back by a mechanism (paper 002's regulation: outside its allocated slots), on no
    /// run queue.
    Throttled,
    KsoftirqdIdle,
    Exited,
}

/// What a process's current unit will report when it completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pending {
    Start,
    Computed,
    Received {
        bytes: u32,
    },
    Replied {
        bytes: u32,
    },
    Slept,
    Yielded,
    NiceSet {
        nice: i8,
    },
    /// ksoftirqd: check for pending softirqs.
    Ksoftirqd,
    /// Blocked in recv(): retry it when woken.
    RetryRecv {
        max_bytes: u32,
    },
    /// A mechanism's kernel thread (`crate::hooks::Mechanism::kthread_step`): what its unit
    /// finishes, in the mechanism's terms (`op`), and the packet it works on (NONE if none).
    Mech {
        op: u8,
        pkt: PktId,
    },
    /// A unit of send(): the copy and/or one segment's output; `tx` segments reach the device
    /// when it completes.
    SendUnit {
        tx: u32,
    },
    /// Blocked in send(): continue it when woken.
    RetrySend,
    /// send() has returned `bytes`.
    Sent {
        bytes: u32,
    },
    /// A system call of a multi-threaded program's thread (`kernel/app.rs`).
    App(AppPending),
    /// The CPU map kthread: one frame through skb build and the protocols (`net/core/cpumap.rs`).
    CpumapFrame {
        pkt: PktId,
    },
    /// A threaded-NAPI kthread (`net/core/napi_thread.rs`): one frame through the driver, the
    /// program and the protocols (`drop`: the program dropped it).
    NapiRx {
        pkt: PktId,
        drop: bool,
    },
    /// A threaded-NAPI kthread: `n` completed frames of its queue's TX ring cleaned.
    NapiTx {
        n: u32,
    },
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
// alone reads (pending, weight, vruntime, cpu_ns, rt) in four different lines of a
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
    /// A mechanism's kernel thread: its mechanism's number + 1 (high byte) and kind (low byte);
    /// 0 for every other task.
    pub mech_kthread: u16,
    /// The XDP CPU map entry's kthread (`net/core/cpumap.rs`).
    pub cpumap_kthread: bool,
    pub sock: u32,
    pub cpu: u32,
    pub pending: Pending,
    pub weight: u64,
    pub vruntime: u64,
    pub cpu_ns: u64,
    pub unit_remaining: u64,
    // -- line 1: receive counts
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
    /// A thread of a multi-threaded program: its `Host::apps` index (NONE: not one) and
    /// thread number.
    pub app: u32,
    pub thread: u32,
    /// The O(1) run queue's state of the task (`kernel.o1_runqueue`; `sched/o1_rq.rs`).
    pub o1: O1Task,
    /// A threaded-NAPI kthread: the NIC queue whose poll it runs (`net/core/napi_thread.rs`);
    /// NONE for every other task.
    pub napi_q: u32,
    pub name: String,
    pub rng: Rng,
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
            reply_to: (NONE, 0, 0),
            pinned_kthread: false,
            mech_kthread: 0,
            cpumap_kthread: false,
            group: NONE,
            app: NONE,
            thread: 0,
            o1: O1Task::new(nice, 100),
            napi_q: NONE,
            rng,
        }
    }
}

/// The tasks a host boots with: one per `[[process]]` instance (a multi-threaded program's
/// threads each), each program's socket bound to its port (instance k binds port + k), and a
/// ksoftirqd per CPU. Returns the tasks, the bound sockets, the port → socket table and each
/// CPU's ksoftirqd.
pub fn spawn_tasks(cfg: &HostConfig, ncpu: usize, streams: &RngStreams) -> (Vec<Proc>, Vec<Sock>, Vec<u32>, Vec<Pid>) {
    let mut ksoftirqd = Vec::with_capacity(ncpu);
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
            // `cpus` override them); `init_apps` (kernel/app.rs) builds the program around them.
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
                let k = &cfg.kernel;
                let mut sock = Sock::new(port, prog.is_tcp(), p.rcvbuf_bytes.unwrap_or(k.rcvbuf_bytes));
                if prog.is_tcp() && k.tcp_receiver == TcpReceiver::Linux {
                    // A TCP socket's buffer starts at tcp_rmem[1] unless SO_RCVBUF set it.
                    sock.rcvbuf = p.rcvbuf_bytes.unwrap_or(k.tcp_rmem[1]);
                    sock.rwin =
                        Some(Box::new(RcvWindow::new(rcv_window_params(k), sock.rcvbuf, p.rcvbuf_bytes.is_some())));
                }
                socks.push(sock);
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
        ksoftirqd.push(pid);
    }
    for p in &mut procs {
        p.o1 = O1Task::new(p.nice, cfg.kernel.hz);
    }
    (procs, socks, port_sock, ksoftirqd)
}

/// The entry's kthread (`cpumap/<cpu>`, Linux's `cpumap/%d/map:%d`), bound to its CPU, asleep
/// until the first flush wakes it. Returns its pid.
pub fn spawn_cpumap_kthread(k: &KernelConfig, procs: &mut Vec<Proc>, streams: &RngStreams) -> Pid {
    let c = k.cpumap_cpu;
    let name = format!("cpumap/{c}");
    let mut t = Proc::new(name.clone(), None, NONE, 0, Some(k.cpumap_rt_prio), 1u128 << c, c, streams.stream(&name));
    t.pinned_kthread = true;
    t.cpumap_kthread = true;
    t.state = ProcState::Sleeping;
    t.pending = Pending::Slept;
    procs.push(t);
    (procs.len() - 1) as Pid
}

/// Threaded NAPI (`kernel.napi_threaded`): one kthread per NIC queue, `napi/<dev>-<queue>`
/// (Linux names it `napi/<dev>-<napi id>`, net/core/dev.c `napi_kthread_create`), bound to the
/// first CPU of the NIC's `irq_cpus` (all CPUs if empty: CPU 0) at SCHED_FIFO `napi_rt_prio`,
/// asleep until its queue's interrupt wakes it. Returns each queue's kthread, in queue order.
pub fn spawn_napi_kthreads(cfg: &HostConfig, procs: &mut Vec<Proc>, streams: &RngStreams) -> Vec<Pid> {
    let mut pids = Vec::new();
    for n in &cfg.nics {
        let c = n.irq_cpus.first().copied().unwrap_or(0);
        for qi in 0..n.queues {
            let name = format!("napi/{}-{qi}", n.name);
            let mut t = Proc::new(
                name.clone(),
                None,
                NONE,
                0,
                Some(cfg.kernel.napi_rt_prio),
                1u128 << c,
                c,
                streams.stream(&name),
            );
            t.pinned_kthread = true;
            t.napi_q = pids.len() as u32;
            t.state = ProcState::Sleeping;
            t.pending = Pending::Slept;
            t.o1 = O1Task::new(0, cfg.kernel.hz);
            pids.push(procs.len() as Pid);
            procs.push(t);
        }
    }
    pids
}

/// The highest priority level among the processes bound to socket `s`.
pub fn sock_level(procs: &[Proc], s: u32) -> u8 {
    procs.iter().filter(|p| p.sock == s).map(|p| level_of_nice(p.nice)).max().unwrap_or(0)
}

/// The receive-window parameters of `[kernel]`.
pub fn rcv_window_params(k: &KernelConfig) -> RcvWindowParams {
    RcvWindowParams {
        mss: k.tcp_mss_bytes,
        tcp_rmem_max: k.tcp_rmem[2],
        adv_win_scale: k.tcp_adv_win_scale,
        moderate: k.tcp_moderate_rcvbuf,
        skb_overhead: k.skb_overhead_bytes,
    }
}
