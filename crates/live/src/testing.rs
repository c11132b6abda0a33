//! For the live tests of every crate: one live test at a time on this machine.
//!
//! `hostsim live clean`, and every live run's start (`LiveRun::start` undoes what SIGKILLed runs
//! left), act on *every* dead run of the machine, not only their own. A test that SIGKILLs its
//! run and then asserts that its own `live clean` removes the leftovers therefore fails whenever a
//! live test or run of another process cleans them first: a second suite run beside this one
//! (another checkout's `cargo test`), or anything else that starts a live run.
//! `live::sigkill_leftovers_are_removed_by_live_clean` failed so once in a sweep of 5 runs while
//! other suites ran on the machine, and 2 times in 20 beside a loop of `hostsim live clean`.
//! The live tests' timing assertions also assume that no second live suite shares the CPUs.
//!
//! So every live test holds [`exclusive`]'s guard for its whole length: an `flock` on one file in
//! the temporary directory, which the kernel releases when the guard is dropped or its process
//! dies, however it dies. Tests of one process wait for each other through it too (each guard is
//! an open file description of its own), so it also replaces a per-file mutex.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::PathBuf;

/// The lock file every live test of this machine takes.
pub fn lock_path() -> PathBuf {
    std::env::temp_dir().join("hostsim-live-tests.lock")
}

/// Held while a live test runs; dropping it lets the next one go.
pub struct Exclusive {
    _file: File,
}

/// Waits until no other live test of this machine runs, then holds that until dropped. Panics
/// (failing the test that asked) if the lock file cannot be opened or locked.
pub fn exclusive() -> Exclusive {
    let path = lock_path();
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("the live tests' lock {}: {e}", path.display()));
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Exclusive { _file: file };
        }
        let e = std::io::Error::last_os_error();
        assert!(e.kind() == std::io::ErrorKind::Interrupted, "locking {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// A second holder waits until the first guard is dropped.
    #[test]
    fn a_second_test_waits_for_the_first() {
        let first = exclusive();
        let got = Arc::new(AtomicBool::new(false));
        let g = Arc::clone(&got);
        let t = std::thread::spawn(move || {
            let _second = exclusive();
            g.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(100));
        assert!(!got.load(Ordering::SeqCst), "the second guard was taken while the first was held");
        drop(first);
        t.join().unwrap();
        assert!(got.load(Ordering::SeqCst));
    }
}
