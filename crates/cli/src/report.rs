//! The HTML report of `hostsim reproduce` is drawn by the Python package (`python -m
//! hostsim.report DIR`, python/hostsim/report.py: matplotlib plots, one static page). This runs
//! it after the results are written.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The interpreter that has the `hostsim` package: `$HOSTSIM_PYTHON`, else the project's
/// `.venv` (made by scripts/setup.sh) if run from the checkout, else `python3` on the PATH.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("HOSTSIM_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = Path::new(".venv/bin/python");
    if venv.exists() {
        return venv.to_path_buf();
    }
    PathBuf::from("python3")
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
                "{} cannot import hostsim (run `bash scripts/setup.sh`, or set HOSTSIM_PYTHON)",
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
