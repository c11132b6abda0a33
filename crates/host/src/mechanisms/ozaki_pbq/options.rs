//! `ozaki-pbq`'s keys of `[kernel]` (paper 000's mechanisms and the live agents' parameters),
//! each declared once; the values it adds to the kernel's policies; what it checks that a key's
//! bound cannot.

use crate::config::HostConfig;
use hostsim_options::{float, int, options, Fault, DAY_MS, TIME};
use serde::{Deserialize, Serialize};

/// Paper 000's keys of `[kernel]`.
#[options]
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OzakiOptions {
    /// PBQ: packets the top-priority queue keeps from eviction; level l keeps this × (l+1)/40.
    #[option(default = 30, bound = int(0, 1_048_576), why = "packets kept from eviction, at most a backlog")]
    pub pbq_min_packets: u32,
    /// `ozaki-pbq` interrupt suppression at context switch: under high load, when the incoming
    /// process's socket buffer is over half full and a draw weighted by its priority succeeds,
    /// take its CPU out of the NICs' IRQ affinity (never the last CPU); restore afterwards.
    #[option(default = false)]
    pub irq_suppression: bool,
    /// XDP `pbq`: the agent polls the kernel's counters this often (live default 10 ms).
    #[option(default = 10, bound = int(1, 60_000), why = "ms between the XDP agent's polls; at most a minute")]
    pub xdp_poll_ms: u64,
    /// XDP `pbq`: a backlog this long counts as overload (live default 500 = half of 6.x's
    /// `netdev_max_backlog`).
    #[option(default = 500, bound = int(1, 1_048_576), why = "packets, at most a backlog (netdev_max_backlog's bound)")]
    pub xdp_backlog_len_high: u32,
    /// XDP `pbq`: high load ends when the arrival rate has stayed below this fraction of the
    /// rate at which it began (0..1) for `xdp_hold_ms`.
    #[option(default = 0.8, bound = float(0.0, 1.0), why = "a fraction of the rate at which high load began (strictly inside 0..1)")]
    pub xdp_release_frac: f64,
    /// XDP `pbq`: how long the arrival rate must stay below `xdp_release_frac` for high load to end.
    #[option(default = 100, bound = int(0, DAY_MS), why = TIME)]
    pub xdp_hold_ms: u64,
    /// XDP `pbq`: while overload persists, shed the next priority level after this long.
    #[option(default = 100, bound = int(0, DAY_MS), why = TIME)]
    pub xdp_escalate_ms: u64,
    /// XDP `pbq`: high load ends after this long without a sign of overload (a probe).
    #[option(default = 2000, bound = int(0, DAY_MS), why = TIME)]
    pub xdp_probe_ms: u64,
    /// XDP `pbq`: packets per window the top level keeps under high load; level l keeps
    /// this × (l+1)/40 (the PBQs' minimums, as a rate).
    #[option(default = 400, bound = int(0, 1_000_000_000), why = "packets per window; a frame takes at least 1 ns, so a 1 s window holds at most 10^9")]
    pub xdp_min_share_top: u32,
    /// XDP `pbq`: the minimum-share window.
    #[option(default = 10, bound = int(1, 60_000), why = "ms per minimum-share window; at most a minute")]
    pub xdp_window_ms: u64,
    /// XDP `pbq`: the receiver's capacity in packets per second, measured with the mechanism
    /// off (the live agent's `--capacity-pps`, or what its sweep measured on the `off` points);
    /// an arrival rate the program counts of at least `xdp_capacity_frac` of it is overload. 0
    /// (default): this sign unused, overload only from the backlogs and the top level's socket
    /// drops.
    #[option(default = 0.0, bound = float(0.0, 1e10), why = "packets per second (0: unused); a frame takes at least 0.1 ns")]
    pub xdp_capacity_pps: f64,
    /// XDP `pbq`: the fraction of `xdp_capacity_pps` at which the arrival rate counts as
    /// overload (the live agent's `DetectorConfig::capacity_frac`, 0.9).
    #[option(default = 0.9, bound = float(0.01, 1.0), why = "a fraction of the capacity; at least 1 %, where any arrival is overload")]
    pub xdp_capacity_frac: f64,
    /// Threaded NAPI: the live agent's interrupt suppression (`mechanisms/ozaki_pbq/napi_suppress.rs`);
    /// needs `napi_threaded` and a program whose detector polls (`xdp = "pbq"` or `"detect"`).
    #[option(default = NapiSuppress::Off)]
    pub napi_suppress: NapiSuppress,
    /// `napi_suppress`: the agent checks the rule this often (live `--supp-check-ms`, default 1).
    #[option(default = 1, bound = int(1, 60_000), why = "ms between the suppression agent's checks; at most a minute")]
    pub napi_suppress_check_ms: u64,
    /// `napi_suppress`: "data waiting" is more than this many bytes charged to the top level's
    /// sockets (live `queued_bytes_min`, 0: any data).
    #[option(default = 0, bound = int(0, 1 << 40), why = "bytes charged to the top level's sockets")]
    pub napi_suppress_queued_bytes_min: u64,
}

/// Interrupt suppression as the live agent does it with threaded NAPI
/// (`mechanisms/ozaki_pbq/napi_suppress.rs`, crates/live/src/ozaki_pbq/suppress.rs): what the agent changes
/// on the NAPI kthreads while the rule holds.
#[options]
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NapiSuppress {
    /// No agent.
    Off,
    /// Move the kthreads to the other online CPUs (stands for the IRQ affinity write of §3.3).
    Affinity,
    /// Keep them on their CPU but drop them from SCHED_FIFO to SCHED_OTHER nice 0.
    Priority,
}

/// The values paper 000 adds to the kernel's policies: (key, value, what it is).
pub const POLICIES: &[(&str, &str, &str)] = &[
    ("backlog", "pbq", "Priority-Based Queues (paper 000 §3.2, `mechanisms/ozaki_pbq/pbq.rs`): under high load one queue per priority, a lower priority's tail evicted beyond its minimum (`pbq_min_packets`)."),
    ("xdp", "pbq", "Paper 000's priority drop at the driver's entry point as `hostsim live` runs it (`mechanisms/ozaki_pbq/xdp.rs`): under high load, drop lower priorities first beyond a minimum share per level (`xdp_*`)."),
    ("xdp", "detect", "`pbq`'s program with its drop off: it counts arrivals per level for the agent's detector, which polls as under `pbq`, and passes every frame (what `napi_suppress` reads its high load from)."),
];

/// What the keys' bounds cannot say.
pub fn check(c: &HostConfig, o: &OzakiOptions) -> Result<(), Fault> {
    let k = &c.kernel;
    if !(o.xdp_release_frac > 0.0 && o.xdp_release_frac < 1.0) {
        return Err(Fault::at(
            &["kernel", "xdp_release_frac"],
            format!("expected a fraction strictly between 0 and 1, got {}", o.xdp_release_frac),
        ));
    }
    for (name, v) in [("xdp_poll_ms", o.xdp_poll_ms), ("xdp_window_ms", o.xdp_window_ms)] {
        if v == 0 {
            return Err(Fault::at(&["kernel", name], "expected at least 1 ms"));
        }
    }
    if o.napi_suppress != NapiSuppress::Off {
        if !k.napi_threaded {
            return Err(Fault::at(
                &["kernel", "napi_suppress"],
                "the suppression agent moves or lowers threaded-NAPI kthreads: it needs kernel.napi_threaded = true",
            ));
        }
        if !(k.xdp.is("pbq") || k.xdp.is("detect")) {
            return Err(Fault::at(
                &["kernel", "napi_suppress"],
                "the suppression agent reads the XDP agent's detector: it needs kernel.xdp = \"pbq\" or \"detect\"",
            ));
        }
        if o.napi_suppress == NapiSuppress::Affinity && c.online_cpus() < 2 {
            return Err(Fault::at(
                &["kernel", "napi_suppress"],
                "\"affinity\" moves the kthreads to another CPU: it needs at least 2 online CPUs",
            ));
        }
    }
    Ok(())
}
