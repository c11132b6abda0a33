//! The hooks a mechanism implements, and what the host offers it (issue 39).
//!
//! A mechanism (`mechanisms/<paper id>/`) is a type implementing [`Mechanism`]: its state, built
//! from the run's configuration by [`Mechanism::new`], and the kernel hooks it takes part in.
//! Every hook has a default that is Linux's own behaviour (nothing happens, or "not mine"), so a
//! mechanism implements only its own. The registry (`mechanisms/mod.rs`, one line per mechanism,
//! [`registry!`]) is the hub's [`Mechanisms`]: each of its hooks calls every mechanism's in turn.
//! The hub (`sim.rs`) is generic over it (`Host<M: Mechanisms>`), so it never names a mechanism
//! and every hook is a static call.
//!
//! Hooks get what they need, never the host:
//! - data-only hooks take `&mut self` and values (`xdp_verdict(now_ns, level)`);
//! - hooks that act on the host are functions of a handle `h: &mut H`, where `H` offers the
//!   operations of [`Tasks`], [`Packets`] and [`Timers`] and reaches the mechanism's own state
//!   through [`Reach`] and [`Project`] (`me::<Self>(h)`). Mechanism code never sees `Host`, its
//!   fields or its events.
//!
//! Policies that replace a baseline of a kernel hook are handed to the subsystem that runs the
//! hook when the host is built: a per-CPU backlog ([`Mechanism::backlog`], held by the CPU
//! beside Linux's FIFO), the wake-up placement, the program at the driver's entry point and the
//! kernel's lock are answered by the mechanism when the subsystem asks (`select_task_rq`,
//! `xdp_verdict`, `lock`), and only in runs that chose them.
//!
//! Timers: a mechanism answers "when do you next need me?" by asking to be polled at a time
//! ([`Timers::poll_at`], with a `hostsim_engine::Timer` generation of its own); the host keeps
//! one generic event for every mechanism, `Ev::Mech { id, gen }`, and calls
//! [`Mechanism::poll`] when it comes. A mechanism's timer ids are its own (`local`); the
//! registry adds the mechanism's number ([`timer_id`]).

use crate::config::HostConfig;
use crate::kernel::locking::spinlock::{Context, SpinLock};
use crate::kernel::sched::placement::BasePlacement;
use crate::kernel::sched::wake::WakeView;
use crate::kernel::task::{Pending, ProcState};
use crate::metrics::summary::Summary;
use crate::net::core::backlog::BacklogPolicy;
use crate::types::{DropPlace, Pid, PktId};
use hostsim_engine::{Rng, RngStreams, Time};
use hostsim_options::{options, At, Fault, Key, Options};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a mechanism is built from: the run's configuration (its options are `[kernel]` and
/// `[[process]]` keys), the online CPUs, and the run's random streams (a mechanism draws only
/// from streams it names, so it never shifts another component's numbers).
pub struct Boot<'a> {
    pub cfg: &'a HostConfig,
    pub ncpu: usize,
    pub streams: &'a RngStreams,
}

impl Boot<'_> {
    /// The mechanism's keys of `[kernel]` (checked when the scenario was loaded: a value the
    /// declaration refuses here is a configuration built by hand, and a bug).
    pub fn options<T: Options + DeserializeOwned>(&self) -> T {
        hostsim_options::from_table(&self.cfg.kernel.mechanisms, &[At::Key("kernel".into())])
            .unwrap_or_else(|f| panic!("{f:?}"))
    }

    /// The mechanism's keys of each `[[process]]`, in order.
    pub fn task_options<T: Options + DeserializeOwned>(&self) -> Vec<T> {
        self.cfg
            .processes
            .iter()
            .map(|p| hostsim_options::from_table(&p.mechanisms, &[]).unwrap_or_else(|f| panic!("{f:?}")))
            .collect()
    }
}

/// The options of a mechanism that has no keys in a table.
#[options]
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NoOptions {}

/// A kernel thread a mechanism adds to the host (spawned at boot, after the programs' tasks):
/// bound to `cpu`, SCHED_FIFO `rt_prio`, asleep until woken or its first timer. Its steps are
/// the mechanism's [`Mechanism::kthread_step`], told `kind`.
#[derive(Clone, Debug)]
pub struct Kthread {
    pub name: String,
    pub cpu: u32,
    pub rt_prio: u8,
    pub kind: u8,
}

/// The program at the driver's entry point, as a mechanism's program decides a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Drop,
}

/// A mechanism's state inside the registry `M`: how a mechanism's host-acting hook finds its own
/// state (`me::<Self>(h)`), and its number in the registry (its timers' ids).
pub trait Project<S> {
    const INDEX: u32;
    fn project(&mut self) -> &mut S;
    fn project_ref(&self) -> &S;
}

/// A part of a mechanism's state kept in a file of its own with the code that changes it
/// (`ozaki_pbq/suppress.rs`'s `Suppress`): the part's hooks are generic over the mechanism `S`
/// that holds it (`S: Part<P>`), so a part's file never names its mechanism.
pub trait Part<P> {
    fn part(&mut self) -> &mut P;
    fn part_ref(&self) -> &P;
}

/// The host's side of [`Project`]: the registry of mechanisms it holds.
pub trait Reach<M> {
    fn mechs(&mut self) -> &mut M;
    fn mechs_ref(&self) -> &M;
}

/// Mechanism `S`'s own state, through the host handle.
pub fn me<'a, S, M: Project<S> + 'a>(h: &'a mut impl Reach<M>) -> &'a mut S {
    h.mechs().project()
}

/// Part `P` of mechanism `S`, through the host handle.
pub fn part<'a, P, S: Part<P> + 'a, M: Project<S> + 'a>(h: &'a mut impl Reach<M>) -> &'a mut P {
    h.mechs().project().part()
}

/// [`me`], read only.
pub fn me_ref<'a, S, M: Project<S> + 'a>(h: &'a impl Reach<M>) -> &'a S {
    h.mechs_ref().project_ref()
}

/// The id of mechanism `S`'s timer `local` in `Ev::Mech` (its number in the registry above
/// 24 bits of its own).
pub fn timer_id<S, M: Project<S>>(local: u32) -> u32 {
    debug_assert!(local < 1 << 24, "timer {local} beyond a mechanism's 2^24");
    M::INDEX << 24 | local
}

/// Time and the timer event.
pub trait Timers {
    fn now(&self) -> Time;
    /// Poll the mechanism's timer `id` ([`timer_id`]) at `at` if generation `gen` is still
    /// live then.
    fn poll_at(&mut self, id: u32, gen: u32, at: Time);
}

/// What the scheduler and the tasks offer a mechanism.
pub trait Tasks {
    fn ncpus(&self) -> usize;
    /// The task running on `cpu`.
    fn curr(&self, cpu: usize) -> Option<Pid>;
    fn task_state(&self, pid: Pid) -> ProcState;
    fn set_task_state(&mut self, pid: Pid, state: ProcState);
    /// The CPU whose run queue the task is on (or last ran on).
    fn task_cpu(&self, pid: Pid) -> usize;
    /// The `[[process]]` entry the task was started from (None for kernel threads).
    fn task_group(&self, pid: Pid) -> Option<usize>;
    fn task_nice(&self, pid: Pid) -> i8;
    /// The receive buffer of the task's socket: (bytes charged, limit), None without one.
    fn task_sock_fill(&self, pid: Pid) -> Option<(u32, u32)>;
    fn task_pending(&self, pid: Pid) -> Pending;
    fn set_task_pending(&mut self, pid: Pid, pending: Pending);
    /// `try_to_wake_up` from `waker`'s CPU.
    fn wake_up(&mut self, pid: Pid, waker: usize);
    /// A task the mechanism held back becomes runnable: queued as a wake-up from its own CPU.
    fn enqueue_woken(&mut self, pid: Pid);
    /// Set need_resched on `cpu` (acted on at once at process level).
    fn resched(&mut self, cpu: usize);
    /// Take a queued task off `cpu`'s run queue.
    fn dequeue(&mut self, cpu: usize, pid: Pid);
    /// `schedule()` on `cpu` (its current task has blocked or slept).
    fn schedule(&mut self, cpu: usize);
    /// Run the kernel thread's next unit of `cost_ns` system time on `cpu` (what it finishes is
    /// `pending`), or leave it saved when a reschedule is pending there.
    fn kthread_unit(&mut self, cpu: usize, pid: Pid, pending: Pending, cost_ns: u64);
    /// Arm the task's timer: it is woken at `at` (from its own CPU).
    fn task_timer_at(&mut self, pid: Pid, at: Time);
    /// The threaded-NAPI kthreads: (pid, the CPU it runs on when nothing moves it).
    fn napi_kthreads(&self) -> Vec<(Pid, usize)>;
    /// Bind a kthread to one CPU (`sched_setaffinity`).
    fn kthread_set_cpu(&mut self, pid: Pid, cpu: usize);
    /// A kthread's class: SCHED_FIFO `rt`, or SCHED_OTHER nice 0 (None).
    fn kthread_set_class(&mut self, pid: Pid, rt: Option<u8>);
}

/// What the network stack and the devices offer a mechanism.
pub trait Packets {
    /// Drop `pkt`, counted at `place`.
    fn drop_pkt(&mut self, pkt: PktId, place: DropPlace);
    /// Packets dropped at `place` so far.
    fn drops(&self, place: DropPlace) -> u64;
    /// The CPU that last processed `pkt` (NONE if none).
    fn pkt_cpu(&self, pkt: PktId) -> u32;
    fn set_pkt_cpu(&mut self, pkt: PktId, cpu: u32);
    /// Is `pkt` to be forwarded (no local socket takes it)?
    fn pkt_forwarded(&self, pkt: PktId) -> bool;
    /// The protocol work of `pkt` (IP and UDP/TCP input, wake-up, ACK) in ns.
    fn proto_cost(&self, pkt: PktId) -> u64;
    /// The output of a forwarded packet to the driver, in ns.
    fn xmit_cost(&self) -> u64;
    /// IP forwarding's routing work (`ip_forward_ns`) and a local hand-on (`netif_rx_ns`), in ns.
    fn forward_stage_cost(&self) -> u64;
    /// Touching `pkt` on `cpu` after another CPU wrote it: the cache model's extra ns, its
    /// misses counted.
    fn remote_touch(&mut self, cpu: usize, pkt: PktId) -> u64;
    /// Protocol input and delivery of `pkt` on `cpu`.
    fn deliver(&mut self, cpu: usize, pkt: PktId);
    /// The driver's transmit of a forwarded packet.
    fn forward_xmit(&mut self, pkt: PktId);
    /// The sockets of the highest priority level bound (paper 000's port table): their drops
    /// and the bytes they hold.
    fn top_level_sockets(&self) -> (u64, u64);
    /// Does any CPU's backlog say high load (2.4's throttle, PBQ mode)?
    fn backlog_high_load_any(&self) -> bool;
    /// The longest backlog.
    fn backlog_len_max(&self) -> u64;
    /// NIC queues (interrupt vectors).
    fn irq_queues(&self) -> usize;
    /// Would taking `cpus` out of the NIC queues' IRQ affinity leave some queue with none?
    fn irq_affinity_empties(&self, cpus: u128) -> bool;
    /// Take `cpus` out of every NIC queue's IRQ affinity (and put the others back).
    fn irq_mask_cpus(&mut self, cpus: u128);
}

/// One mechanism. Every hook defaults to Linux's behaviour; `M` is the registry holding this
/// mechanism (`Project<Self>`), `H` the host handle.
pub trait Mechanism: Sized {
    /// Its keys of `[kernel]`, declared once in its folder (`#[options]`; [`NoOptions`] if none).
    type Options: Options + DeserializeOwned;
    /// Its keys of a `[[process]]` (paper 002's `speed_pct`; [`NoOptions`] if none).
    type TaskOptions: Options + DeserializeOwned;
    /// The values it adds to the kernel's policies (`kernel.backlog = "pbq"`): (key, value, what
    /// it is).
    const POLICIES: &'static [(&'static str, &'static str, &'static str)] = &[];

    /// What its keys' bounds cannot say (a combination of keys, a CPU that must exist), checked
    /// when a scenario is loaded; the fault names the key.
    fn check(_cfg: &HostConfig, _options: &Self::Options, _tasks: &[Self::TaskOptions]) -> Result<(), Fault> {
        Ok(())
    }

    /// The packet buffers it may hold beyond the kernel's own (a pool of its), for the scenario's
    /// memory budget: (how many, the `[kernel]` key that sets it, what they are).
    fn buffers(_cfg: &HostConfig, _options: &Self::Options) -> Option<(u64, &'static str, String)> {
        None
    }

    /// Its state for this run (disabled when its options do not select it).
    fn new(boot: &Boot) -> Self;

    /// Kernel threads to add at boot.
    fn kthreads(&self, _ncpu: usize) -> Vec<Kthread> {
        Vec::new()
    }

    /// Every task exists: `kthreads` are the pids of [`Mechanism::kthreads`]'s threads, in
    /// order; `nprocs` tasks in all.
    fn booted(&mut self, _kthreads: &[Pid], _nprocs: usize) {}

    /// CPU `cpu`'s backlog, if this mechanism's policy replaces Linux's FIFO (built once, when
    /// the host is; `rng` is the CPU's stream `backlog/<cpu>`).
    fn backlog(&self, _cpu: usize, _rng: Rng) -> Option<Box<dyn BacklogPolicy>> {
        None
    }

    /// Does this mechanism's program sit at the driver's entry point?
    fn xdp_attached(&self) -> bool {
        false
    }
    /// Does its program need each frame's priority level?
    fn xdp_needs_priority(&self) -> bool {
        false
    }
    /// Its program's verdict on a frame of priority `level` (see `xdp_attached`).
    fn xdp_verdict(&mut self, _now_ns: u64, _level: u8) -> Verdict {
        Verdict::Pass
    }

    /// Wake-up placement: the CPU for `pid`, if this mechanism places it (wrapping `base`, the
    /// kernel's own).
    fn select_task_rq(
        &self,
        _h: &impl WakeView,
        _pid: Pid,
        _prev: usize,
        _waker: usize,
        _base: &BasePlacement,
    ) -> Option<usize> {
        None
    }
    fn task_woken(&mut self, _pid: Pid, _waker: usize, _prev: usize) {}
    fn task_migrated(&mut self, _pid: Pid) {}

    /// The kernel's lock, if this mechanism's concurrency model has one.
    fn lock(&self) -> Option<&SpinLock> {
        None
    }
    fn lock_mut(&mut self) -> Option<&mut SpinLock> {
        None
    }
    /// Under this mechanism's concurrency model, does a unit of context `ctx` need its lock
    /// (None: the model is not this mechanism's)?
    fn needs_lock(&self, _ctx: Context) -> Option<bool> {
        None
    }
    /// Does a kernel thread unit finishing `pending` run under the model's lock?
    fn unit_locked(&self, _pending: Pending) -> bool {
        false
    }

    /// At the start of the run, before the first sample: the mechanism's tasks' first timers.
    fn start<M: Project<Self>, H: Reach<M> + Tasks + Timers>(_h: &mut H) {}
    /// At the start of the run, after the first sample: periodic agents' first timers.
    fn start_timers<M: Project<Self>, H: Reach<M> + Timers>(_h: &mut H) {}
    /// Its timer `local` fired with generation `gen` (check it is still live).
    fn poll<M: Project<Self>, H: Reach<M> + Tasks + Packets + Timers>(_h: &mut H, _local: u32, _gen: u32) {}

    /// `schedule()` on `cpu` switches to `next` (None: idle): extra ns of the switch.
    fn context_switch<M: Project<Self>, H: Reach<M> + Tasks + Packets>(
        _h: &mut H,
        _cpu: usize,
        _next: Option<Pid>,
    ) -> u64 {
        0
    }
    /// A task starts (its first time runnable).
    fn task_started<M: Project<Self>, H: Reach<M> + Tasks + Timers>(_h: &mut H, _pid: Pid) {}
    /// May `pid` be queued now (`woken`: by a wake-up, not its start)? False: the mechanism holds
    /// it back (it has set its state) and queues it later.
    fn admit<M: Project<Self>, H: Reach<M> + Tasks + Timers>(_h: &mut H, _pid: Pid, _woken: bool) -> bool {
        true
    }
    /// `pid` ran at process level from `from` to `now` (a check of the mechanism's rule).
    fn account(&mut self, _pid: Pid, _from: Time, _now: Time) {}
    /// The legacy driver hands `pkt` to `netif_rx` on `cpu`: true if the mechanism took it.
    fn netif_rx<M: Project<Self>, H: Reach<M> + Packets>(_h: &mut H, _cpu: usize, _pkt: PktId) -> bool {
        false
    }
    /// One of the mechanism's kernel threads (`kind`) steps on `cpu`: its unit finished or it
    /// was woken.
    fn kthread_step<M: Project<Self>, H: Reach<M> + Tasks + Packets + Timers>(
        _h: &mut H,
        _cpu: usize,
        _pid: Pid,
        _kind: u8,
    ) {
    }

    /// The end of the warm-up (counters for windowed metrics start here).
    fn warmup_end(&mut self, _now: Time) {}
    /// Its metrics over the measurement window (`results.csv` columns).
    fn metrics(&self, _m: &mut BTreeMap<String, f64>, _now: Time, _window_s: f64) {}
    /// Its part of `summary.json`.
    fn summary(&self, _s: &mut Summary) {}
}

/// The hub's view of its mechanisms: the registry's, generated by [`registry!`] from one line
/// per mechanism; each hook calls every mechanism's.
pub trait Mechanisms: Sized {
    /// Each mechanism's keys of `[kernel]`, by the mechanism's name.
    fn kernel_keys() -> Vec<(&'static str, &'static [Key])>;
    /// Each mechanism's keys of `[[process]]`.
    fn task_keys() -> Vec<(&'static str, &'static [Key])>;
    /// The values the mechanisms add to the kernel's policies: (key, value, what it is, mechanism).
    fn policies() -> Vec<(&'static str, &'static str, &'static str, &'static str)>;
    /// Every mechanism's options read from `[kernel]` and each `[[process]]`'s leftover keys (a
    /// value of the wrong type is a fault at its key).
    fn read(
        kernel: &BTreeMap<String, serde_json::Value>,
        tasks: &[&BTreeMap<String, serde_json::Value>],
    ) -> Result<(), Fault>;
    /// Every mechanism's options read and checked (`Mechanism::check`).
    fn check(cfg: &HostConfig) -> Result<(), Fault>;
    /// Every mechanism's packet buffers (`Mechanism::buffers`); options that do not read are skipped.
    fn buffers(cfg: &HostConfig) -> Vec<(u64, &'static str, String)>;
    fn new(boot: &Boot) -> Self;
    fn kthreads(&self, ncpu: usize) -> Vec<(u16, Kthread)>;
    fn booted(&mut self, kthreads: &[(u16, Pid)], nprocs: usize);
    fn backlog(&self, cpu: usize, rng: Rng) -> Option<Box<dyn BacklogPolicy>>;
    fn xdp_attached(&self) -> bool;
    fn xdp_needs_priority(&self) -> bool;
    fn xdp_verdict(&mut self, now_ns: u64, level: u8) -> Verdict;
    fn select_task_rq(&self, h: &impl WakeView, pid: Pid, prev: usize, waker: usize, base: &BasePlacement) -> usize;
    fn task_woken(&mut self, pid: Pid, waker: usize, prev: usize);
    fn task_migrated(&mut self, pid: Pid);
    fn has_lock(&self) -> bool;
    fn lock(&self) -> Option<&SpinLock>;
    fn lock_mut(&mut self) -> Option<&mut SpinLock>;
    fn needs_lock(&self, ctx: Context) -> bool;
    fn unit_locked(&self, pending: Pending) -> bool;
    fn start<H: Reach<Self> + Tasks + Timers>(h: &mut H);
    fn start_timers<H: Reach<Self> + Timers>(h: &mut H);
    fn poll<H: Reach<Self> + Tasks + Packets + Timers>(h: &mut H, id: u32, gen: u32);
    fn context_switch<H: Reach<Self> + Tasks + Packets>(h: &mut H, cpu: usize, next: Option<Pid>) -> u64;
    fn task_started<H: Reach<Self> + Tasks + Timers>(h: &mut H, pid: Pid);
    fn admit<H: Reach<Self> + Tasks + Timers>(h: &mut H, pid: Pid, woken: bool) -> bool;
    fn account(&mut self, pid: Pid, from: Time, now: Time);
    fn netif_rx<H: Reach<Self> + Packets>(h: &mut H, cpu: usize, pkt: PktId) -> bool;
    fn kthread_step<H: Reach<Self> + Tasks + Packets + Timers>(h: &mut H, cpu: usize, pid: Pid, kind: u16);
    fn warmup_end(&mut self, now: Time);
    fn metrics(&self, m: &mut BTreeMap<String, f64>, now: Time, window_s: f64);
    fn summary(&self, s: &mut Summary);
}

/// The registry: `registry! { ozaki_pbq: OzakiPbq, goda_rfs: GodaRfs, … }` defines
/// `pub struct Registry` holding each mechanism (in the order given: the order its hooks are
/// called) and implements [`Mechanisms`] for it. A kernel thread's `kind` and a timer's id carry
/// the mechanism's number (its place in the list), so they reach the mechanism that made them.
macro_rules! registry {
    ($( $(#[doc = $doc:literal])* $field:ident : $ty:ty ),+ $(,)?) => {
        use $crate::hooks::Mechanism as _;

        /// Every mechanism of the model, in the order their hooks are called.
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u32)]
        enum Index { $( $field ),+ }

        /// The mechanisms of one run (see `crate::hooks`).
        pub struct Registry {
            $( $(#[doc = $doc])* pub $field: $ty, )+
        }

        $(
            impl $crate::hooks::Project<$ty> for Registry {
                const INDEX: u32 = Index::$field as u32;
                #[inline(always)]
                fn project(&mut self) -> &mut $ty {
                    &mut self.$field
                }
                #[inline(always)]
                fn project_ref(&self) -> &$ty {
                    &self.$field
                }
            }
        )+

        impl $crate::hooks::Mechanisms for Registry {
            fn kernel_keys() -> Vec<(&'static str, &'static [hostsim_options::Key])> {
                vec![$( (stringify!($field), <<$ty as $crate::hooks::Mechanism>::Options as hostsim_options::Options>::keys()), )+]
            }
            fn task_keys() -> Vec<(&'static str, &'static [hostsim_options::Key])> {
                vec![$( (stringify!($field), <<$ty as $crate::hooks::Mechanism>::TaskOptions as hostsim_options::Options>::keys()), )+]
            }
            fn policies() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
                let mut v = Vec::new();
                $( v.extend(<$ty as $crate::hooks::Mechanism>::POLICIES.iter().map(|&(k, val, doc)| (k, val, doc, stringify!($field)))); )+
                v
            }
            fn read(
                kernel: &std::collections::BTreeMap<String, serde_json::Value>,
                tasks: &[&std::collections::BTreeMap<String, serde_json::Value>],
            ) -> Result<(), hostsim_options::Fault> {
                use hostsim_options::At;
                $(
                    hostsim_options::from_table::<<$ty as $crate::hooks::Mechanism>::Options>(kernel, &[At::Key("kernel".into())])?;
                    for (i, t) in tasks.iter().enumerate() {
                        hostsim_options::from_table::<<$ty as $crate::hooks::Mechanism>::TaskOptions>(t, &[At::Key("process".into()), At::Index(i)])?;
                    }
                )+
                Ok(())
            }
            fn check(cfg: &$crate::config::HostConfig) -> Result<(), hostsim_options::Fault> {
                use hostsim_options::At;
                $(
                    let o = hostsim_options::from_table(&cfg.kernel.mechanisms, &[At::Key("kernel".into())])?;
                    let tasks = cfg
                        .processes
                        .iter()
                        .enumerate()
                        .map(|(i, p)| hostsim_options::from_table(&p.mechanisms, &[At::Key("process".into()), At::Index(i)]))
                        .collect::<Result<Vec<_>, _>>()?;
                    <$ty as $crate::hooks::Mechanism>::check(cfg, &o, &tasks)?;
                )+
                Ok(())
            }
            fn buffers(cfg: &$crate::config::HostConfig) -> Vec<(u64, &'static str, String)> {
                let mut v = Vec::new();
                $(
                    if let Ok(o) = hostsim_options::from_table(&cfg.kernel.mechanisms, &[]) {
                        v.extend(<$ty as $crate::hooks::Mechanism>::buffers(cfg, &o));
                    }
                )+
                v
            }
            fn new(boot: &$crate::hooks::Boot) -> Self {
                Registry { $( $field: <$ty as $crate::hooks::Mechanism>::new(boot), )+ }
            }
            fn kthreads(&self, ncpu: usize) -> Vec<(u16, $crate::hooks::Kthread)> {
                let mut v = Vec::new();
                $(
                    let tag = (Index::$field as u16 + 1) << 8;
                    v.extend(self.$field.kthreads(ncpu).into_iter().map(|k| (tag | u16::from(k.kind), k)));
                )+
                v
            }
            fn booted(&mut self, kthreads: &[(u16, $crate::types::Pid)], nprocs: usize) {
                $(
                    // Each mechanism gets the pids of its own threads, in the order it asked.
                    let tag = Index::$field as u16 + 1;
                    let mine: Vec<$crate::types::Pid> = kthreads.iter().filter(|(t, _)| t >> 8 == tag).map(|(_, p)| *p).collect();
                    self.$field.booted(&mine, nprocs);
                )+
            }
            fn backlog(&self, cpu: usize, rng: hostsim_engine::Rng) -> Option<Box<dyn $crate::net::core::backlog::BacklogPolicy>> {
                $( if let Some(b) = self.$field.backlog(cpu, rng.clone()) { return Some(b); } )+
                None
            }
            #[inline]
            fn xdp_attached(&self) -> bool {
                false $( || self.$field.xdp_attached() )+
            }
            #[inline]
            fn xdp_needs_priority(&self) -> bool {
                false $( || self.$field.xdp_needs_priority() )+
            }
            #[inline]
            fn xdp_verdict(&mut self, now_ns: u64, level: u8) -> $crate::hooks::Verdict {
                $( if self.$field.xdp_attached() { return self.$field.xdp_verdict(now_ns, level); } )+
                $crate::hooks::Verdict::Pass
            }
            #[inline]
            fn select_task_rq(
                &self,
                h: &impl $crate::kernel::sched::wake::WakeView,
                pid: $crate::types::Pid,
                prev: usize,
                waker: usize,
                base: &$crate::kernel::sched::placement::BasePlacement,
            ) -> usize {
                $( if let Some(c) = self.$field.select_task_rq(h, pid, prev, waker, base) { return c; } )+
                base.select_task_rq(h, pid, prev, waker)
            }
            #[inline]
            fn task_woken(&mut self, pid: $crate::types::Pid, waker: usize, prev: usize) {
                $( self.$field.task_woken(pid, waker, prev); )+
            }
            #[inline]
            fn task_migrated(&mut self, pid: $crate::types::Pid) {
                $( self.$field.task_migrated(pid); )+
            }
            fn has_lock(&self) -> bool {
                false $( || self.$field.lock().is_some() )+
            }
            fn lock(&self) -> Option<&$crate::kernel::locking::spinlock::SpinLock> {
                $( if let Some(l) = self.$field.lock() { return Some(l); } )+
                None
            }
            fn lock_mut(&mut self) -> Option<&mut $crate::kernel::locking::spinlock::SpinLock> {
                $( if self.$field.lock().is_some() { return self.$field.lock_mut(); } )+
                None
            }
            fn needs_lock(&self, ctx: $crate::kernel::locking::spinlock::Context) -> bool {
                $( if let Some(b) = self.$field.needs_lock(ctx) { return b; } )+
                false
            }
            fn unit_locked(&self, pending: $crate::kernel::task::Pending) -> bool {
                false $( || self.$field.unit_locked(pending) )+
            }
            fn start<H: $crate::hooks::Reach<Self> + $crate::hooks::Tasks + $crate::hooks::Timers>(h: &mut H) {
                $( <$ty as $crate::hooks::Mechanism>::start::<Self, H>(h); )+
            }
            fn start_timers<H: $crate::hooks::Reach<Self> + $crate::hooks::Timers>(h: &mut H) {
                $( <$ty as $crate::hooks::Mechanism>::start_timers::<Self, H>(h); )+
            }
            fn poll<H: $crate::hooks::Reach<Self> + $crate::hooks::Tasks + $crate::hooks::Packets + $crate::hooks::Timers>(
                h: &mut H,
                id: u32,
                gen: u32,
            ) {
                let local = id & 0xFF_FFFF;
                $( if id >> 24 == Index::$field as u32 { return <$ty as $crate::hooks::Mechanism>::poll::<Self, H>(h, local, gen); } )+
                unreachable!("timer {id:#x} of no mechanism");
            }
            #[inline]
            fn context_switch<H: $crate::hooks::Reach<Self> + $crate::hooks::Tasks + $crate::hooks::Packets>(
                h: &mut H,
                cpu: usize,
                next: Option<$crate::types::Pid>,
            ) -> u64 {
                0 $( + <$ty as $crate::hooks::Mechanism>::context_switch::<Self, H>(h, cpu, next) )+
            }
            #[inline]
            fn task_started<H: $crate::hooks::Reach<Self> + $crate::hooks::Tasks + $crate::hooks::Timers>(
                h: &mut H,
                pid: $crate::types::Pid,
            ) {
                $( <$ty as $crate::hooks::Mechanism>::task_started::<Self, H>(h, pid); )+
            }
            #[inline]
            fn admit<H: $crate::hooks::Reach<Self> + $crate::hooks::Tasks + $crate::hooks::Timers>(
                h: &mut H,
                pid: $crate::types::Pid,
                woken: bool,
            ) -> bool {
                true $( && <$ty as $crate::hooks::Mechanism>::admit::<Self, H>(h, pid, woken) )+
            }
            #[inline]
            fn account(&mut self, pid: $crate::types::Pid, from: hostsim_engine::Time, now: hostsim_engine::Time) {
                $( self.$field.account(pid, from, now); )+
            }
            #[inline]
            fn netif_rx<H: $crate::hooks::Reach<Self> + $crate::hooks::Packets>(h: &mut H, cpu: usize, pkt: $crate::types::PktId) -> bool {
                false $( || <$ty as $crate::hooks::Mechanism>::netif_rx::<Self, H>(h, cpu, pkt) )+
            }
            fn kthread_step<H: $crate::hooks::Reach<Self> + $crate::hooks::Tasks + $crate::hooks::Packets + $crate::hooks::Timers>(
                h: &mut H,
                cpu: usize,
                pid: $crate::types::Pid,
                kind: u16,
            ) {
                let (index, own) = (u32::from(kind >> 8) - 1, kind as u8);
                $( if index == Index::$field as u32 { return <$ty as $crate::hooks::Mechanism>::kthread_step::<Self, H>(h, cpu, pid, own); } )+
                unreachable!("kernel thread {kind:#x} of no mechanism");
            }
            fn warmup_end(&mut self, now: hostsim_engine::Time) {
                $( self.$field.warmup_end(now); )+
            }
            fn metrics(&self, m: &mut std::collections::BTreeMap<String, f64>, now: hostsim_engine::Time, window_s: f64) {
                $( self.$field.metrics(m, now, window_s); )+
            }
            fn summary(&self, s: &mut $crate::metrics::summary::Summary) {
                $( self.$field.summary(s); )+
            }
        }
    };
}
pub(crate) use registry;
