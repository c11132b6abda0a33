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

/// What Python needs to know about a scenario: name, description, sweep, variants, claims,
/// figures, and every run (variant × point) in `hostsim sweep`'s order.
#[pyfunction]
#[pyo3(signature = (path, text=None, sets=Vec::new()))]
fn scenario_info(path: &str, text: Option<&str>, sets: Sets) -> PyResult<String> {
    let sc = load(path, text, &sets)?;
    let runs: Vec<serde_json::Value> = sc
        .runs()
        .map_err(|e| PyValueError::new_err(e.to_string()))?
        .iter()
        .map(|r| {
            let point: serde_json::Map<String, serde_json::Value> =
                r.point.iter().map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or_default())).collect();
            serde_json::json!({ "variant": r.variant, "point": point, "seed": r.config.seed })
        })
        .collect();
    let sweep: Vec<serde_json::Value> = sc.sweep.iter().map(|(k, v)| serde_json::json!([k, v])).collect();
    let variants: Vec<&str> = sc.variants.iter().map(|v| v.name.as_str()).collect();
    json(&serde_json::json!({
        "name": sc.name,
        "description": sc.description,
        "sweep": sweep,
        "variants": variants,
        "expects": sc.expects,
        "figures": sc.figures,
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
    cfg.trace = trace;
    let (mut out, info) = py.allow_threads(|| hostsim_cli::run_timed(cfg));
    sc.derive_metrics(&mut out.summary.metrics);
    Ok((hostsim_cli::summary_json(&out.summary), out.timeseries.to_csv(), json(&info)?, out.trace))
}

/// Run the `index`th run of the sweep (as listed by `scenario_info`): its summary.json text.
#[pyfunction]
#[pyo3(signature = (path, index, text=None, sets=Vec::new()))]
fn run_point(py: Python<'_>, path: &str, index: usize, text: Option<&str>, sets: Sets) -> PyResult<String> {
    let sc = load(path, text, &sets)?;
    let (variant, point) = nth_run(&sc, index)?;
    let cfg = sc.config_with(variant, &point).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let mut out = py.allow_threads(|| hostsim_host::run(cfg));
    sc.derive_metrics(&mut out.summary.metrics);
    Ok(hostsim_cli::summary_json(&out.summary))
}

/// The variant and sweep point of the `index`th run, in `Scenario::runs`' order (variant-major,
/// last sweep key fastest), without building every run's configuration (a Dask task runs one).
fn nth_run(sc: &Scenario, index: usize) -> PyResult<(Option<&str>, Vec<(String, toml::Value)>)> {
    let npoints: usize = sc.sweep.iter().map(|(_, v)| v.len()).product();
    let nvariants = sc.variants.len().max(1);
    if index >= npoints * nvariants {
        return Err(PyValueError::new_err(format!("run {index} out of range: the sweep has {} runs", npoints * nvariants)));
    }
    let variant = sc.variants.get(index / npoints).map(|v| v.name.as_str());
    let mut rest = index % npoints;
    let mut point = Vec::with_capacity(sc.sweep.len());
    for (k, vals) in sc.sweep.iter().rev() {
        point.push((k.clone(), vals[rest % vals.len()].clone()));
        rest /= vals.len();
    }
    point.reverse();
    Ok((variant, point))
}

/// From every run's summary.json (in run order): results.csv and the claims' verdicts as JSON,
/// exactly as `hostsim sweep` writes them.
#[pyfunction]
#[pyo3(signature = (path, summaries, text=None, sets=Vec::new()))]
fn finish(path: &str, summaries: Vec<String>, text: Option<&str>, sets: Sets) -> PyResult<(String, String)> {
    let sc = load(path, text, &sets)?;
    let specs = sc.runs().map_err(|e| PyValueError::new_err(e.to_string()))?;
    if specs.len() != summaries.len() {
        return Err(PyValueError::new_err(format!("{} summaries for {} runs", summaries.len(), specs.len())));
    }
    let mut rows = Vec::with_capacity(specs.len());
    for (spec, s) in specs.iter().zip(&summaries) {
        let v: serde_json::Value = serde_json::from_str(s).map_err(|e| PyValueError::new_err(format!("summary: {e}")))?;
        let metrics = v
            .get("metrics")
            .and_then(|m| m.as_object())
            .ok_or_else(|| PyValueError::new_err("summary without `metrics`"))?
            .iter()
            // summary.json writes NaN (e.g. a stalled RTT measurement) as null.
            .map(|(k, x)| (k.clone(), x.as_f64().unwrap_or(f64::NAN)))
            .collect();
        rows.push(Row { variant: spec.variant.clone(), point: spec.point.clone(), metrics });
    }
    let expectations = sc.evaluate(&rows);
    Ok((hostsim_cli::results_csv(&sc, &rows), serde_json::to_string_pretty(&expectations).unwrap_or_default() + "\n"))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(json_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_info, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_point, m)?)?;
    m.add_function(wrap_pyfunction!(finish, m)?)?;
    Ok(())
}
