//! `hostsim._native`: the thin binding under the Python package `hostsim` (python/hostsim).
//!
//! Everything crosses as text: scenarios as TOML (a path, or text with the path used to resolve
//! its profile), results as the same JSON and CSV the `hostsim` command writes. Simulations run
//! with the GIL released, so Python threads run points in parallel. All logic stays in the
//! scenario, host and cli crates: the same seed gives the same bytes as the command line.
//!
//! Errors: every failure is a `hostsim.HostsimError` (a `ValueError`, so an `Exception`) with the
//! message the command line prints. A panic inside (a bug) is caught here and raised the same
//! way, never as pyo3's `PanicException` (which `except Exception` does not catch).

// pyo3's `#[pyfunction]` expansion converts the returned `PyResult`'s error into `PyErr`, which
// clippy (1.95) reports at every function's return type as a useless conversion in our code.
#![allow(clippy::useless_conversion)]

use hostsim_scenario::{Options, Row, Scenario};
use pyo3::prelude::*;
use sha2::{Digest, Sha256};
use std::path::Path;

pyo3::create_exception!(
    _native,
    HostsimError,
    pyo3::exceptions::PyValueError,
    "A hostsim error: a bad scenario or argument, an unwritable output, a run that failed (the message says which)."
);

type Sets = Vec<(String, String)>;

fn err(msg: impl std::fmt::Display) -> PyErr {
    HostsimError::new_err(msg.to_string())
}

/// Run `f`, turning a panic into a HostsimError that names it as a bug.
fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic without a message".into());
            Err(err(format!("internal error (a bug in hostsim; please report it): {msg}")))
        }
    }
}

fn load(path: &str, text: Option<&str>, sets: &Sets, max_runs: u64) -> PyResult<Scenario> {
    let p = Path::new(path);
    let opts = Options { max_runs };
    match text {
        Some(t) => hostsim_scenario::load_str_with(p, t, sets, &opts),
        None => hostsim_scenario::load_with(p, sets, &opts),
    }
    .map_err(err)
}

fn json<T: serde::Serialize>(v: &T) -> PyResult<String> {
    serde_json::to_string(v).map_err(err)
}

/// A Python dict given as JSON (keys in the dict's order) → TOML text.
#[pyfunction]
fn json_to_toml(text: &str) -> PyResult<String> {
    guard(|| {
        let table: toml::Table = serde_json::from_str(text).map_err(|e| err(format!("scenario dict: {e}")))?;
        toml::to_string(&table).map_err(|e| err(format!("scenario dict: {e}")))
    })
}

/// A fingerprint of everything a run's results depend on: its full configuration (profile with
/// overrides, kernel, NICs, processes, traffic, times, seed), the metric aliases and the model's
/// sources (`MODEL_SOURCE_ID`: a rebuilt model is another model, whatever its version number).
/// A resumed sweep reuses a point file only if its fingerprint matches.
fn fingerprint(sc: &Scenario, cfg: &hostsim_host::HostConfig) -> String {
    let canonical = format!("hostsim model {}\n{cfg:?}\n{:?}", hostsim_scenario::MODEL_SOURCE_ID, sc.metric_aliases);
    let digest = Sha256::digest(canonical.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What Python needs to know about a scenario: name, description, sweep, variants, seeds, claims,
/// figures, calibration parameters and overlay, and every run (variant × point × seed, with its
/// fingerprint) in `hostsim sweep`'s order.
#[pyfunction]
#[pyo3(signature = (path, text=None, sets=Vec::new(), max_runs=hostsim_scenario::DEFAULT_MAX_RUNS))]
fn scenario_info(path: &str, text: Option<&str>, sets: Sets, max_runs: u64) -> PyResult<String> {
    guard(|| {
        // Loading validated every run's configuration, and the claims' and aliases' metrics are
        // checked, as `hostsim check` does: a sweep that could not be evaluated never starts.
        let sc = load(path, text, &sets, max_runs)?;
        sc.check_metrics().map_err(err)?;
        let mut runs: Vec<serde_json::Value> = Vec::with_capacity(sc.run_count());
        sc.for_each_point(|variant, point, config| {
            let point_json: serde_json::Map<String, serde_json::Value> =
                point.iter().map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or_default())).collect();
            for k in 0..u64::from(sc.seeds.max(1)) {
                let mut c = config.clone();
                c.seed = config.seed.wrapping_add(k);
                let fp = fingerprint(&sc, &c);
                runs.push(serde_json::json!({ "variant": variant.unwrap_or("base"), "point": point_json, "seed": c.seed, "fingerprint": fp }));
            }
            Ok(())
        })
        .map_err(err)?;
        let calibrate: Vec<serde_json::Value> = sc
            .calibrate
            .iter()
            .map(|p| {
                serde_json::json!({
                    "name": p.name, "key": p.key, "min": p.bounds().map(|b| b.0), "max": p.bounds().map(|b| b.1),
                    "integer": p.integer(), "offset": p.offset_f64(), "source": p.source,
                    "value": sc.key_value(&p.key).map(|v| v - p.offset_f64()),
                })
            })
            .collect();
        let sweep: Vec<serde_json::Value> = sc.sweep.iter().map(|(k, v)| serde_json::json!([k, v])).collect();
        let variants: Vec<&str> = sc.variants.iter().map(|v| v.name.as_str()).collect();
        json(&serde_json::json!({
            "name": sc.name,
            "description": sc.description,
            "extends": sc.extends,
            "sweep": sweep,
            "variants": variants,
            "expects": sc.expects,
            "figures": sc.figures,
            "seeds": sc.seeds,
            "seed_list": sc.seed_list(),
            "calibrate": calibrate,
            "calibration": sc.calibration,
            "calibration_runs": sc.runs_for_role(hostsim_scenario::Role::Calibration),
            "runs": runs,
        }))
    })
}

/// `hostsim run`: the base configuration (or a variant), as summary.json, timeseries.csv and
/// run.json texts. With `trace_dir`, the trace is streamed into that directory as `hostsim run
/// --trace` streams it (memory stays flat) and its path is returned.
#[pyfunction]
#[pyo3(signature = (path, text=None, sets=Vec::new(), variant=None, trace_dir=None, trace_format="json", max_runs=hostsim_scenario::DEFAULT_MAX_RUNS))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    path: &str,
    text: Option<&str>,
    sets: Sets,
    variant: Option<&str>,
    trace_dir: Option<&str>,
    trace_format: &str,
    max_runs: u64,
) -> PyResult<(String, String, String, Option<String>)> {
    guard(|| {
        let sc = load(path, text, &sets, max_runs)?;
        let cfg = match variant {
            Some(v) => sc.config_with(Some(v), &[]).map_err(err)?,
            None => sc.base_config().clone(),
        };
        sc.check_aliases(&cfg, &format!("variant `{}`", variant.unwrap_or("base"))).map_err(err)?;
        let format = match trace_format {
            "json" => hostsim_run::TraceFormat::Json,
            "perfetto" => hostsim_run::TraceFormat::Perfetto,
            f => return Err(err(format!("trace_format: expected \"json\" or \"perfetto\", not {f:?}"))),
        };
        let (mut out, info, tr) = py.allow_threads(|| {
            guard(|| match trace_dir {
                Some(d) => {
                    let dir = Path::new(d);
                    hostsim_run::prepare_out(dir).map_err(err)?;
                    let (out, info) =
                        hostsim_run::run_timed_traced(cfg, format, hostsim_host::TraceWindow::ALL, dir, |_| {})
                            .map_err(err)?;
                    Ok((out, info, Some(dir.join(format.file_name()).display().to_string())))
                }
                None => {
                    let (out, info) = hostsim_run::run_timed(cfg).map_err(err)?;
                    Ok((out, info, None))
                }
            })
        })?;
        sc.derive_metrics(&mut out.summary.metrics).map_err(err)?;
        Ok((hostsim_run::summary_json(&out.summary), out.timeseries.to_csv(), json(&info)?, tr))
    })
}

/// Run the `index`th run of the sweep (as listed by `scenario_info`): its summary.json text and
/// its fingerprint.
#[pyfunction]
#[pyo3(signature = (path, index, text=None, sets=Vec::new(), max_runs=hostsim_scenario::DEFAULT_MAX_RUNS))]
fn run_point(
    py: Python<'_>,
    path: &str,
    index: usize,
    text: Option<&str>,
    sets: Sets,
    max_runs: u64,
) -> PyResult<(String, String)> {
    guard(|| {
        let sc = load(path, text, &sets, max_runs)?;
        let spec = sc.run_config(index).map_err(err)?;
        let fp = fingerprint(&sc, &spec.config);
        let what = hostsim_run::describe_run(&spec);
        let cfg = spec.config;
        let mut out = py.allow_threads(|| {
            guard(|| hostsim_run::run_checked(cfg).map_err(|e| err(format!("{path}: run {what}: {e}"))))
        })?;
        sc.derive_metrics(&mut out.summary.metrics).map_err(err)?;
        Ok((hostsim_run::summary_json(&out.summary), fp))
    })
}

/// Make sure `dir` exists and can be written to, with the command line's message if not.
#[pyfunction]
fn prepare_out(dir: &str) -> PyResult<()> {
    guard(|| hostsim_run::prepare_out(Path::new(dir)).map_err(err))
}

fn rows_of(sc: &Scenario, indices: &[usize], summaries: &[String]) -> PyResult<Vec<Row>> {
    if indices.len() != summaries.len() {
        return Err(err(format!("{} summaries for {} runs", summaries.len(), indices.len())));
    }
    let mut rows = Vec::with_capacity(indices.len());
    for (&i, s) in indices.iter().zip(summaries) {
        let (variant, point, seed) =
            sc.run_at(i).ok_or_else(|| err(format!("run {i} out of range: the sweep has {} runs", sc.run_count())))?;
        let v: serde_json::Value = serde_json::from_str(s).map_err(|e| err(format!("summary of run {i}: {e}")))?;
        let metrics = v
            .get("metrics")
            .and_then(|m| m.as_object())
            .ok_or_else(|| err(format!("summary of run {i} has no `metrics` table")))?
            .iter()
            // summary.json writes NaN (e.g. a stalled RTT measurement) as null.
            .map(|(k, x)| (k.clone(), x.as_f64().unwrap_or(f64::NAN)))
            .collect();
        rows.push(Row { variant: variant.unwrap_or("base").to_string(), point, seed, metrics });
    }
    Ok(rows)
}

/// From every run's summary.json (in run order): results.csv and the claims' verdicts as JSON,
/// exactly as `hostsim sweep` writes them.
#[pyfunction]
#[pyo3(signature = (path, summaries, text=None, sets=Vec::new(), max_runs=hostsim_scenario::DEFAULT_MAX_RUNS))]
fn finish(
    path: &str,
    summaries: Vec<String>,
    text: Option<&str>,
    sets: Sets,
    max_runs: u64,
) -> PyResult<(String, String)> {
    guard(|| {
        let sc = load(path, text, &sets, max_runs)?;
        let all: Vec<usize> = (0..sc.run_count()).collect();
        let rows = rows_of(&sc, &all, &summaries)?;
        let expectations = sc.evaluate(&rows);
        Ok((
            hostsim_run::results_csv(&sc, &rows),
            serde_json::to_string_pretty(&expectations).unwrap_or_default() + "\n",
        ))
    })
}

/// The calibration claims judged on the runs `indices` (`scenario_info`'s `calibration_runs`),
/// as JSON: `{"claims": [...verdicts...], "loss": [per claim], "objective": sum}`. The objective
/// sums the primary readings' losses only: a paper sentence read several ways (`claim_id`) is
/// fitted under its primary reading, the others are reported beside it.
#[pyfunction]
#[pyo3(signature = (path, indices, summaries, text=None, sets=Vec::new(), max_runs=hostsim_scenario::DEFAULT_MAX_RUNS))]
fn evaluate_calibration(
    path: &str,
    indices: Vec<usize>,
    summaries: Vec<String>,
    text: Option<&str>,
    sets: Sets,
    max_runs: u64,
) -> PyResult<String> {
    guard(|| {
        let sc = load(path, text, &sets, max_runs)?;
        let rows = rows_of(&sc, &indices, &summaries)?;
        let claims = sc.evaluate_role(&rows, hostsim_scenario::Role::Calibration);
        let loss: Vec<f64> = claims.iter().map(|c| c.calibration_loss()).collect();
        let objective: f64 = claims.iter().zip(&loss).filter(|(c, _)| c.primary).map(|(_, l)| l).sum();
        json(&serde_json::json!({ "claims": claims, "loss": loss, "objective": objective }))
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("HostsimError", m.py().get_type_bound::<HostsimError>())?;
    m.add("DEFAULT_MAX_RUNS", hostsim_scenario::DEFAULT_MAX_RUNS)?;
    m.add("MODEL_SOURCE_ID", hostsim_scenario::MODEL_SOURCE_ID)?;
    m.add_function(wrap_pyfunction!(json_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_info, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_point, m)?)?;
    m.add_function(wrap_pyfunction!(prepare_out, m)?)?;
    m.add_function(wrap_pyfunction!(finish, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate_calibration, m)?)?;
    Ok(())
}
