//! SIGINT, SIGTERM, SIGHUP and SIGQUIT, handled alike: the first one sets a flag (the signal's
//! number) that every wait loop of a live run checks, so the run unwinds and undoes what it
//! created (see `harness.rs`). A closed terminal (SIGHUP) or Ctrl-\ (SIGQUIT) is an
//! interruption like Ctrl-C, not a reason to leave namespaces behind.
//!
//! The handlers are signal-hook's (async-signal-safe: they only store to an atomic). Later
//! signals of any of the four change nothing: clean-up is already under way and bounded in time.
//! A signal that is ignored when the run starts stays ignored: `nohup` ignores SIGHUP so that a
//! run outlives its terminal, and a shell ignores SIGINT and SIGQUIT in background jobs; such a
//! run goes on and cleans up at its end.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The signals a live run turns into a clean stop.
pub const STOP_SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

fn flag() -> &'static Arc<AtomicUsize> {
    static FLAG: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicUsize::new(0)))
}

/// Install the handlers (once per process; later calls do nothing).
pub fn install() -> std::io::Result<()> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        for sig in STOP_SIGNALS {
            if ignored(sig) {
                continue;
            }
            // The first signal's number wins: a later one does not overwrite it.
            let f = Arc::clone(flag());
            // SAFETY: the action only does an atomic compare-exchange (async-signal-safe).
            unsafe {
                signal_hook::low_level::register(sig, move || {
                    let _ = f.compare_exchange(0, sig as usize, Ordering::SeqCst, Ordering::SeqCst);
                })
            }
            .map_err(|e| format!("installing the handler of signal {sig}: {e}"))?;
        }
        Ok(())
    })
    .clone()
    .map_err(std::io::Error::other)
}

/// Is `sig` ignored (SIG_IGN) in this process?
fn ignored(sig: libc::c_int) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// The signal that asked the run to stop, if any.
pub fn stop_signal() -> Option<libc::c_int> {
    match flag().load(Ordering::SeqCst) {
        0 => None,
        s => Some(s as libc::c_int),
    }
}

pub fn stop_requested() -> bool {
    stop_signal().is_some()
}

/// The run was interrupted by this signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupted(pub libc::c_int);

impl Interrupted {
    /// `SIGINT`, `SIGTERM`, … for messages.
    pub fn name(&self) -> String {
        signal_name(self.0)
    }
}

pub fn signal_name(sig: libc::c_int) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        s => format!("signal {s}"),
    }
}

/// `Err(Interrupted)` once a stop signal has arrived.
pub fn check() -> Result<(), Interrupted> {
    match stop_signal() {
        Some(s) => Err(Interrupted(s)),
        None => Ok(()),
    }
}

/// Sleep `d` in steps of at most 10 ms, returning early with `Interrupted` on a stop signal.
pub fn sleep(d: Duration) -> Result<(), Interrupted> {
    let end = Instant::now() + d;
    loop {
        check()?;
        let now = Instant::now();
        if now >= end {
            return Ok(());
        }
        std::thread::sleep((end - now).min(Duration::from_millis(10)));
    }
}
