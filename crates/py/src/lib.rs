//! `hostsim._native`: the thin binding under the Python package `hostsim` (python/hostsim).
//!
//! Everything crosses as text: scenarios as TOML (a path, or text with the path used to resolve
//! its profile), results as the same JSON and CSV the `hostsim` command writes. Simulations run
//! with the GIL released, so Python threads run points in parallel. All logic stays in the
//! scenario, host and cli crates: the same seed gives the same bytes as the command line.

use hostsim_scenario::{Row, Scenario};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::Path;

type Sets = Vec<(String, String)>;

fn load(path: &str, text: Option<&str>, sets: &Sets) -> PyResult<Scenario> {
    let p = Path::new(path);
    match text {
        Some(t) => hostsim_scenario::load_str(p, t, sets),
        None => hostsim_scenario::load(p, sets),
    }
    .map_err(|e| PyValueError::new_err(e.to_string()))
}

fn json<T: serde::Serialize>(v: &T) -> PyResult<String> {
    serde_json::to_string(v).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A Python dict given as JSON (keys in the dict's order) → TOML text.
#[pyfunction]
fn json_to_toml(text: &str) -> PyResult<String> {
    let table: toml::Table = serde_json::from_str(text).map_err(|e| PyValueError::new_err(format!("scenario dict: {e}")))?;
    toml::to_string(&table).map_err(|e| PyValueError::new_err(format!("scenario dict: {e}")))
}

/// What Python needs to know about a scenario: name, description, sweep, variants, seeds, claims,
/// figures, calibration parameters and overlay, and every run (variant × point × seed) in
/// `hostsim sweep`'s order.
#[pyfunction]
#[pyo3(signature = (path, text=None, sets=Vec::new()))]
fn scenario_info(path: &str, text: Option<&str>, sets: Sets) -> PyResult<String> {
    let sc = load(path, text, &sets)?;
    let runs: Vec<serde_json::Value> = (0..sc.run_count())
        .map(|i| {
            let (variant, point, seed) = sc.run_at(i).expect("in range");
            let point: serde_json::Map<String, serde_json::Value> =
                point.iter().map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or_default())).collect();
            serde_json::json!({ "variant": variant.unwrap_or("base"), "point": point, "seed": seed })
        })
        .collect();
    // Every run's configuration must be valid (as `hostsim check` requires).
    sc.runs().map_err(|e| PyValueError::new_err(e.to_string()))?;
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
}

/// `hostsim run`: the base configuration (or a variant), as summary.json, timeseries.csv and
/// run.json texts.
#[pyfunction]
#[pyo3(signature = (path, text=None, sets=Vec::new(), variant=None, trace=false))]
fn run(
    py: Python<'_>,
    path: &str,
    text: Option<&str>,
    sets: Sets,
    variant: Option<&str>,
    trace: bool,
) -> PyResult<(String, String, String, Option<String>)> {
    let sc = load(path, text, &sets)?;
    let mut cfg = match variant {
        Some(v) => sc.config_with(Some(v), &[]).map_err(|e| PyValueError::new_err(e.to_string()))?,
        None => sc.base_config().clone(),
    };
    let (mut out, info, tr) = py.allow_threads(|| {
        if trace {
            let (out, info, tr) = hostsim_cli::run_traced_json(cfg);
            (out, info, Some(tr))
        } else {
            let (out, info) = hostsim_cli::run_timed(cfg);
            (out, info, None)
        }
    });
    sc.derive_metrics(&mut out.summary.metrics);
    Ok((hostsim_cli::summary_json(&out.summary), out.timeseries.to_csv(), json(&info)?, tr))
}

/// Run the `index`th run of the sweep (as listed by `scenario_info`): its summary.json text.
#[pyfunction]
#[pyo3(signature = (path, index, text=None, sets=Vec::new()))]
fn run_point(py: Python<'_>, path: &str, index: usize, text: Option<&str>, sets: Sets) -> PyResult<String> {
    let sc = load(path, text, &sets)?;
    let spec = sc.run_config(index).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let cfg = spec.config;
    let mut out = py.allow_threads(|| hostsim_host::run(cfg));
    sc.derive_metrics(&mut out.summary.metrics);
    Ok(hostsim_cli::summary_json(&out.summary))
}

fn rows_of(sc: &Scenario, indices: &[usize], summaries: &[String]) -> PyResult<Vec<Row>> {
    if indices.len() != summaries.len() {
        return Err(PyValueError::new_err(format!("{} summaries for {} runs", summaries.len(), indices.len())));
    }
    let mut rows = Vec::with_capacity(indices.len());
    for (&i, s) in indices.iter().zip(summaries) {
        let (variant, point, seed) = sc
            .run_at(i)
            .ok_or_else(|| PyValueError::new_err(format!("run {i} out of range: the sweep has {} runs", sc.run_count())))?;
        let v: serde_json::Value = serde_json::from_str(s).map_err(|e| PyValueError::new_err(format!("summary: {e}")))?;
        let metrics = v
            .get("metrics")
            .and_then(|m| m.as_object())
            .ok_or_else(|| PyValueError::new_err("summary without `metrics`"))?
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
#[pyo3(signature = (path, summaries, text=None, sets=Vec::new()))]
fn finish(path: &str, summaries: Vec<String>, text: Option<&str>, sets: Sets) -> PyResult<(String, String)> {
    let sc = load(path, text, &sets)?;
    let all: Vec<usize> = (0..sc.run_count()).collect();
    let rows = rows_of(&sc, &all, &summaries)?;
    let expectations = sc.evaluate(&rows);
    Ok((hostsim_cli::results_csv(&sc, &rows), serde_json::to_string_pretty(&expectations).unwrap_or_default() + "\n"))
}

/// The calibration claims judged on the runs `indices` (`scenario_info`'s `calibration_runs`),
/// as JSON: `{"claims": [...verdicts...], "loss": [per claim], "objective": sum}`.
#[pyfunction]
#[pyo3(signature = (path, indices, summaries, text=None, sets=Vec::new()))]
fn evaluate_calibration(
    path: &str,
    indices: Vec<usize>,
    summaries: Vec<String>,
    text: Option<&str>,
    sets: Sets,
) -> PyResult<String> {
    let sc = load(path, text, &sets)?;
    let rows = rows_of(&sc, &indices, &summaries)?;
    let claims = sc.evaluate_role(&rows, hostsim_scenario::Role::Calibration);
    let loss: Vec<f64> = claims.iter().map(|c| c.calibration_loss()).collect();
    let objective: f64 = loss.iter().sum();
    json(&serde_json::json!({ "claims": claims, "loss": loss, "objective": objective }))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(json_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_info, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_point, m)?)?;
    m.add_function(wrap_pyfunction!(finish, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate_calibration, m)?)?;
    Ok(())
}
