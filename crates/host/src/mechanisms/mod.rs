//! The papers' mechanisms, one entry per paper id, each holding *only* the paper's policy: what
//! a paper's baseline needs (an era's scheduler, the big kernel lock, poll(), nanosleep) is kernel
//! code and lives with its subsystem. A mechanism is a folder (or a single file) plus one line in
//! the registry below: its state and options, its timers and its hooks (`crate::hooks`), each
//! chosen by a `[kernel]` or `[[process]]` key, never by scenario name. `docs/src/extending.md` shows
//! how to add another.
//!
//! | entry | paper | hooks | baseline it changes |
//! |---|---|---|---|
//! | `ozaki_pbq` | 000, Ozaki & Nakayama | a CPU's backlog (`enqueue`/`dequeue`); `context_switch`; the driver's entry (`xdp_verdict`); timers: the XDP agent's poll, the suppression agent on the threaded-NAPI kthreads | 2.4's FIFO backlog and throttle; the NIC's IRQ affinity; where and at which priority the NAPI kthreads run |
//! | `goda_rfs` | 001, Goda & Tago | `select_task_rq`, `task_woken`, `task_migrated` | Linux 3.2's wake-affine placement |
//! | `tabata_speed` | 002, Tabata, Nomura & Taniguchi | `admit` (wake-up, start), a slot timer per task, `account` | a process runs whenever the scheduler picks it |
//! | `takeuchi_symbiose` | 003, Takeuchi et al. | the kernel's lock (`needs_lock`), kernel threads per CPU (`kthread_step`), the driver's receive (`netif_rx`) | one kernel on all CPUs under a big lock |
//! | `flow_limit` | Linux 3.11's RPS flow limit (an extension beside paper 000) | a CPU's backlog (`limit`) | the NAPI-era FIFO backlog |
//!
//! Paper 004's interval control (Kawai et al.) is a program's behaviour, not the kernel's: it is in
//! `crates/workload/src/mechanisms/kawai_interval.rs`.

pub mod flow_limit;
pub mod goda_rfs;
pub mod ozaki_pbq;
pub mod tabata_speed;
pub mod takeuchi_symbiose;

crate::hooks::registry! {
    /// Paper 000: priority-based queues, interrupt suppression, the XDP priority drop and its agents.
    ozaki_pbq: ozaki_pbq::OzakiPbq,
    /// Paper 001: wake-up placement that waits for the interrupt to follow.
    goda_rfs: goda_rfs::GodaRfs,
    /// Paper 002: execution-speed regulation.
    tabata_speed: tabata_speed::TabataSpeed,
    /// Paper 003: HiTactix/Symbiose's functional split.
    takeuchi_symbiose: takeuchi_symbiose::TakeuchiSymbiose,
    /// Linux's RPS flow limit.
    flow_limit: flow_limit::RpsFlowLimit,
}
