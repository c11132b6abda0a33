//! Nothing partial is ever mistaken for a result (issue 25):
//!
//! - every output is written under a temporary name beside it and renamed into place
//!   ([`write_atomic`], [`Temp`]); the temporaries are registered, and the first SIGINT,
//!   SIGTERM, SIGHUP or SIGQUIT removes them all before the process exits with 128 + the signal
//!   ([`install_signal_cleanup`]; a signal ignored at start, as under `nohup`, stays ignored);
//! - a directory being written holds a file `INCOMPLETE` ([`Marker`]) from the start until its
//!   outputs are complete, saying what is being written, by whom, and, after a failure, why.
//!   Outputs of an earlier run that this one will not rewrite are removed at the start, so an
//!   old trace never stands beside a new untraced run.
//!
//! The registry's lock is held while a temporary is created, renamed or removed by the signal
//! thread, which exits the process still holding it: no temporary can appear after the clean-up.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The marker file's name.
pub const INCOMPLETE: &str = "INCOMPLETE";

fn registry() -> MutexGuard<'static, Vec<PathBuf>> {
    static TEMPS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    TEMPS.lock().unwrap_or_else(|p| p.into_inner())
}

/// A temporary file being written, renamed into place by [`Temp::persist`], removed on drop.
pub struct Temp {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl Temp {
    /// Create (exclusively) the temporary for `target`: `.<name>.<pid>.<n>.tmp` beside it, with
    /// permission bits `mode` (& the umask).
    pub fn create(target: &Path, mode: u32) -> std::io::Result<Temp> {
        use std::os::unix::fs::OpenOptionsExt;
        use std::sync::atomic::{AtomicU64, Ordering};
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let path = target.with_file_name(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let mut reg = registry();
        let file = std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&path)?;
        reg.push(path.clone());
        Ok(Temp { path, file: Some(file) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn file(&mut self) -> &mut std::fs::File {
        self.file.as_mut().expect("open until persisted")
    }

    /// Take the file (to wrap it in a writer); the temporary stays registered until persisted
    /// or dropped.
    pub fn take_file(&mut self) -> std::fs::File {
        self.file.take().expect("taken once")
    }

    /// Rename into place at `target`.
    pub fn persist(mut self, target: &Path) -> std::io::Result<()> {
        drop(self.file.take());
        let mut reg = registry();
        std::fs::rename(&self.path, target)?;
        reg.retain(|p| p != &self.path);
        self.path = PathBuf::new();
        Ok(())
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if self.path.as_os_str().is_empty() {
            return;
        }
        drop(self.file.take());
        let mut reg = registry();
        let _ = std::fs::remove_file(&self.path);
        reg.retain(|p| p != &self.path);
    }
}

/// Write a file so that a reader (or a killed writer) sees the old file, none, or the whole new
/// one: a registered temporary beside it, synced, renamed into place.
pub fn write_atomic(path: &Path, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
    write_atomic_mode(path, bytes, 0o666)
}

/// [`write_atomic`] creating the file with permission bits `mode` (& the umask).
pub fn write_atomic_mode(path: &Path, bytes: impl AsRef<[u8]>, mode: u32) -> std::io::Result<()> {
    let mut t = Temp::create(path, mode)?;
    t.file().write_all(bytes.as_ref())?;
    t.file().sync_data()?;
    t.persist(path)
}

fn ignored(sig: libc::c_int) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// On the first SIGINT, SIGTERM, SIGHUP or SIGQUIT: remove every registered temporary, say so,
/// exit with 128 + the signal. (Once per process; signals ignored at start stay ignored.)
pub fn install_signal_cleanup() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let sigs: Vec<libc::c_int> = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT].into_iter().filter(|&s| !ignored(s)).collect();
        let Ok(mut signals) = signal_hook::iterator::Signals::new(&sigs) else { return };
        std::thread::Builder::new()
            .name("hostsim-signals".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    let reg = registry();
                    for p in reg.iter() {
                        let _ = std::fs::remove_file(p);
                    }
                    let name = match sig {
                        libc::SIGINT => "SIGINT",
                        libc::SIGTERM => "SIGTERM",
                        libc::SIGHUP => "SIGHUP",
                        _ => "SIGQUIT",
                    };
                    crate::say!("hostsim: interrupted ({name}): {} temporary file(s) removed; outputs being written are marked {INCOMPLETE}", reg.len());
                    // Exit holding the registry: no temporary can be created after the clean-up.
                    std::process::exit(128 + sig);
                }
            })
            .ok();
    });
}

/// The `INCOMPLETE` marker of an output directory.
pub struct Marker {
    path: PathBuf,
    what: String,
}

impl Marker {
    /// Mark `dir` incomplete (`what`: the command being run), before anything in it changes.
    pub fn begin(dir: &Path, what: &str) -> Result<Marker, String> {
        let m = Marker { path: dir.join(INCOMPLETE), what: what.to_string() };
        m.write("in progress (or interrupted: no hostsim process of that pid is running)")?;
        Ok(m)
    }

    fn write(&self, state: &str) -> Result<(), String> {
        let text = format!(
            "The outputs in this directory are not complete: they must not be read as results.\n\
             {}\nhostsim {} (pid {}): {state}\n",
            self.what,
            env!("CARGO_PKG_VERSION"),
            std::process::id()
        );
        write_atomic(&self.path, text).map_err(|e| format!("writing {}: {e}", self.path.display()))
    }

    /// Say what is done so far (e.g. `3 of 12 experiments done`).
    pub fn progress(&self, state: &str) -> Result<(), String> {
        self.write(state)
    }

    /// The outputs are incomplete because of `why`: the marker says so (and stays).
    pub fn failed(&self, why: &str) {
        let _ = self.write(&format!("failed: {why}"));
    }

    /// Everything is written: remove the marker.
    pub fn complete(self) -> Result<(), String> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("removing {}: {e}", self.path.display())),
        }
    }
}

/// Remove the outputs named `names` from `dir` (those an earlier run left that this one may not
/// rewrite). A file that cannot be removed is an error naming it.
pub fn remove_stale(dir: &Path, names: &[&str]) -> Result<(), String> {
    for n in names {
        let p = dir.join(n);
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("removing the earlier {}: {e}", p.display())),
        }
    }
    Ok(())
}
