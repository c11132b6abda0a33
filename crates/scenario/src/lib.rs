//! # hostsim-scenario: the scenario file format
//!
//! A scenario is a TOML file naming a machine profile, kernel options, NICs, processes, traffic,
//! a duration and a seed, plus optionally a `[sweep]` of parameter values, `[[variant]]`s that
//! override keys (e.g. a mechanism on/off) and `[[expect]]` claims. See `scenarios/examples/` and
//! the README for annotated files.
//!
//! Loading applies command-line overrides (`--set key=value`), deserialises with unknown keys
//! rejected, and validates meaning (names unique, CPUs in range, ports bound, …). Every error
//! names the file, the line, the key and what was expected ([`ScenarioError`]); nothing panics on
//! bad input.

mod error;
mod expect;
mod paths;
mod validate;

pub use error::ScenarioError;
pub use expect::{Expect, ExpectResult, Op, Reduce, Row, Selector};
pub use paths::{parse_value, set_path};

use hostsim_host::{HostConfig, KernelConfig, NicConfig, ProcessConfig, Profile, TrafficConfig};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::{Table, Value};

mod builtin {
    include!(concat!(env!("OUT_DIR"), "/builtin.rs"));
}

/// Built-in machine profiles: (name, TOML text).
pub fn builtin_profiles() -> &'static [(&'static str, &'static str)] {
    builtin::PROFILES
}

/// Built-in scenarios: (name relative to `scenarios/` without `.toml`, TOML text).
pub fn builtin_scenarios() -> &'static [(&'static str, &'static str)] {
    builtin::SCENARIOS
}

/// The file's top level, as deserialised.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: String,
    /// A profile name (`profiles/<name>.toml`) or a path relative to the scenario file.
    profile: String,
    duration_ms: u64,
    #[serde(default)]
    warmup_ms: u64,
    #[serde(default = "seed")]
    seed: u64,
    #[serde(default = "sample")]
    sample_interval_ms: u64,
    #[serde(default)]
    kernel: KernelConfig,
    #[serde(default, rename = "nic")]
    nics: Vec<NicConfig>,
    #[serde(default, rename = "process")]
    processes: Vec<ProcessConfig>,
    #[serde(default, rename = "traffic")]
    traffic: Vec<TrafficConfig>,
    #[serde(default)]
    sweep: Table,
    #[serde(default, rename = "variant")]
    variants: Vec<Variant>,
    #[serde(default, rename = "expect")]
    expects: Vec<Expect>,
}

fn seed() -> u64 {
    1
}
fn sample() -> u64 {
    10
}

/// A named set of key overrides.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Dotted key path → value.
    #[serde(default)]
    pub set: Table,
}

/// One run of a sweep: a variant at a point.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub variant: String,
    pub point: Vec<(String, Value)>,
    pub config: HostConfig,
}

/// A loaded, validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub path: PathBuf,
    pub name: String,
    pub description: String,
    src: String,
    doc: Table,
    base: HostConfig,
    pub sweep: Vec<(String, Vec<Value>)>,
    pub variants: Vec<Variant>,
    pub expects: Vec<Expect>,
}

/// Load a scenario file, applying `overrides` (`key`, `value` as written on the command line).
/// `path` may also name a built-in scenario (`examples/livelock` or `livelock`).
pub fn load(path: &Path, overrides: &[(String, String)]) -> Result<Scenario, ScenarioError> {
    let src = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            let want = path.to_string_lossy().trim_end_matches(".toml").trim_start_matches("scenarios/").to_string();
            let hit = builtin_scenarios()
                .iter()
                .find(|(n, _)| *n == want || n.rsplit('/').next() == Some(want.as_str()));
            match hit {
                Some((_, text)) => text.to_string(),
                None => return Err(ScenarioError::new(path, None, "", format!("cannot read scenario: {e}"))),
            }
        }
    };
    load_str(path, &src, overrides)
}

/// Load a scenario from text; `path` is used for error messages and to resolve the profile.
pub fn load_str(path: &Path, src: &str, overrides: &[(String, String)]) -> Result<Scenario, ScenarioError> {
    let mut doc: Table = src.parse::<Table>().map_err(|e| {
        let line = e.span().map(|s| error::line_of(src, s.start));
        ScenarioError::new(path, line, "", format!("not valid TOML: {}", e.message()))
    })?;
    for (k, v) in overrides {
        set_path(&mut doc, k, parse_value(v))
            .map_err(|m| ScenarioError::new(path, None, k.clone(), format!("--set: {m}")))?;
    }
    let file = deserialize(path, src, &doc)?;
    let name = file.name.clone().unwrap_or_else(|| {
        path.file_stem().map_or("scenario".into(), |s| s.to_string_lossy().into_owned())
    });
    let sweep: Vec<(String, Vec<Value>)> = file
        .sweep
        .iter()
        .map(|(k, v)| match v {
            Value::Array(a) if !a.is_empty() => Ok((k.clone(), a.clone())),
            _ => Err(err_at(path, src, &["sweep", k], format!("sweep.`{k}`"), "expected a non-empty array of values")),
        })
        .collect::<Result<_, _>>()?;
    let sc = Scenario {
        path: path.to_path_buf(),
        name,
        description: file.description.clone(),
        src: src.to_string(),
        base: to_config(path, src, &file)?,
        doc,
        sweep,
        variants: file.variants.clone(),
        expects: file.expects.clone(),
    };
    validate::scenario(&sc)?;
    // Every variant at every point must itself be valid: check them all now, not mid-sweep.
    sc.runs()?;
    Ok(sc)
}

fn err_at(path: &Path, src: &str, keys: &[&str], key: String, msg: impl Into<String>) -> ScenarioError {
    let segs: Vec<paths::Seg> = keys.iter().map(|k| paths::Seg::Key(k.to_string())).collect();
    let line = paths::locate(src, &segs).map(|o| error::line_of(src, o));
    ScenarioError::new(path, line, key, msg)
}

fn deserialize(path: &Path, src: &str, doc: &Table) -> Result<File, ScenarioError> {
    let de = Value::Table(doc.clone());
    serde_path_to_error::deserialize::<_, File>(de).map_err(|e| {
        let mut segs = paths::segs_of(e.path());
        let inner = e.inner().to_string();
        // For an unknown key serde names it in the message; point at it.
        if let Some(k) = inner.strip_prefix("unknown field `").and_then(|r| r.split('`').next()) {
            if segs.last() != Some(&paths::Seg::Key(k.to_string())) {
                segs.push(paths::Seg::Key(k.to_string()));
            }
        }
        let line = paths::locate(src, &segs).map(|o| error::line_of(src, o));
        let key = paths::render(&segs);
        ScenarioError::new(path, line, key, inner)
    })
}

/// Resolve and parse a profile: a path relative to the scenario, `profiles/<name>.toml` in the
/// scenario's directory or any ancestor, or a built-in profile.
pub fn load_profile(scenario_path: &Path, name: &str) -> Result<(Profile, String), String> {
    let (text, origin) = if name.ends_with(".toml") || name.contains('/') {
        let p = scenario_path.parent().unwrap_or(Path::new(".")).join(name);
        (std::fs::read_to_string(&p).map_err(|e| format!("cannot read profile {}: {e}", p.display()))?, p)
    } else {
        let mut found = None;
        let start = scenario_path.parent().map(Path::to_path_buf).unwrap_or_default();
        let start = if start.as_os_str().is_empty() { PathBuf::from(".") } else { start };
        for dir in start.ancestors() {
            let p = dir.join("profiles").join(format!("{name}.toml"));
            if let Ok(t) = std::fs::read_to_string(&p) {
                found = Some((t, p));
                break;
            }
        }
        match found {
            Some(f) => f,
            None => match builtin_profiles().iter().find(|(n, _)| *n == name) {
                Some((_, t)) => (t.to_string(), PathBuf::from(format!("<built-in>/profiles/{name}.toml"))),
                None => {
                    let names: Vec<&str> = builtin_profiles().iter().map(|(n, _)| *n).collect();
                    return Err(format!("no profile `{name}` (built-in: {})", names.join(", ")));
                }
            },
        }
    };
    let profile: Profile = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|s| error::line_of(&text, s.start)).unwrap_or(0);
        format!("{}:{line}: {}", origin.display(), e.message())
    })?;
    validate::profile(&profile).map_err(|m| format!("{}: {m}", origin.display()))?;
    Ok((profile, origin.display().to_string()))
}

fn to_config(path: &Path, src: &str, f: &File) -> Result<HostConfig, ScenarioError> {
    let (profile, _) = load_profile(path, &f.profile)
        .map_err(|m| err_at(path, src, &["profile"], "profile".into(), m))?;
    let ms = 1_000_000u64;
    let cfg = HostConfig {
        profile,
        kernel: f.kernel.clone(),
        nics: f.nics.clone(),
        processes: f.processes.clone(),
        traffic: f.traffic.clone(),
        duration_ns: f.duration_ms.saturating_mul(ms),
        warmup_ns: f.warmup_ms.saturating_mul(ms),
        seed: f.seed,
        sample_interval_ns: f.sample_interval_ms.saturating_mul(ms),
        trace: false,
    };
    validate::config(&cfg).map_err(|(keys, m)| {
        let segs: Vec<paths::Seg> = keys.clone();
        let line = paths::locate(src, &segs).map(|o| error::line_of(src, o));
        ScenarioError::new(path, line, paths::render(&keys), m)
    })?;
    Ok(cfg)
}

impl Scenario {
    /// The configuration without any variant or sweep value applied.
    pub fn base_config(&self) -> &HostConfig {
        &self.base
    }

    /// Configuration of `variant` (if any) at sweep `point`.
    pub fn config_with(&self, variant: Option<&str>, point: &[(String, Value)]) -> Result<HostConfig, ScenarioError> {
        let mut doc = self.doc.clone();
        let mut what = String::new();
        if let Some(vname) = variant {
            let v = self.variants.iter().find(|v| v.name == vname).ok_or_else(|| {
                let names: Vec<&str> = self.variants.iter().map(|v| v.name.as_str()).collect();
                ScenarioError::new(&self.path, None, "variant", format!("no variant `{vname}` (have: {})", names.join(", ")))
            })?;
            for (k, val) in &v.set {
                set_path(&mut doc, k, val.clone()).map_err(|m| {
                    err_at(&self.path, &self.src, &["variant"], format!("variant.{vname}.set.{k}"), m)
                })?;
            }
            what = format!(" (variant `{vname}`)");
        }
        for (k, val) in point {
            set_path(&mut doc, k, val.clone())
                .map_err(|m| err_at(&self.path, &self.src, &["sweep", k], format!("sweep.{k}"), m))?;
            what.push_str(&format!(" ({k} = {val})"));
        }
        let file = deserialize(&self.path, &self.src, &doc).map_err(|mut e| {
            e.message.push_str(&what);
            e
        })?;
        to_config(&self.path, &self.src, &file).map_err(|mut e| {
            e.message.push_str(&what);
            e
        })
    }

    /// Every variant × sweep point, variant-major, points in sweep order (last key fastest).
    pub fn runs(&self) -> Result<Vec<RunSpec>, ScenarioError> {
        let mut points: Vec<Vec<(String, Value)>> = vec![Vec::new()];
        for (k, vals) in &self.sweep {
            points = points
                .into_iter()
                .flat_map(|p| {
                    vals.iter().map(move |v| {
                        let mut q = p.clone();
                        q.push((k.clone(), v.clone()));
                        q
                    })
                })
                .collect();
        }
        let variants: Vec<Option<&str>> = if self.variants.is_empty() {
            vec![None]
        } else {
            self.variants.iter().map(|v| Some(v.name.as_str())).collect()
        };
        let mut out = Vec::with_capacity(points.len() * variants.len());
        for v in &variants {
            for p in &points {
                out.push(RunSpec {
                    variant: v.unwrap_or("base").to_string(),
                    point: p.clone(),
                    config: self.config_with(*v, p)?,
                });
            }
        }
        Ok(out)
    }

    /// Evaluate the scenario's claims against sweep results.
    pub fn evaluate(&self, rows: &[Row]) -> Vec<ExpectResult> {
        self.expects.iter().map(|e| e.evaluate(&self.name, rows)).collect()
    }
}
