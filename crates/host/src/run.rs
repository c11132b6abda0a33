//! Running a host with its failures caught: a model bug (a panic anywhere in the model, such as
//! the engine's "event scheduled in the past") becomes an error naming the seed, and a run whose
//! simulated time stops advancing becomes an error naming the likely cause. Nothing here changes
//! what a run computes.

use crate::mechanisms::Registry;
use crate::sim::{Ev, Host};
use crate::{HostConfig, RunOutput, TraceSink, TraceWindow, STATE_NAMES};
use hostsim_engine::{Stall, Time};
use std::fmt;

/// Why a run produced no results.
#[derive(Clone, Debug, PartialEq)]
pub enum RunError {
    /// Simulated time stopped advancing (see `hostsim_engine::Stall`).
    Stalled { seed: u64, at_ns: u64, events: u64, cause: String },
    /// The model panicked: a bug in hostsim, reproducible with this seed and configuration.
    Bug { seed: u64, message: String },
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Stalled { seed, at_ns, events, cause } => write!(
                f,
                "the run stalled: simulated time stopped advancing at {} ({events} events in a row at that instant, seed {seed}); likely cause: {cause}",
                Time(*at_ns)
            ),
            RunError::Bug { seed, message } => {
                write!(f, "internal error (a bug in hostsim; please report it with the scenario and seed {seed}): {message}")
            }
        }
    }
}

impl std::error::Error for RunError {}

/// Run one simulation; a stall or a model bug is an error instead of a hang or an abort.
pub fn try_run_with_progress(cfg: HostConfig, progress: impl FnMut(Time)) -> Result<RunOutput, RunError> {
    try_run_inner(cfg, None, progress)
}

/// [`try_run_with_progress`] with a trace streamed to `sink` (see `crate::run_traced`).
pub fn try_run_traced(
    cfg: HostConfig,
    window: TraceWindow,
    sink: &mut dyn TraceSink,
    progress: impl FnMut(Time),
) -> Result<RunOutput, RunError> {
    try_run_inner(cfg, Some((window, sink)), progress)
}

fn try_run_inner(
    cfg: HostConfig,
    traced: Option<(TraceWindow, &mut dyn TraceSink)>,
    progress: impl FnMut(Time),
) -> Result<RunOutput, RunError> {
    let seed = cfg.seed;
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let mut host = Host::<Registry>::new(cfg);
        host.q.set_seed(seed);
        let sink = match traced {
            Some((window, sink)) => {
                let labels = host.trace_labels();
                sink.start(host.cpus.len(), &labels, &STATE_NAMES);
                host.trace = Some(crate::metrics::trace::Trace::new(host.cpus.len(), window));
                Some(sink)
            }
            None => None,
        };
        host.run_with_progress(progress, sink);
        if let Some(st) = host.q.stall() {
            return Err(RunError::Stalled {
                seed,
                at_ns: st.at.ns(),
                events: st.events,
                cause: likely_cause(&host, st),
            });
        }
        Ok(crate::output(&mut host))
    }));
    match out {
        Ok(r) => r,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic without a message".into());
            Err(RunError::Bug { seed, message })
        }
    }
}

/// What the event that would have come next at the stalled instant says about why.
fn likely_cause(h: &Host<Registry>, st: &Stall<Ev>) -> String {
    let proc_name = |pid: u32| h.procs.get(pid as usize).map_or("?".to_string(), |p| p.name.clone());
    let src_name = |s: u32| h.wire.srcs.get(s as usize).map_or("?".to_string(), |x| x.name.clone());
    match st.event {
        Ev::SourceWake { src, .. } => format!(
            "traffic `{}` keeps waking at the same instant: its timing (rate_pps, timeout_ms, rto_ms) gives it a zero interval",
            src_name(src)
        ),
        Ev::Feedback { slot } => {
            format!("replies to traffic `{}` keep arriving at the same instant", src_name(h.wire.feedback.peek(slot).0))
        }
        Ev::CpuDone { cpu, .. } => {
            let who = h.cpus.get(cpu as usize).and_then(|c| c.curr).map_or("kernel work".to_string(), |p| format!("process `{}`", proc_name(p)));
            format!("CPU {cpu} keeps finishing units of work that take no time ({who}): costs of 0 in the profile with a loop that never blocks")
        }
        Ev::ProcTimer { pid, .. } => format!("process `{}` keeps sleeping for no time (sleep_ns = 0 and timer_slack_ns = 0)", proc_name(pid)),
        Ev::Coalesce { q, .. } => format!("NIC queue {q}'s interrupt-moderation timer keeps firing at the same instant"),
        Ev::FrameArrive { .. } => "frames keep arriving at the same instant".to_string(),
        other => format!("the model keeps scheduling {other:?} at the same instant"),
    }
}
