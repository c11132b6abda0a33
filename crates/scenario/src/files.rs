//! Reading the files hostsim takes as input (scenarios, profiles, calibration overlays, a
//! figure's measured data): a path means that file. Only a regular file is read (after following
//! symbolic links), at most a stated number of bytes; anything else at the path (a directory, a
//! FIFO, a device, a dangling link, an unreadable file) is an error naming the path and the
//! reason, never replaced by a built-in of the same name and never waited on.
//!
//! The file is opened with `O_NONBLOCK` and checked with `fstat` on the opened descriptor, so a
//! FIFO cannot block the open and a file swapped between a check and the open is still judged
//! on what was opened.

use std::io::Read;
use std::path::{Component, Path};

/// Why a path could not be read.
#[derive(Clone, Debug, PartialEq)]
pub enum ReadError {
    /// Nothing at all is at the path (not even a dangling symbolic link).
    Missing,
    /// Something is there but cannot be used; the reason, without the path.
    Refused(String),
}

/// Is anything at `path` (a dangling symbolic link counts)?
pub fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// The bytes of the regular file at `path`, at most `limit` of them. `what` names the kind of
/// file in messages ("scenario", "calibration overlay").
pub fn read_bytes(path: &Path, what: &str, limit: u64) -> Result<Vec<u8>, ReadError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let refuse = |m: String| ReadError::Refused(format!("cannot read {what}: {m}"));
    let file = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return match std::fs::read_link(path) {
                Ok(to) => Err(refuse(format!("it is a symbolic link to {}, which does not exist", to.display()))),
                Err(_) if exists(path) => Err(refuse(e.to_string())),
                Err(_) => Err(ReadError::Missing),
            };
        }
        Err(e) => return Err(refuse(e.to_string())),
    };
    let meta = file.metadata().map_err(|e| refuse(e.to_string()))?;
    let t = meta.file_type();
    if !t.is_file() {
        let kind = if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_char_device() {
            "a character device"
        } else if t.is_block_device() {
            "a block device"
        } else {
            "not a regular file"
        };
        return Err(refuse(format!("it is {kind}, not a regular file")));
    }
    if meta.len() > limit {
        return Err(refuse(format!("{} bytes; a {what} is at most {limit} bytes", meta.len())));
    }
    let mut bytes = Vec::new();
    // A file may grow after fstat: never read past the limit.
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| refuse(e.to_string()))?;
    if bytes.len() as u64 > limit {
        return Err(refuse(format!("more than {limit} bytes; a {what} is at most that")));
    }
    Ok(bytes)
}

/// A name meant as a name or a relative path inside the scenario's tree: not absolute, no `..`,
/// not empty. `Err` says what is wrong with it.
pub fn check_relative(p: &str) -> Result<(), String> {
    if p.trim().is_empty() {
        return Err("expected a file name, got an empty one".into());
    }
    let path = Path::new(p);
    if path.is_absolute() {
        return Err(format!("expected a path relative to the scenario's directory, not an absolute one (`{p}`)"));
    }
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(format!("expected a path inside the scenario's directory, without `..` (`{p}`)"));
    }
    Ok(())
}

/// A figure's measured data is at most this large (a live sweep's results.csv is ~100 KB).
pub const MEASURED_BYTES_MAX: u64 = 16 << 20;

/// The measured data a figure names (`measured = "FILE"`, relative to the scenario), with its
/// permission bits, if the file is there: it must be a regular file inside the scenario's
/// directory or its project's `scenarios/` once symbolic links are followed (a link cannot lead
/// `reproduce` to copy a file from elsewhere into its output). `Ok(None)`: nothing is there.
pub fn read_measured(scenario_path: &Path, name: &str) -> Result<Option<(Vec<u8>, u32)>, String> {
    use std::os::unix::fs::PermissionsExt;
    check_relative(name)?;
    let dir = scenario_path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let p = dir.join(name);
    if !exists(&p) {
        return Ok(None);
    }
    let shown = p.display();
    let real = std::fs::canonicalize(&p).map_err(|e| format!("{shown}: {e}"))?;
    let mut roots = vec![dir.to_path_buf()];
    if let Some(s) = dir.ancestors().find(|a| a.file_name().is_some_and(|n| n == "scenarios")) {
        roots.push(s.to_path_buf());
    }
    let inside = roots.iter().filter_map(|r| std::fs::canonicalize(r).ok()).any(|r| real.starts_with(r));
    if !inside {
        return Err(format!(
            "{shown}: leads to {}, outside the scenario's directory: measured data must be inside it",
            real.display()
        ));
    }
    let bytes = read_bytes(&p, "measured data file", MEASURED_BYTES_MAX).map_err(|e| match e {
        ReadError::Missing => format!("{shown}: no such file"),
        ReadError::Refused(m) => format!("{shown}: {m}"),
    })?;
    let mode = std::fs::metadata(&p).map(|m| m.permissions().mode() & 0o777).unwrap_or(0o644);
    Ok(Some((bytes, mode)))
}
