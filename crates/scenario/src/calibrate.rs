//! Calibration as a declared step: `[[calibrate]]` parameters and the overlay that holds their
//! fitted values.
//!
//! ```toml
//! calibration = "ozaki-pbq"          # the overlay: calibration/ozaki-pbq.toml beside the scenario
//!                                    # or in its project (the directory holding the `scenarios/`
//!                                    # it is in), else built in; written by `hostsim calibrate`.
//!                                    # A name, not a path: no `/`, no `..`.
//! [[calibrate]]
//! name = "client_stack_ns"           # the fitted quantity (scenarios sharing the overlay share it)
//! key = "traffic.latudp.client_stack_ns"   # where it goes in THIS scenario (any key path)
//! min = 10000                        # bounds: integers give an integer parameter
//! max = 30000
//! source = "Celeron 800 client stack: ..."  # where the bounds come from (required)
//! offset = 0                         # optional: the key gets value + offset
//! ```
//!
//! A parameter may be declared more than once under one `name` (with equal bounds) to put one
//! fitted value in several keys, e.g. the same client in two traffic sources. When the scenario is
//! loaded, every declared parameter that the overlay's `[values]` table holds is written to its
//! key (before `--set`, which still wins), so `run`, `sweep` and `reproduce` use the fitted values.
//! Without an overlay file the scenario's own values stand and it is reported as uncalibrated.
//!
//! The overlay file (`hostsim calibrate` writes it; do not edit by hand):
//!
//! ```toml
//! [values]
//! client_stack_ns = 17250
//! [fit]                              # how the values were obtained (shown in the report)
//! date = "2026-11-22T13:00:00Z"
//! scenarios = ["ozaki-pbq-micro", ...]
//! claims = ["original: UDP round-trip time ...", ...]   # the calibration claims fitted
//! seeds = [1, 2, 3]
//! objective = 0.012                  # sum of ExpectResult::calibration_loss at the values
//! ...
//! ```
//!
//! Only claims with `role = "calibration"` (about the baseline system) enter the objective.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use toml::{Table, Value};

/// A fitted parameter of a scenario.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CalibrateParam {
    /// The quantity's name in the overlay.
    pub name: String,
    /// The key path it is written to in this scenario.
    pub key: String,
    /// Lower bound (an integer bound pair makes an integer parameter).
    pub min: Value,
    pub max: Value,
    /// Where the bounds come from.
    #[serde(default)]
    pub source: String,
    /// The key gets `value + offset`.
    #[serde(default)]
    pub offset: Option<Value>,
}

impl CalibrateParam {
    pub fn integer(&self) -> bool {
        self.min.is_integer() && self.max.is_integer() && self.offset.as_ref().is_none_or(|o| o.is_integer())
    }
    pub fn bounds(&self) -> Option<(f64, f64)> {
        Some((num(&self.min)?, num(&self.max)?))
    }
    pub fn offset_f64(&self) -> f64 {
        self.offset.as_ref().and_then(num).unwrap_or(0.0)
    }
    /// The TOML value written to `key` for a fitted `value`.
    pub fn key_value(&self, value: f64) -> Value {
        let v = value + self.offset_f64();
        if self.integer() {
            Value::Integer(v.round() as i64)
        } else {
            Value::Float(v)
        }
    }
}

pub fn num(v: &Value) -> Option<f64> {
    v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
}

/// A loaded overlay file.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Overlay {
    /// Where it was read from (`<built-in>/calibration/NAME.toml` for a built-in one).
    pub path: String,
    /// Fitted value per parameter name.
    pub values: Table,
    /// How they were obtained (free-form, as `hostsim calibrate` wrote it).
    pub fit: Table,
}

/// The scenario's calibration: the overlay's name, where it would be, and the overlay if found.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Calibration {
    pub name: String,
    /// Where `hostsim calibrate` writes the overlay for this scenario.
    pub path: PathBuf,
    pub overlay: Option<Overlay>,
    /// Parameter names whose fitted value was applied.
    pub applied: Vec<String>,
}

/// Is `name` a plain overlay name (`calibration = "NAME"` names `calibration/NAME.toml`)? A
/// path, absolute or with `..`, would read (and `hostsim calibrate` write) any `.toml` file.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if ok {
        return Ok(());
    }
    let what = if std::path::Path::new(name).is_absolute() {
        "an absolute path"
    } else if name.split(['/', '\\']).any(|p| p == "..") {
        "a path with `..`"
    } else if name.contains(['/', '\\']) {
        "a path"
    } else {
        "not a plain name"
    };
    Err(format!(
        "expected the name of an overlay (letters, digits, `-`, `_`, `.`: calibration/NAME.toml beside the scenario or in its project), got {what}: {name:?}"
    ))
}

/// The directory of the project a scenario belongs to: the one holding the `scenarios/`
/// directory the scenario is in (`<project>/scenarios/…/x.toml`), if it is in one.
fn project_of(scenario_dir: &Path) -> Option<PathBuf> {
    scenario_dir.ancestors().find(|a| a.file_name().is_some_and(|n| n == "scenarios")).map(|s| {
        let p = s.parent().unwrap_or(Path::new("."));
        if p.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            p.to_path_buf()
        }
    })
}

/// Find overlay `name` (checked by [`check_name`]) for a scenario: `calibration/<name>.toml`
/// beside the scenario, then in the project it belongs to (see [`project_of`]), else a
/// built-in one; no other place on disk. Returns where it is (or where `hostsim calibrate`
/// writes it: the project's `calibration/`, else beside the scenario) and its text and origin if
/// it exists. A file that exists at a candidate path is read or refused (an error naming it),
/// never skipped for the next candidate or the built-in.
pub fn find_overlay(scenario_path: &Path, name: &str) -> Result<(PathBuf, Option<(String, String)>), String> {
    let dir = scenario_path.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
    let file = format!("{name}.toml");
    let project = project_of(&dir);
    let mut candidates = vec![dir.join("calibration").join(&file)];
    if let Some(p) = &project {
        let c = p.join("calibration").join(&file);
        if c != candidates[0] {
            candidates.push(c);
        }
    }
    for p in &candidates {
        match crate::files::read_bytes(p, "calibration overlay", crate::FILE_BYTES_MAX) {
            Ok(bytes) => {
                let text = String::from_utf8(bytes).map_err(|e| {
                    let at = e.utf8_error().valid_up_to();
                    let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
                    format!(
                        "{}:{line}: cannot read calibration overlay: not UTF-8 text (byte 0x{:02X}; save it as UTF-8)",
                        p.display(),
                        e.as_bytes()[at]
                    )
                })?;
                return Ok((p.clone(), Some((text, p.display().to_string()))));
            }
            Err(crate::files::ReadError::Missing) => {}
            Err(crate::files::ReadError::Refused(m)) => return Err(format!("{}: {m}", p.display())),
        }
    }
    let home = match &project {
        Some(p) => p.join("calibration").join(&file),
        None => candidates[0].clone(),
    };
    Ok(match crate::builtin_calibrations().iter().find(|(n, _)| *n == name) {
        Some((_, t)) => (home, Some((t.to_string(), format!("<built-in>/calibration/{file}")))),
        None => (home, None),
    })
}

/// Parse an overlay's text.
pub fn parse_overlay(text: &str, origin: &str) -> Result<Overlay, String> {
    let t: Table =
        text.parse().map_err(|e: toml::de::Error| format!("{origin}: not valid TOML: {}", e.message().trim()))?;
    for k in t.keys() {
        if k != "values" && k != "fit" {
            return Err(format!("{origin}: key `{k}`: unknown key, expected `values` or `fit`"));
        }
    }
    let values = match t.get("values") {
        Some(Value::Table(v)) => v.clone(),
        Some(_) => return Err(format!("{origin}: key `values`: expected a table of parameter = number")),
        None => Table::new(),
    };
    for (k, v) in &values {
        match num(v) {
            Some(x) if x.is_finite() => {}
            Some(x) => return Err(format!("{origin}: key `values.{k}`: expected a finite number, got {x}")),
            None => return Err(format!("{origin}: key `values.{k}`: expected a number")),
        }
    }
    let fit = t.get("fit").and_then(Value::as_table).cloned().unwrap_or_default();
    Ok(Overlay { path: origin.to_string(), values, fit })
}

/// Validate `seeds`, the claims' role keys and the `[[calibrate]]` parameters: every error names
/// the line, the key and the allowed range.
pub(crate) fn validate(sc: &crate::Scenario) -> Result<(), crate::ScenarioError> {
    use crate::paths::Seg;
    let at = |segs: Vec<Seg>, msg: String| crate::err_segs(&sc.path, &sc.src, &segs, crate::paths::render(&segs), msg);
    let key = |k: &str| vec![Seg::Key(k.into())];
    let elem = |arr: &str, i: usize, k: &str| vec![Seg::Key(arr.into()), Seg::Index(i), Seg::Key(k.into())];
    if !(1..=1000).contains(&sc.seeds) {
        return Err(at(key("seeds"), format!("expected 1..=1000 seeds per point and variant, got {}", sc.seeds)));
    }
    if sc.seeds > 1 && sc.sweep.iter().any(|(k, _)| k == "seed") {
        return Err(at(
            key("seeds"),
            "`seeds` and a sweep over `seed` cannot be combined: use `seeds` (runs seed, seed+1, ...)".into(),
        ));
    }
    if sc.base.seed.checked_add(u64::from(sc.seeds)).is_none() {
        return Err(at(
            key("seed"),
            format!("seed + seeds must stay below 2^64 (seed {}, seeds {})", sc.base.seed, sc.seeds),
        ));
    }
    for (i, e) in sc.expects.iter().enumerate() {
        if !e.applicable && e.finding.trim().is_empty() {
            return Err(at(
                elem("expect", i, "applicable"),
                "a claim with `applicable = false` needs a `finding` saying why the model cannot test it".into(),
            ));
        }
        if e.applicable == e.untestable.is_some() {
            let msg = if e.applicable {
                "`untestable` is for a claim with `applicable = false`: remove it, or say the claim cannot be tested"
            } else {
                "a claim with `applicable = false` needs `untestable`: \"no_reference\" (the paper gives nothing to compare with) or \"not_simulated\" (the model does not simulate the quantity); a value the model does not produce is a failing claim, not an untestable one"
            };
            return Err(at(elem("expect", i, if e.applicable { "untestable" } else { "applicable" }), msg.into()));
        }
        if let Err((k, msg)) = crate::finding::check(&e.finding, &e.detail, e.finding_model.as_deref()) {
            return Err(at(elem("expect", i, k), msg));
        }
        if let Some(t) = e.tolerance {
            if !(t.is_finite() && t >= 0.0) {
                return Err(at(elem("expect", i, "tolerance"), format!("expected a relative tolerance >= 0, got {t}")));
            }
        }
    }
    let readings: Vec<crate::finding::Reading> = sc
        .expects
        .iter()
        .map(|e| crate::finding::Reading {
            claim: &e.claim,
            claim_id: e.claim_id.as_deref(),
            reading: e.reading.as_deref(),
            primary: e.primary,
            from_above: e.bounds_from_above(),
            from_below: matches!(e.op, crate::Op::Gt | crate::Op::Ge),
            calibration: e.role == crate::expect::Role::Calibration,
            applicable: e.applicable,
        })
        .collect();
    if let Err((i, k, msg)) = crate::finding::check_readings(&readings) {
        return Err(at(elem("expect", i, k), msg));
    }
    if sc.calibrate.is_empty() {
        return Ok(());
    }
    if sc.calibration.is_none() {
        return Err(at(key("calibrate"), "`[[calibrate]]` needs `calibration = \"NAME\"` at the top level: the overlay (calibration/NAME.toml) that holds the fitted values".into()));
    }
    let mut seen: Vec<&CalibrateParam> = Vec::new();
    for (i, p) in sc.calibrate.iter().enumerate() {
        if p.name.is_empty() || !p.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(at(
                elem("calibrate", i, "name"),
                "expected letters, digits or `_` (it names the fitted value in the overlay)".into(),
            ));
        }
        let Some((lo, hi)) = p.bounds() else {
            let k = if num(&p.min).is_none() { "min" } else { "max" };
            return Err(at(elem("calibrate", i, k), "expected a number".into()));
        };
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(at(elem("calibrate", i, "max"), format!("expected min < max, got {lo}..={hi}")));
        }
        if p.offset.as_ref().is_some_and(|o| num(o).is_none()) {
            return Err(at(elem("calibrate", i, "offset"), "expected a number".into()));
        }
        if p.source.trim().is_empty() {
            return Err(at(
                elem("calibrate", i, "source"),
                "say where the bounds come from (a measurement, a datasheet, a paper)".into(),
            ));
        }
        if let Some(q) = seen.iter().find(|q| q.name == p.name) {
            if q.bounds() != p.bounds() {
                return Err(at(
                    elem("calibrate", i, "min"),
                    format!("`{}` is declared twice with different bounds", p.name),
                ));
            }
        }
        seen.push(p);
        // The key must accept both bounds: build the base configuration at each.
        for b in [lo, hi] {
            if let Err(e) = sc.config_with_sets(None, &[], &[(p.key.clone(), p.key_value(b))]) {
                let msg = format!(
                    "`{}` = {} (a bound, + offset) does not give a valid scenario: {}",
                    p.key,
                    p.key_value(b),
                    e.message
                );
                return Err(at(elem("calibrate", i, "key"), msg));
            }
        }
    }
    Ok(())
}

/// The value at a dotted key path (arrays of tables addressed by element name or index), if
/// the document has one.
pub(crate) fn get_path(doc: &Table, path: &str) -> Option<Value> {
    let segs = crate::paths::resolve(doc, path);
    let mut cur = Value::Table(doc.clone());
    for s in segs {
        cur = match (s, cur) {
            (crate::paths::Seg::Key(k), Value::Table(mut t)) => t.remove(&k)?,
            (crate::paths::Seg::Index(i), Value::Array(mut a)) if i < a.len() => a.swap_remove(i),
            _ => return None,
        };
    }
    Some(cur)
}

impl crate::Scenario {
    /// The value a key has in this scenario as loaded (after the overlay and `--set`): from the
    /// file, or for `profile_set.<...>` keys the file doesn't set, from the machine profile.
    pub fn key_value(&self, key: &str) -> Option<f64> {
        if let Some(v) = get_path(&self.doc, key) {
            return num(&v);
        }
        let rest = key.strip_prefix("profile_set.")?;
        let profile = Value::try_from(&self.base.profile).ok()?;
        let t = profile.as_table()?;
        get_path(t, rest).as_ref().and_then(num)
    }
}
