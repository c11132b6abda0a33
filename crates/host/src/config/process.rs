//! `[[process]]`: an in-host program and how it is scheduled, each key declared once. A
//! mechanism's keys of the same table are declared in its folder (`crate::hooks::Mechanism`'s
//! `TaskOptions`, paper 002's `speed_pct`) and kept here unread (`mechanisms`).

use hostsim_options::{int, len, options, Gen, CPU_ID, DAY_MS, DAY_NS, DAY_US, NICE, PORT, TIME};
use hostsim_workload::{AccelConfig, ProgramKind, ThreadConfig, WorkDist};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[options]
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum SchedPolicy {
    #[default]
    Normal,
    Fifo,
}

/// An in-host process.
#[options]
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct ProcessConfig {
    /// The process's name: its metrics are `<name>_...`, `--set process.<name>.<key>` addresses it.
    #[option(gen = Gen::Name)]
    pub name: String,
    /// What it runs (`crates/workload/src/program.rs`).
    pub program: ProgramKind,
    /// Port its socket is bound to (processes naming the same port share one socket).
    #[option(default = None, bound = int(1, 65_535), why = PORT)]
    pub port: Option<u16>,
    /// Its nice value (the fair class's weight).
    #[option(default = 0, bound = int(-20, 19), why = NICE)]
    pub nice: i8,
    /// Its scheduling class: `normal` (the fair class) or `fifo` (SCHED_FIFO at `rt_priority`).
    #[option(default = SchedPolicy::default())]
    pub sched: SchedPolicy,
    /// SCHED_FIFO priority 1..=99.
    #[option(default = 0, bound = int(0, 99), why = "SCHED_FIFO priorities are 1..=99")]
    pub rt_priority: u8,
    /// Allowed CPUs (empty = all).
    #[option(default = Vec::new(), bound = len(128), why = "CPUs", each = int(0, 127), each_why = CPU_ID, gen = Gen::Cpus)]
    pub cpus: Vec<u32>,
    /// User-mode work per request (per datagram or read; a `spin` or `periodic` program's burst).
    #[option(default = 0, bound = int(0, DAY_NS), why = TIME)]
    pub work_ns: u64,
    /// How `work_ns` varies from request to request.
    #[option(default = WorkDist::default())]
    pub work_dist: WorkDist,
    /// Bytes asked for per recv() on a stream socket.
    #[option(default = 65536, bound = int(1, 1 << 30), why = "bytes per recv(), at most a receive buffer")]
    pub read_bytes: u32,
    /// `udp_echo`: the reply's payload (0 = the request's size).
    #[option(default = 0, bound = int(0, 1_472), why = "bytes; a reply is one unfragmented datagram")]
    pub reply_bytes: u32,
    /// `periodic`: nanosleep after each burst.
    #[option(default = 0, bound = int(0, DAY_NS), why = TIME)]
    pub sleep_ns: u64,
    /// Nice changes during the run (`renice`): at `at_ms` the nice value becomes `nice`.
    #[option(default = Vec::new(), bound = len(10_000), why = "nice changes")]
    pub renice: Vec<Renice>,
    /// Socket receive buffer (default: kernel.rcvbuf_bytes).
    #[option(default = None, bound = int(1, 1 << 30), why = "bytes; Linux's sk_rcvbuf is an int and SO_RCVBUF doubles it, so 2^30")]
    pub rcvbuf_bytes: Option<u32>,
    /// When the process starts.
    #[option(default = 0, bound = int(0, DAY_MS), why = TIME)]
    pub start_ms: u64,
    /// Identical processes to start from this entry (iperf's thread per connection): instance
    /// i is named `<name>-<i>` and binds `port + i`. Their metrics are summed under `<name>`.
    #[option(default = 1, bound = int(1, 65_535), why = "copies, one port each")]
    pub instances: u32,
    /// `stream_send`: bytes per send() call (1..).
    #[option(default = 0, bound = int(0, 4_294_967_295), why = "bytes per send() (0 = not a stream_send)")]
    pub unit_bytes: u32,
    /// `stream_send`: bytes to send in all (default 2^20, "1 MB").
    #[option(default = 1 << 20, bound = int(0, 1 << 50), why = "bytes to send; at most 1 PiB")]
    pub total_bytes: u64,
    /// `stream_send`: the `[[traffic]]` (a `stream_sink`) its connection goes to.
    #[option(default = None)]
    pub connect: Option<String>,
    /// Socket send buffer (default: kernel.sndbuf_bytes).
    #[option(default = None, bound = int(1, 1 << 30), why = "bytes; Linux's sk_sndbuf is an int and SO_SNDBUF doubles it, so 2^30")]
    pub sndbuf_bytes: Option<u32>,
    /// TCP_NODELAY: no Nagle delay for segments shorter than the MSS.
    #[option(default = false)]
    pub nodelay: bool,
    /// Start at `start_ms` plus a uniform random offset in [0, start_jitter_us) (drawn from
    /// the process's own random stream: seeds differ in phase).
    #[option(default = 0, bound = int(0, DAY_US), why = TIME)]
    pub start_jitter_us: u64,
    /// `accelerator`: its interval control, origin connections and user-mode costs
    /// (`[process.accelerator]`).
    #[option(default = None)]
    pub accelerator: Option<AccelConfig>,
    /// Threads of a multi-threaded program (`[[process.thread]]`, each with a `program`).
    #[serde(rename = "thread")]
    #[option(default = Vec::new(), bound = len(64), why = "threads of a multi-threaded program (an accelerator has 3)")]
    pub threads: Vec<ThreadConfig>,
    /// The mechanisms' keys of this `[[process]]` (each declared in its mechanism's folder).
    #[serde(flatten)]
    #[option(skip)]
    pub mechanisms: BTreeMap<String, serde_json::Value>,
}

/// A scheduled nice change (as if an administrator ran renice).
#[options]
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Renice {
    /// When the change happens.
    #[option(bound = int(0, DAY_MS), why = TIME)]
    pub at_ms: u64,
    /// The nice value from then on.
    #[option(bound = int(-20, 19), why = NICE)]
    pub nice: i8,
}
