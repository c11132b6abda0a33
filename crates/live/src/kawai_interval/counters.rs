//! The accelerator's counters: relaxed atomics its threads add to, copied at the window marks
//! by the signal handlers (SIGUSR1: start, SIGUSR2: end), so the window is exact whatever the
//! threads are doing, and printed as JSON at exit.

use std::sync::atomic::{AtomicU64, Ordering};

/// Per loop thread (I/O, retrieve): what its passes did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loop {
    /// Passes of the main loop (the model's `loops`).
    Passes,
    /// nanosleep()s, and their requested and actual lengths.
    Sleeps,
    SleepReqNs,
    SleptNs,
    /// sched_yield()s (a pass that took at least the cycle).
    Yields,
    /// poll() calls over the connection list, their time, descriptors and ready descriptors.
    Polls,
    PollNs,
    PollFds,
    PollReady,
    /// The gatherings (`prepare_conn_list`'s epoll_wait), their time and the connections listed.
    Gathers,
    GatherNs,
    Gathered,
    /// sched_setscheduler() calls (two per sleep under FIFO) and their time.
    SchedCalls,
    SchedNs,
}

pub const LOOP_NAMES: [&str; 14] = [
    "loops",
    "sleeps",
    "sleep_req_ns",
    "slept_ns",
    "yields",
    "polls",
    "poll_ns",
    "poll_fds",
    "poll_ready",
    "gathers",
    "gather_ns",
    "gathered",
    "sched_calls",
    "sched_ns",
];

/// The process's: requests and connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proc {
    Requests,
    Hits,
    Misses,
    Fetched,
    Accepted,
    Closed,
    /// Requests that were not ours, connections closed on an error.
    Bad,
    /// Misses that found no idle origin connection (they wait).
    FetchWaits,
    /// Bytes of responses written to clients.
    BytesOut,
}

pub const PROC_NAMES: [&str; 9] =
    ["requests", "hits", "misses", "fetched", "accepted", "closed", "bad", "fetch_waits", "bytes_out"];

/// The two loop threads.
pub const THREADS: [&str; 2] = ["io", "retrieve"];
const NL: usize = LOOP_NAMES.len();
const N: usize = 2 * NL + PROC_NAMES.len();

#[allow(clippy::declare_interior_mutable_const)]
const Z: AtomicU64 = AtomicU64::new(0);
static NOW: [AtomicU64; N] = [Z; N];
static MARKS: [[AtomicU64; N]; 2] = [[Z; N], [Z; N]];
static MARKED: [AtomicU64; 2] = [Z; 2];

/// Add to loop thread `t`'s (0 = I/O, 1 = retrieve) counter.
pub fn add(t: usize, k: Loop, v: u64) {
    NOW[t * NL + k as usize].fetch_add(v, Ordering::Relaxed);
}

pub fn add_proc(k: Proc, v: u64) {
    NOW[2 * NL + k as usize].fetch_add(v, Ordering::Relaxed);
}

/// Copy the counters into mark `phase` (1 = window start, 2 = end). Async-signal-safe.
pub fn mark(phase: u32) {
    let m = (phase as usize).clamp(1, 2) - 1;
    for i in 0..N {
        MARKS[m][i].store(NOW[i].load(Ordering::Relaxed), Ordering::Relaxed);
    }
    MARKED[m].store(1, Ordering::Relaxed);
}

fn as_json(v: &[AtomicU64; N]) -> serde_json::Value {
    let mut o = serde_json::Map::new();
    for (t, tn) in THREADS.iter().enumerate() {
        for (k, kn) in LOOP_NAMES.iter().enumerate() {
            o.insert(format!("{tn}_{kn}"), v[t * NL + k].load(Ordering::Relaxed).into());
        }
    }
    for (k, kn) in PROC_NAMES.iter().enumerate() {
        o.insert(kn.to_string(), v[2 * NL + k].load(Ordering::Relaxed).into());
    }
    serde_json::Value::Object(o)
}

/// `{"total": {...}, "start": {...} | null, "end": {...} | null}`.
pub fn report() -> serde_json::Value {
    let m =
        |i: usize| if MARKED[i].load(Ordering::Relaxed) == 1 { as_json(&MARKS[i]) } else { serde_json::Value::Null };
    serde_json::json!({ "total": as_json(&NOW), "start": m(0), "end": m(1) })
}
