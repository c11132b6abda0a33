//! The HTML report of `hostsim reproduce` is drawn by the Python package (`python -m
//! hostsim.report DIR`, python/hostsim/report.py: matplotlib plots, one static page). This runs
//! it after the results are written.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The checkouts this binary belongs to: the one it sits in (`<checkout>/target/<profile>/
/// hostsim`), then the one it was built from. Never the current directory: under `sudo` in a
/// directory someone else controls, its `.venv/bin/python` would run as root.
fn checkouts() -> Vec<PathBuf> {
    let is_checkout = |d: &Path| d.join("Cargo.toml").is_file() && d.join("python/hostsim/__init__.py").is_file();
    let mut v = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        if let Some(d) = exe.ancestors().skip(1).find(|d| is_checkout(d)) {
            v.push(d.to_path_buf());
        }
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if is_checkout(&built) {
        if let Ok(b) = built.canonicalize() {
            if !v.contains(&b) {
                v.push(b);
            }
        }
    }
    v
}

/// `name` found in an absolute directory of `$PATH` (a relative entry such as `.` would find a
/// program of the current directory).
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).filter(|d| d.is_absolute()).map(|d| d.join(name)).find(|p| p.is_file())
}

/// The interpreter that has the `hostsim` package: `$HOSTSIM_PYTHON`, else the `.venv` (made by
/// scripts/setup.sh) of the checkout this binary belongs to, else `python3` from an absolute
/// `$PATH` directory. Never a program of the current directory.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("HOSTSIM_PYTHON") {
        return PathBuf::from(p);
    }
    for c in checkouts() {
        let venv = c.join(".venv/bin/python");
        if venv.is_file() {
            return venv;
        }
    }
    on_path("python3").unwrap_or_else(|| PathBuf::from("/usr/bin/python3"))
}

/// Build `out/report/index.html`. `Ok(None)` (with the reason) when no interpreter with the
/// package is found: the results stand without the report. An error if the builder fails.
pub fn build(out: &Path) -> Result<Result<PathBuf, String>, String> {
    let py = python();
    let probe = Command::new(&py).args(["-c", "import hostsim.report"]).output();
    match probe {
        Ok(o) if o.status.success() => {}
        _ => {
            return Ok(Err(format!(
                "{} cannot import hostsim (run `bash scripts/setup.sh` in hostsim's checkout, or set HOSTSIM_PYTHON)",
                py.display()
            )))
        }
    }
    let status = Command::new(&py)
        .args(["-m", "hostsim.report"])
        .arg(out)
        .status()
        .map_err(|e| format!("{}: {e}", py.display()))?;
    if !status.success() {
        return Err(format!("report builder `{} -m hostsim.report {}` failed ({status})", py.display(), out.display()));
    }
    Ok(Ok(out.join("report").join("index.html")))
}

/// `hostsim calibrate`: run `python -m hostsim.calibration ARGS` (the fit uses scipy; see
/// python/hostsim/calibration.py). Returns its exit code.
pub fn calibrate(args: &[String]) -> Result<i32, String> {
    let py = python();
    let probe = Command::new(&py).args(["-c", "import hostsim.calibration, scipy"]).output();
    match probe {
        Ok(o) if o.status.success() => {}
        _ => {
            return Err(format!(
                "{} cannot import hostsim and scipy (run `bash scripts/setup.sh`, or set HOSTSIM_PYTHON)",
                py.display()
            ))
        }
    }
    // The fit runs the model through the Python module (`_native`), built apart from this
    // binary: it compares this id with its own and refuses to fit a different model.
    let status = Command::new(&py)
        .args(["-m", "hostsim.calibration"])
        .args(args)
        .env("HOSTSIM_CLI_MODEL_SOURCE_ID", hostsim_scenario::MODEL_SOURCE_ID)
        .status()
        .map_err(|e| format!("{}: {e}", py.display()))?;
    Ok(status.code().unwrap_or(1))
}

/// The commit of the checkout this binary belongs to (`git rev-parse HEAD`, with `+changes` when
/// tracked files differ from it), for the provenance of `hostsim reproduce`; None without a
/// checkout or git. The model-source id, not this, says which model ran.
pub fn checkout_commit() -> Option<String> {
    let git = on_path("git")?;
    let dir = checkouts().into_iter().next()?;
    let run = |args: &[&str]| {
        let o = Command::new(&git).arg("-C").arg(&dir).args(args).output().ok()?;
        o.status.success().then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let head = run(&["rev-parse", "HEAD"]).filter(|h| !h.is_empty())?;
    let changed = run(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if changed { format!("{head}+changes") } else { head })
}
