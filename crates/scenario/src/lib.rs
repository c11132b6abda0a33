//! # hostsim-scenario: the scenario file format
//!
//! A scenario is a TOML file naming a machine profile, kernel options, NICs, processes, traffic,
//! a duration and a seed, plus optionally a `[sweep]` of parameter values, `[[variant]]`s that
//! override keys (e.g. a mechanism on/off) and `[[expect]]` claims. See `scenarios/examples/` and
//! the README for annotated files.
//!
//! Runs: every sweep point × variant runs with `seeds` seeds (`seed`, `seed + 1`, …); claims are
//! judged over the seeds with confidence intervals (see [`expect`](Expect)). A scenario may declare
//! `[[calibrate]]` parameters fitted by `hostsim calibrate`, whose values come from an overlay
//! file (see the `calibrate` module).
//!
//! Loading applies command-line overrides (`--set key=value`), deserialises with unknown keys
//! rejected, and validates meaning (names unique, CPUs in range, ports bound, …). Every error
//! names the file, the line, the key and what was expected ([`ScenarioError`]); nothing panics on
//! bad input.

pub mod bounds;
mod calibrate;
mod claims;
mod error;
mod expect;
mod figure;
pub mod files;
pub mod finding;
pub mod keys;
mod paths;
mod validate;

pub use calibrate::{CalibrateParam, Calibration, Overlay};
pub use error::ScenarioError;
pub use expect::{
    evaluate_claims, mean_ci, seeds_of, Expect, ExpectResult, Interval, Op, Reduce, Role, Row, Selector, Untestable,
    Verdict,
};
pub use figure::{Figure, FigureKind, PaperMark};
pub use paths::{parse_value, set_path};

use hostsim_host::{HostConfig, KernelConfig, NicConfig, ProcessConfig, Profile, RouteConfig, TrafficConfig};
use hostsim_options::{int, len, options, Gen, DAY_MS, I64_MAX, TIME};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::{Table, Value};

mod builtin {
    include!(concat!(env!("OUT_DIR"), "/builtin.rs"));
}

/// A hash of the sources that decide a run's results (the Rust sources of the crates in
/// [`MODEL_SOURCE_CRATES`] and the machine profiles), computed at build time (build.rs). Two
/// builds with the same id run the same model; `hostsim calibrate` uses it to refuse a Python
/// module built from other sources than the CLI.
pub const MODEL_SOURCE_ID: &str = builtin::MODEL_SOURCE_ID;

/// The crates (`crates/<name>`) whose sources [`MODEL_SOURCE_ID`] hashes.
pub const MODEL_SOURCE_CRATES: &[&str] = builtin::MODEL_SOURCE_CRATES;

/// The workspace's other crates, each with the reason its sources decide no result (checked
/// against the workspace's members by `tests/model_source.rs`).
pub const NOT_MODEL_SOURCE_CRATES: &[(&str, &str)] = builtin::OTHER_CRATES;

/// Built-in machine profiles: (name, TOML text).
pub fn builtin_profiles() -> &'static [(&'static str, &'static str)] {
    builtin::PROFILES
}

/// Built-in calibration overlays: (name, TOML text).
pub fn builtin_calibrations() -> &'static [(&'static str, &'static str)] {
    builtin::CALIBRATIONS
}

/// Built-in scenarios: (name relative to `scenarios/` without `.toml`, TOML text).
pub fn builtin_scenarios() -> &'static [(&'static str, &'static str)] {
    builtin::SCENARIOS
}

/// The file's top level, as deserialised. Its keys are declared here once, like the model's
/// (`hostsim_options::options`); the claims, figures, variants and sweeps are described in their
/// own modules (their bounds are `bounds::CLAIMS`).
#[options]
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// The scenario's name (default: the file's name without `.toml`).
    #[option(default = None)]
    name: Option<String>,
    /// What the scenario is, in a sentence or two.
    #[option(default = String::new())]
    description: String,
    /// The paper id (`ozaki-pbq`, …) whose experiment this scenario carries beyond the paper (to
    /// another machine, kernel or mechanism). Such a scenario is not a reproduction: the report
    /// draws it in its "Extensions" section.
    #[option(default = None)]
    extends: Option<String>,
    /// A profile name (`profiles/<name>.toml`) or a path relative to the scenario file.
    #[option(gen = Gen::Profile)]
    profile: String,
    /// Simulated time of each run.
    #[option(bound = int(1, DAY_MS), why = TIME)]
    duration_ms: u64,
    /// Rates and latencies are measured after this (shorter than `duration_ms`).
    #[option(default = 0, bound = int(0, DAY_MS), why = TIME)]
    warmup_ms: u64,
    /// The first seed; runs use `seed`, `seed + 1`, … (`seeds` of them).
    #[option(default = 1, bound = int(0, I64_MAX), why = "any non-negative 64-bit integer")]
    seed: u64,
    /// Seeds per sweep point × variant (1..=1000); claims are judged over them.
    #[option(default = 1, bound = int(1, 1_000), why = "seeds per sweep point and variant")]
    seeds: u32,
    /// The calibration overlay's name (`calibration/<name>.toml`), with `[[calibrate]]`.
    #[option(default = None)]
    calibration: Option<String>,
    /// `[[calibrate]]`: parameters `hostsim calibrate` fits to the calibration claims.
    #[serde(default, rename = "calibrate")]
    #[option(skip)]
    calibrate: Vec<CalibrateParam>,
    /// The time series' sampling interval.
    #[option(default = 10, bound = int(1, DAY_MS), why = TIME)]
    sample_interval_ms: u64,
    /// The kernel's options (and its mechanisms').
    #[option(default = KernelConfig::default())]
    kernel: KernelConfig,
    /// The host's NIC ports.
    #[serde(rename = "nic")]
    #[option(default = Vec::new(), bound = len(64), why = "NICs; 64 ports are more than any server has")]
    nics: Vec<NicConfig>,
    /// The programs the host runs.
    #[serde(rename = "process")]
    #[option(default = Vec::new(), bound = len(4_096), why = "[[process]] entries (use `instances` for many copies)")]
    processes: Vec<ProcessConfig>,
    /// The machines sending to (and receiving from) the host.
    #[serde(rename = "traffic")]
    #[option(default = Vec::new(), bound = len(4_096), why = "[[traffic]] entries (use `clients` and `flows` for many senders)")]
    traffic: Vec<TrafficConfig>,
    /// `[[route]]`: IP forwarding routes.
    #[serde(rename = "route")]
    #[option(default = Vec::new(), bound = len(64), why = "routes; one per NIC is all forwarding can use")]
    routes: Vec<RouteConfig>,
    #[serde(default)]
    #[option(skip)]
    sweep: Table,
    #[serde(default, rename = "variant")]
    #[option(skip)]
    variants: Vec<Variant>,
    #[serde(default, rename = "expect")]
    #[option(skip)]
    expects: Vec<Expect>,
    /// `[[figure]]`: how the report draws the results, with the paper's published values.
    #[serde(default, rename = "figure")]
    #[option(skip)]
    figures: Vec<Figure>,
    /// Named metrics: `name = "existing_metric"` (e.g. `udp_rtt_us = "latudp_rtt_us_mean"`).
    #[serde(default)]
    #[option(skip)]
    metrics: std::collections::BTreeMap<String, String>,
    /// Overrides of the machine profile's keys for this scenario, shaped like the profile file
    /// (`[profile_set.costs] driver_rx_frame_ns = 2500`), so `--set`, variants and sweeps can
    /// vary a cost: `--set profile_set.costs.driver_rx_frame_ns=2500`.
    #[serde(default)]
    #[option(skip)]
    profile_set: Table,
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

/// One run of a sweep: a variant at a point with one seed.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub variant: String,
    pub point: Vec<(String, Value)>,
    pub seed: u64,
    pub config: HostConfig,
}

/// A loaded, validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub path: PathBuf,
    pub name: String,
    pub description: String,
    /// `extends`: the paper whose experiment this carries further (not a reproduction).
    pub extends: Option<String>,
    src: String,
    /// The file with `--set` applied, without the tables that are not a run's configuration
    /// (`NOT_CONFIG`): what each run's variant and sweep values are applied to.
    doc: Table,
    base: HostConfig,
    pub sweep: Vec<(String, Vec<Value>)>,
    pub variants: Vec<Variant>,
    pub expects: Vec<Expect>,
    /// `[[figure]]`s for the report.
    pub figures: Vec<Figure>,
    /// `[metrics]`: alias → metric it copies.
    pub metric_aliases: Vec<(String, String)>,
    /// Seeds per point × variant, from `seed` on.
    pub seeds: u32,
    /// `[[calibrate]]` parameters.
    pub calibrate: Vec<CalibrateParam>,
    /// The overlay named by `calibration`, and which of its values were applied.
    pub calibration: Option<Calibration>,
    /// The command-line overrides already applied to `doc`.
    overrides: Vec<Applied>,
    /// Profiles read so far (the file's own, at load).
    profiles: ProfileCache,
}

/// Where a value that replaced (or added to) the file's own came from.
#[derive(Clone, Debug, PartialEq)]
enum Origin {
    /// `--set` on the command line.
    Set,
    /// The `set` table of the `index`th `[[variant]]`.
    Variant { index: usize, name: String },
    /// A `[sweep]` key.
    Sweep,
    /// A fitted value from the calibration overlay (`[[calibrate]]`).
    Calibration,
}

/// A value applied on top of the file: an error at its key is blamed on it, not on the file's
/// line for that key (which may not even exist).
#[derive(Clone, Debug, PartialEq)]
struct Applied {
    origin: Origin,
    /// The key path as written (`traffic.load.rate_pps`).
    key: String,
    value: Value,
    /// Where it landed in the document (element names resolved to indices).
    target: Vec<paths::Seg>,
}

/// A deserialisation or validation failure before it is located in the file.
struct Fail {
    segs: Vec<paths::Seg>,
    msg: String,
}

/// Scenario files (and profiles) larger than this are refused unread: the largest built-in
/// scenario is about 20 KB, and a parsed TOML document takes ~100 bytes of memory per value.
pub const FILE_BYTES_MAX: u64 = 1 << 20;

/// Runs (sweep points × variants) a scenario may expand to unless the caller allows more
/// (`--max-runs`): counted before anything is expanded.
pub const DEFAULT_MAX_RUNS: u64 = 10_000;

/// How to load a scenario.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Refuse a scenario with more runs than this (see [`DEFAULT_MAX_RUNS`]).
    pub max_runs: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options { max_runs: DEFAULT_MAX_RUNS }
    }
}

/// Load a scenario file, applying `overrides` (`key`, `value` as written on the command line).
/// `path` may also name a built-in scenario (`examples/livelock` or `livelock`), but only when
/// no file or directory of that name exists: a path always means that file.
pub fn load(path: &Path, overrides: &[(String, String)]) -> Result<Scenario, ScenarioError> {
    load_with(path, overrides, &Options::default())
}

/// [`load`] with [`Options`].
pub fn load_with(path: &Path, overrides: &[(String, String)], opts: &Options) -> Result<Scenario, ScenarioError> {
    let src = read_source(path, "scenario", true)?;
    load_str_with(path, &src, overrides, opts)
}

/// The text of a scenario (or profile) file. Anything that exists at `path` is read or refused
/// with the reason; only a path that does not exist at all may name a built-in scenario.
fn read_source(path: &Path, what: &str, builtin: bool) -> Result<String, ScenarioError> {
    let err = |line: Option<usize>, msg: String| ScenarioError::new(path, line, "", msg);
    let bytes = match files::read_bytes(path, what, FILE_BYTES_MAX) {
        Ok(b) => b,
        Err(files::ReadError::Missing) => {
            if builtin {
                if let Some(text) = builtin_scenario(path) {
                    return Ok(text.to_string());
                }
                return Err(err(None, format!("cannot read {what}: no such file, and no built-in scenario of that name (see `hostsim scenarios`)")));
            }
            return Err(err(None, format!("cannot read {what}: no such file")));
        }
        Err(files::ReadError::Refused(m)) => return Err(err(None, m)),
    };
    utf8_text(path, bytes)
}

/// The bytes of an input file as text; invalid UTF-8 is an error at its line and column.
fn utf8_text(path: &Path, bytes: Vec<u8>) -> Result<String, ScenarioError> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        let start = bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let end = bytes[at..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| at + i);
        let text = String::from_utf8_lossy(&bytes[start..end]);
        ScenarioError::new(
            path,
            Some(line),
            key_on_line(&text),
            format!("not UTF-8 text: byte 0x{:02X} at column {} (save the file as UTF-8)", bytes[at], at - start + 1),
        )
    })
}

/// The built-in scenario `path` names (`examples/livelock`, `livelock`, `scenarios/livelock.toml`).
fn builtin_scenario(path: &Path) -> Option<&'static str> {
    let want = path.to_string_lossy().trim_end_matches(".toml").trim_start_matches("scenarios/").to_string();
    builtin_scenarios()
        .iter()
        .find(|(n, _)| *n == want || n.rsplit('/').next() == Some(want.as_str()))
        .map(|(_, text)| *text)
}

/// Load a scenario from text; `path` is used for error messages and to resolve the profile.
pub fn load_str(path: &Path, src: &str, overrides: &[(String, String)]) -> Result<Scenario, ScenarioError> {
    load_str_with(path, src, overrides, &Options::default())
}

/// Top-level tables that describe the experiment rather than the simulated host: they are not
/// part of a run's configuration and cannot be set by a sweep or a variant.
const NOT_CONFIG: [&str; 7] = ["name", "description", "sweep", "variant", "expect", "figure", "metrics"];

/// [`load_str`] with [`Options`].
pub fn load_str_with(
    path: &Path,
    src: &str,
    overrides: &[(String, String)],
    opts: &Options,
) -> Result<Scenario, ScenarioError> {
    if src.len() as u64 > FILE_BYTES_MAX {
        return Err(ScenarioError::new(
            path,
            None,
            "",
            format!("{} bytes; a scenario is at most {FILE_BYTES_MAX} bytes", src.len()),
        ));
    }
    let mut doc: Table = src.parse::<Table>().map_err(|e| {
        let line = e.span().map(|s| error::line_of(src, s.start));
        let key = line.and_then(|l| src.lines().nth(l - 1)).map(key_on_line).unwrap_or_default();
        ScenarioError::new(path, line, key, format!("not valid TOML: {}", e.message().trim()))
    })?;
    let mut applied = Vec::with_capacity(overrides.len());
    for (k, v) in overrides {
        let value = parse_value(v);
        // A command-line value has no line in the file.
        set_path(&mut doc, k, value.clone())
            .map_err(|m| ScenarioError::new(path, None, k.clone(), format!("--set: {m}")))?;
        applied.push(Applied { origin: Origin::Set, key: k.clone(), target: paths::resolve(&doc, k), value });
    }
    let mut file = deserialize(doc.clone()).map_err(|f| blame(path, src, f, &applied, None))?;
    let calibration = apply_calibration(path, src, &mut doc, &file, &mut applied)?;
    if calibration.as_ref().is_some_and(|c| !c.applied.is_empty()) {
        file = deserialize(doc.clone()).map_err(|f| blame(path, src, f, &applied, None))?;
    }
    let name = file
        .name
        .clone()
        .unwrap_or_else(|| path.file_stem().map_or("scenario".into(), |s| s.to_string_lossy().into_owned()));
    let sweep: Vec<(String, Vec<Value>)> = file
        .sweep
        .iter()
        .map(|(k, v)| match v {
            _ if k.split('.').next().is_some_and(|t| NOT_CONFIG.contains(&t)) => Err(err_at(
                path,
                src,
                &["sweep", k],
                sweep_key(k),
                format!("`{k}` is not part of the simulated configuration: only it can be swept"),
            )),
            Value::Array(a) if !a.is_empty() => Ok((k.clone(), a.clone())),
            Value::Table(_) => Err(err_at(
                path,
                src,
                &["sweep", k],
                sweep_key(k),
                format!("expected a non-empty array of values, found a table (write a dotted key in quotes: \"{k}.…\" = [ … ])"),
            )),
            Value::Array(_) => Err(err_at(path, src, &["sweep", k], sweep_key(k), "expected a non-empty array of values, found an empty one")),
            other => Err(err_at(
                path,
                src,
                &["sweep", k],
                sweep_key(k),
                format!("expected a non-empty array of values, found {} (write [{}, …])", type_name(other), short(other)),
            )),
        })
        .collect::<Result<_, _>>()?;
    // Only what a run simulates is copied for every run, so validating N runs costs N times the
    // host's configuration, not N times the sweep's N values.
    let mut config_doc = doc.clone();
    for k in NOT_CONFIG {
        config_doc.remove(k);
    }
    let profiles = ProfileCache::prime(path, &file);
    let sc = Scenario {
        path: path.to_path_buf(),
        name,
        description: file.description.clone(),
        extends: file.extends.clone(),
        src: src.to_string(),
        base: to_config(path, &file, &profiles).map_err(|f| blame(path, src, f, &applied, None))?,
        doc: config_doc,
        sweep,
        variants: file.variants.clone(),
        expects: file.expects.clone(),
        figures: file.figures.clone(),
        metric_aliases: file.metrics.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        seeds: file.seeds,
        calibrate: file.calibrate.clone(),
        calibration,
        overrides: applied,
        profiles,
    };
    validate::scenario(&sc)?;
    // Count the runs before expanding any: a sweep of a few long lists multiplies to more runs
    // than memory holds.
    let runs = sc.count_runs();
    if runs > u128::from(opts.max_runs) {
        let mut factors: Vec<String> =
            sc.sweep.iter().map(|(k, v)| format!("{} values of {k}", bounds::fmt_int(v.len() as i64))).collect();
        if !sc.variants.is_empty() {
            factors.push(format!("{} variants", sc.variants.len()));
        }
        if sc.seeds > 1 {
            factors.push(format!("{} seeds", sc.seeds));
        }
        let shown = if runs > u128::from(u64::MAX) {
            "more than 2^64".to_string()
        } else {
            bounds::fmt_int(runs.min(i64::MAX as u128) as i64)
        };
        return Err(err_at(
            path,
            src,
            &["sweep"],
            "sweep".into(),
            format!(
                "{} = {shown} runs, more than the limit of {} (allow more with --max-runs N, or max_runs= in Python)",
                factors.join(" × "),
                bounds::fmt_int(opts.max_runs.min(i64::MAX as u64) as i64)
            ),
        ));
    }
    calibrate::validate(&sc)?;
    // Every variant at every point must itself be valid: check them all now, not mid-sweep.
    sc.for_each_point(|_, _, _| Ok(()))?;
    claims::check_form(&sc)?;
    Ok(sc)
}

/// A value for a message, cut short if long.
fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

/// The key a TOML line sets or opens (`name` of `name = "x`, `process` of `[[process]`), if it
/// looks like it sets or opens one: for syntax errors, which come without a key.
fn key_on_line(line: &str) -> String {
    let t = line.trim_start().trim_start_matches('[');
    let end = t.find(['=', ']', '#']).unwrap_or(t.len());
    let k = t[..end].trim();
    let ok = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || "_-.\"' ".contains(c));
    if ok && (t[end..].starts_with('=') || line.trim_start().starts_with('[')) {
        k.to_string()
    } else {
        String::new()
    }
}

fn err_at(path: &Path, src: &str, keys: &[&str], key: String, msg: impl Into<String>) -> ScenarioError {
    let segs: Vec<paths::Seg> = keys.iter().map(|k| paths::Seg::Key(k.to_string())).collect();
    err_segs(path, src, &segs, key, msg)
}

/// An error at the line of `segs` (or of its longest prefix that is in the file).
fn err_segs(path: &Path, src: &str, segs: &[paths::Seg], key: String, msg: impl Into<String>) -> ScenarioError {
    let line = paths::locate(src, segs).map(|o| error::line_of(src, o));
    ScenarioError::new(path, line, key, msg)
}

/// How a sweep key is named in errors: `sweep."traffic.load.rate_pps"`.
fn sweep_key(k: &str) -> String {
    paths::render(&[paths::Seg::Key("sweep".into()), paths::Seg::Key(k.into())])
}

/// How a variant's key is named in errors: `variant.napi.set."kernel.rx_path"`.
fn variant_key(name: &str, k: &str) -> String {
    let segs = ["variant", name, "set", k].map(|s| paths::Seg::Key(s.into()));
    paths::render(&segs)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date-time",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

fn deserialize(doc: Table) -> Result<File, Fail> {
    // Ranges first: they say what is allowed in the file's words, before serde's types do.
    bounds::check(&doc, bounds::scenario(), &[]).map_err(|(segs, msg)| Fail { segs, msg })?;
    if let Some(Value::Table(set)) = doc.get("profile_set") {
        bounds::check(set, bounds::PROFILE, &[paths::Seg::Key("profile_set".into())])
            .map_err(|(segs, msg)| Fail { segs, msg })?;
    }
    let de = Value::Table(doc);
    let file = serde_path_to_error::deserialize::<_, File>(de).map_err(|e| {
        let mut segs = paths::segs_of(e.path());
        let raw = e.inner().message().trim().to_string();
        // For an unknown or missing key serde names it in the message; make it part of the key.
        for prefix in ["unknown field `", "missing field `"] {
            if let Some(k) = raw.strip_prefix(prefix).and_then(|r| r.split('`').next()) {
                if segs.last() != Some(&paths::Seg::Key(k.to_string())) {
                    segs.push(paths::Seg::Key(k.to_string()));
                }
            }
        }
        let msg = humanize(&raw, &segs);
        Fail { segs, msg }
    })?;
    // The keys the kernel's and the processes' own declarations left to the mechanisms.
    keys::check(&file.kernel, &file.processes).map_err(|(segs, msg)| Fail { segs, msg })?;
    Ok(file)
}

/// serde's messages in the words of a TOML file: keys not fields, values not variants, TOML
/// types not Rust types.
fn humanize(raw: &str, segs: &[paths::Seg]) -> String {
    let mut msg = raw.to_string();
    if let Some(rest) = msg.strip_prefix("unknown field ") {
        msg = format!("unknown key {rest}");
    } else if let Some(rest) = msg.strip_prefix("unknown variant ") {
        msg = format!("unknown value {rest}");
    } else if let Some(rest) = msg.strip_prefix("missing field ") {
        // The key is missing, so the line is that of the table it belongs in (if any).
        let table = match segs.len() {
            0 | 1 => "at the top level, before the first [table]".to_string(),
            n => match (&segs[0], &segs[n - 2]) {
                (paths::Seg::Key(t), paths::Seg::Index(_)) if n == 3 => format!("in this [[{t}]]"),
                _ => format!("in [{}]", paths::render(&segs[..n - 1])),
            },
        };
        msg = format!("missing required key {rest} ({table})");
    }
    if let Some(at) = msg.rfind(", expected ") {
        let (head, want) = msg.split_at(at + ", expected ".len());
        let plain = match want {
            "u64" => Some("a whole number ≥ 0"),
            "u32" => Some("a whole number in 0..=4_294_967_295"),
            "u16" => Some("a whole number in 0..=65535"),
            "u8" => Some("a whole number in 0..=255"),
            "i64" => Some("a whole number"),
            "i32" => Some("a whole number in -2_147_483_648..=2_147_483_647"),
            "i8" => Some("a whole number in -128..=127"),
            "f64" | "f32" => Some("a number"),
            "a sequence" => Some("an array"),
            "a map" => Some("a table"),
            "a boolean" => Some("true or false"),
            "string or map" => Some("a string"),
            w if w.starts_with("struct ") => Some("a table"),
            w if w.starts_with("enum ") => Some("a string"),
            _ => None,
        };
        if let Some(p) = plain {
            msg = format!("{head}{p}");
        }
    }
    // `invalid value: integer `-5`, expected …` → `expected …, got -5`, as the bounds say it.
    if let Some(rest) = msg.strip_prefix("invalid value: integer `") {
        if let Some((got, want)) = rest.split_once("`, expected ") {
            msg = format!("expected {want}, got {got}");
        }
    }
    msg
}

/// Turn a failure into an error at the right line. If a value applied on top of the file
/// (`--set`, a variant's `set`, a sweep point) is at (or inside, or around) the failing key, it is
/// to blame and the error points at it. Otherwise, if the file alone is known to be valid,
/// `suspect` (what made it invalid) is pointed at, with the failing key; else the key in the file.
fn blame(path: &Path, src: &str, f: Fail, applied: &[Applied], suspect: Option<&Applied>) -> ScenarioError {
    let related = |a: &&Applied| !f.segs.is_empty() && (a.target.starts_with(&f.segs) || f.segs.starts_with(&a.target));
    let context: String = applied
        .iter()
        .filter_map(|a| match &a.origin {
            Origin::Set | Origin::Calibration => None,
            Origin::Variant { name, .. } => Some(format!(" (variant `{name}`)")),
            Origin::Sweep => Some(format!(" ({} = {})", a.key, a.value)),
        })
        .fold(Vec::<String>::new(), |mut v, s| {
            if !v.contains(&s) {
                v.push(s);
            }
            v
        })
        .concat();
    // The latest applied value wins in the document, so it is the one to blame.
    let culprit = applied.iter().rev().find(related).or(suspect);
    let Some(a) = culprit else {
        return err_segs(path, src, &f.segs, paths::render(&f.segs), f.msg);
    };
    let at_key = related(&a);
    let key = |shown: String| if at_key { shown } else { paths::render(&f.segs) };
    match &a.origin {
        Origin::Set => {
            ScenarioError::new(path, None, a.key.clone(), format!("{} (given by --set {}={})", f.msg, a.key, a.value))
        }
        Origin::Variant { index, name } => {
            let segs = [
                paths::Seg::Key("variant".into()),
                paths::Seg::Index(*index),
                paths::Seg::Key("set".into()),
                paths::Seg::Key(a.key.clone()),
            ];
            err_segs(path, src, &segs, key(variant_key(name, &a.key)), format!("{}{context}", f.msg))
        }
        Origin::Sweep => err_at(path, src, &["sweep", &a.key], key(sweep_key(&a.key)), format!("{}{context}", f.msg)),
        Origin::Calibration => {
            let i = calibrate_index(src, &a.key);
            let segs = [paths::Seg::Key("calibrate".into()), paths::Seg::Index(i), paths::Seg::Key("key".into())];
            err_segs(
                path,
                src,
                &segs,
                a.key.clone(),
                format!("{} (the fitted value {} from the calibration overlay)", f.msg, a.value),
            )
        }
    }
}

/// Index of the `[[calibrate]]` entry whose `key` is `key` (0 if none: then the first).
fn calibrate_index(src: &str, key: &str) -> usize {
    src.parse::<Table>()
        .ok()
        .and_then(|t| t.get("calibrate").and_then(Value::as_array).cloned())
        .and_then(|a| a.iter().position(|e| e.get("key").and_then(Value::as_str) == Some(key)))
        .unwrap_or(0)
}

/// Find the scenario's calibration overlay and write its fitted values into `doc` (as applied
/// overrides, so errors blame them), except where `--set` already gave the key a value.
fn apply_calibration(
    path: &Path,
    src: &str,
    doc: &mut Table,
    file: &File,
    applied: &mut Vec<Applied>,
) -> Result<Option<Calibration>, ScenarioError> {
    let Some(name) = &file.calibration else {
        return Ok(None);
    };
    calibrate::check_name(name).map_err(|m| err_at(path, src, &["calibration"], "calibration".into(), m))?;
    let (home, found) = calibrate::find_overlay(path, name)
        .map_err(|m| err_at(path, src, &["calibration"], "calibration".into(), m))?;
    let overlay = match found {
        Some((text, origin)) => Some(
            calibrate::parse_overlay(&text, &origin)
                .map_err(|m| err_at(path, src, &["calibration"], "calibration".into(), m))?,
        ),
        None => None,
    };
    let mut names = Vec::new();
    if let Some(o) = &overlay {
        for (i, p) in file.calibrate.iter().enumerate() {
            let Some(v) = o.values.get(&p.name).and_then(calibrate::num) else { continue };
            if applied.iter().any(|a| a.origin == Origin::Set && a.key == p.key) {
                continue;
            }
            if let Some((lo, hi)) = p.bounds() {
                // NaN is in no range (a plain `v < lo || v > hi` lets it through).
                if !(lo..=hi).contains(&v) {
                    let segs =
                        [paths::Seg::Key("calibrate".into()), paths::Seg::Index(i), paths::Seg::Key("name".into())];
                    let msg = format!(
                        "{}: the fitted value {v} is outside min..=max ({lo}..={hi}): re-run `hostsim calibrate`",
                        o.path
                    );
                    return Err(err_segs(path, src, &segs, format!("calibrate.{}", p.name), msg));
                }
            }
            let value = p.key_value(v);
            set_path(doc, &p.key, value.clone()).map_err(|m| {
                let segs = [paths::Seg::Key("calibrate".into()), paths::Seg::Index(i), paths::Seg::Key("key".into())];
                err_segs(path, src, &segs, format!("calibrate.{}", p.name), m)
            })?;
            applied.push(Applied {
                origin: Origin::Calibration,
                key: p.key.clone(),
                target: paths::resolve(doc, &p.key),
                value,
            });
            if !names.contains(&p.name) {
                names.push(p.name.clone());
            }
        }
    }
    Ok(Some(Calibration { name: name.clone(), path: home, overlay, applied: names }))
}

/// Resolve and parse a profile: a path relative to the scenario, `profiles/<name>.toml` in the
/// scenario's directory or any ancestor, or a built-in profile.
pub fn load_profile(scenario_path: &Path, name: &str) -> Result<(Profile, String), String> {
    load_profile_with(scenario_path, name, &Table::new())
}

/// Copy every leaf of `over` into `base` (tables merge, other values replace).
fn merge(base: &mut Table, over: &Table) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(Value::Table(b)), Value::Table(o)) => merge(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// A profile's text, parsed, and where it came from.
#[derive(Clone, Debug)]
struct ProfileSource {
    name: String,
    text: String,
    table: Table,
    origin: String,
    /// The profile built without `[profile_set]` overrides (the common case), once.
    plain: Option<Result<Profile, String>>,
}

/// Find profile `name` for a scenario at `scenario_path` (see [`load_profile`]) and parse it.
fn find_profile(scenario_path: &Path, name: &str) -> Result<ProfileSource, String> {
    let read = |p: &Path| read_source(p, "profile", false).map_err(|e| e.message);
    let (text, origin) = if name.ends_with(".toml") || name.contains('/') {
        let p = scenario_path.parent().unwrap_or(Path::new(".")).join(name);
        (read(&p).map_err(|m| format!("{}: {m}", p.display()))?, p)
    } else {
        let mut found = None;
        let start = scenario_path.parent().map(Path::to_path_buf).unwrap_or_default();
        let start = if start.as_os_str().is_empty() { PathBuf::from(".") } else { start };
        for dir in start.ancestors() {
            let p = dir.join("profiles").join(format!("{name}.toml"));
            // A profile that exists but cannot be read is an error, never skipped.
            if std::fs::metadata(&p).is_ok() || std::fs::symlink_metadata(&p).is_ok() {
                found = Some((read(&p).map_err(|m| format!("{}: {m}", p.display()))?, p));
                break;
            }
        }
        match found {
            Some(f) => f,
            None => {
                // Built-in profiles never change: parsed once per process.
                static BUILTIN: std::sync::OnceLock<Vec<Result<ProfileSource, String>>> = std::sync::OnceLock::new();
                let all = BUILTIN.get_or_init(|| {
                    builtin_profiles()
                        .iter()
                        .map(|(n, t)| {
                            parse_profile(n, t.to_string(), PathBuf::from(format!("<built-in>/profiles/{n}.toml")))
                        })
                        .collect()
                });
                return match builtin_profiles().iter().position(|(n, _)| *n == name) {
                    Some(i) => all[i].clone(),
                    None => {
                        let names: Vec<&str> = builtin_profiles().iter().map(|(n, _)| *n).collect();
                        Err(format!("no profile `{name}` (built-in: {})", names.join(", ")))
                    }
                };
            }
        }
    };
    parse_profile(name, text, origin)
}

/// A profile's text parsed, and built without overrides.
fn parse_profile(name: &str, text: String, origin: PathBuf) -> Result<ProfileSource, String> {
    let origin = origin.display().to_string();
    let table: Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map(|s| error::line_of(&text, s.start)).unwrap_or(0);
        format!("{origin}:{line}: not valid TOML: {}", e.message().trim())
    })?;
    let mut src = ProfileSource { name: name.to_string(), text, table, origin, plain: None };
    src.plain = Some(build_profile(&src, &Table::new()).map_err(|f| match f {
        ProfileFail::Set(_, m) | ProfileFail::File(m) => m,
    }));
    Ok(src)
}

/// Profiles read once per scenario (a sweep of 10,000 points does not read the file 10,000 times).
#[derive(Clone, Debug, Default)]
struct ProfileCache(Vec<ProfileSource>);

impl ProfileCache {
    /// The file's own profile, if it can be found (errors are reported by `to_config`).
    fn prime(path: &Path, f: &File) -> ProfileCache {
        ProfileCache(find_profile(path, &f.profile).into_iter().collect())
    }

    fn get(&self, path: &Path, name: &str) -> Result<std::borrow::Cow<'_, ProfileSource>, String> {
        match self.0.iter().find(|p| p.name == name) {
            Some(p) => Ok(std::borrow::Cow::Borrowed(p)),
            None => find_profile(path, name).map(std::borrow::Cow::Owned),
        }
    }
}

/// Where a profile's key is wrong: in the scenario's `[profile_set]` (segments) or in the file.
enum ProfileFail {
    Set(Vec<paths::Seg>, String),
    File(String),
}

/// Parse and validate a profile with a scenario's `[profile_set]` overrides applied.
fn build_profile(src: &ProfileSource, set: &Table) -> Result<Profile, ProfileFail> {
    let mut table = src.table.clone();
    merge(&mut table, set);
    let in_file = |segs: &[paths::Seg], msg: String| {
        let line = paths::locate(&src.text, segs).map(|o| error::line_of(&src.text, o));
        let at = line.map_or(String::new(), |l| format!(":{l}"));
        ProfileFail::File(format!("{}{at}: key `{}`: {msg}", src.origin, paths::render(segs)))
    };
    // A violation at a key the scenario overrides is the scenario's; otherwise the file's.
    let blame = |segs: Vec<paths::Seg>, msg: String| {
        let overridden = {
            let mut t = Some(set);
            let mut hit = false;
            for (i, seg) in segs.iter().enumerate() {
                let paths::Seg::Key(k) = seg else { break };
                match t.and_then(|t| t.get(k)) {
                    Some(Value::Table(sub)) if i + 1 < segs.len() => t = Some(sub),
                    Some(_) => {
                        hit = true;
                        break;
                    }
                    None => break,
                }
            }
            hit
        };
        if overridden {
            let mut s = vec![paths::Seg::Key("profile_set".into())];
            s.extend(segs);
            ProfileFail::Set(s, msg)
        } else {
            in_file(&segs, msg)
        }
    };
    bounds::check(&table, bounds::PROFILE, &[]).map_err(|(segs, msg)| blame(segs, msg))?;
    let profile: Profile = serde_path_to_error::deserialize::<_, Profile>(Value::Table(table)).map_err(|e| {
        let mut segs = paths::segs_of(e.path());
        let raw = e.inner().message().trim().to_string();
        for prefix in ["unknown field `", "missing field `"] {
            if let Some(k) = raw.strip_prefix(prefix).and_then(|r| r.split('`').next()) {
                if segs.last() != Some(&paths::Seg::Key(k.to_string())) {
                    segs.push(paths::Seg::Key(k.to_string()));
                }
            }
        }
        let msg = humanize(&raw, &segs);
        blame(segs, msg)
    })?;
    validate::profile(&profile).map_err(|(segs, msg)| blame(segs, msg))?;
    Ok(profile)
}

/// [`load_profile`] with a scenario's `[profile_set]` overrides applied before validation.
pub fn load_profile_with(scenario_path: &Path, name: &str, set: &Table) -> Result<(Profile, String), String> {
    let src = find_profile(scenario_path, name)?;
    let profile = build_profile(&src, set).map_err(|f| match f {
        ProfileFail::Set(segs, msg) => format!("{}: {msg}", paths::render(&segs)),
        ProfileFail::File(m) => m,
    })?;
    Ok((profile, src.origin))
}

fn to_config(path: &Path, f: &File, profiles: &ProfileCache) -> Result<HostConfig, Fail> {
    let at_profile = |msg: String| Fail { segs: vec![paths::Seg::Key("profile".into())], msg };
    let src = profiles.get(path, &f.profile).map_err(at_profile)?;
    let profile = match (&src.plain, f.profile_set.is_empty()) {
        (Some(plain), true) => plain.clone().map_err(at_profile)?,
        _ => build_profile(&src, &f.profile_set).map_err(|e| match e {
            ProfileFail::Set(segs, msg) => Fail { segs, msg },
            ProfileFail::File(m) => at_profile(m),
        })?,
    };
    // Bounds keep every time below a day, so these products cannot overflow.
    let ms = 1_000_000u64;
    let cfg = HostConfig {
        profile,
        kernel: f.kernel.clone(),
        nics: f.nics.clone(),
        processes: f.processes.clone(),
        traffic: f.traffic.clone(),
        routes: f.routes.clone(),
        duration_ns: f.duration_ms.saturating_mul(ms),
        warmup_ns: f.warmup_ms.saturating_mul(ms),
        seed: f.seed,
        sample_interval_ns: f.sample_interval_ms.saturating_mul(ms),
    };
    validate::config(&cfg).map_err(|(segs, msg)| Fail { segs, msg })?;
    Ok(cfg)
}

/// One run's variant, sweep point (key, value pairs) and seed, as [`Scenario::run_at`] gives them.
pub type RunAt<'a> = (Option<&'a str>, Vec<(String, Value)>, u64);

impl Scenario {
    /// A warning when the scenario's calibration overlay exists but has no value for some of its
    /// declared `[[calibrate]]` parameters (added or renamed since the fit): those keep the
    /// scenario's own values. None when every declared parameter is fitted, or there is no
    /// overlay yet (the report then says "not calibrated").
    pub fn stale_calibration(&self) -> Option<String> {
        let cal = self.calibration.as_ref()?;
        let overlay = cal.overlay.as_ref()?;
        let mut missing: Vec<&str> = Vec::new();
        for p in &self.calibrate {
            if !overlay.values.contains_key(&p.name) && !missing.contains(&p.name.as_str()) {
                missing.push(&p.name);
            }
        }
        if missing.is_empty() {
            return None;
        }
        Some(format!(
            "{}: calibration overlay {} has no value for {} (declared in [[calibrate]]): the scenario's own value is used; re-run `hostsim calibrate`",
            self.path.display(),
            overlay.path,
            missing.join(", ")
        ))
    }

    /// The configuration without any variant or sweep value applied.
    pub fn base_config(&self) -> &HostConfig {
        &self.base
    }

    /// Configuration of `variant` (if any) at sweep `point`.
    pub fn config_with(&self, variant: Option<&str>, point: &[(String, Value)]) -> Result<HostConfig, ScenarioError> {
        let mut doc = self.doc.clone();
        let mut applied = self.overrides.clone();
        if let Some(vname) = variant {
            let index = self.variants.iter().position(|v| v.name == vname).ok_or_else(|| {
                let names: Vec<&str> = self.variants.iter().map(|v| v.name.as_str()).collect();
                ScenarioError::new(
                    &self.path,
                    None,
                    "variant",
                    format!("no variant `{vname}` (have: {})", names.join(", ")),
                )
            })?;
            for (k, val) in &self.variants[index].set {
                let set = [
                    paths::Seg::Key("variant".into()),
                    paths::Seg::Index(index),
                    paths::Seg::Key("set".into()),
                    paths::Seg::Key(k.clone()),
                ];
                set_path(&mut doc, k, val.clone())
                    .map_err(|m| err_segs(&self.path, &self.src, &set, variant_key(vname, k), m))?;
                let origin = Origin::Variant { index, name: vname.to_string() };
                applied.push(Applied { origin, key: k.clone(), value: val.clone(), target: paths::resolve(&doc, k) });
            }
        }
        for (k, val) in point {
            set_path(&mut doc, k, val.clone())
                .map_err(|m| err_at(&self.path, &self.src, &["sweep", k], sweep_key(k), m))?;
            applied.push(Applied {
                origin: Origin::Sweep,
                key: k.clone(),
                value: val.clone(),
                target: paths::resolve(&doc, k),
            });
        }
        deserialize(doc).and_then(|file| to_config(&self.path, &file, &self.profiles)).map_err(|f| {
            // The file (with --set) is valid on its own, so if nothing applied is at the failing
            // key, a combination is at fault (e.g. a variant turning off a key another one needs).
            // Blame the variant if it is invalid without the sweep point, else the first sweep
            // key that is invalid on its own with the variant, else the point's first key.
            let in_variant = applied.iter().find(|a| matches!(a.origin, Origin::Variant { .. }));
            let swept: Vec<&Applied> = applied.iter().filter(|a| a.origin == Origin::Sweep).collect();
            let suspect = if swept.is_empty() || (in_variant.is_some() && self.config_with(variant, &[]).is_err()) {
                in_variant
            } else if swept.len() == 1 {
                swept.first().copied()
            } else {
                let alone = |a: &&&Applied| self.config_with(variant, &[(a.key.clone(), a.value.clone())]).is_err();
                swept.iter().find(alone).or(swept.first()).copied()
            };
            blame(&self.path, &self.src, f, &applied, suspect)
        })
    }

    /// The configuration of `variant` at `point` with extra key overrides (e.g. a calibration
    /// parameter at one of its bounds), applied after the point.
    pub fn config_with_sets(
        &self,
        variant: Option<&str>,
        point: &[(String, Value)],
        extra: &[(String, Value)],
    ) -> Result<HostConfig, ScenarioError> {
        let mut all = point.to_vec();
        all.extend(extra.iter().cloned());
        self.config_with(variant, &all)
    }

    /// The seeds every point × variant runs with: `seed`, `seed + 1`, … (`seeds` of them).
    pub fn seed_list(&self) -> Vec<u64> {
        (0..u64::from(self.seeds)).map(|k| self.base.seed.wrapping_add(k)).collect()
    }

    /// Number of runs: variants × points × seeds (at most the `max_runs` it was loaded with).
    pub fn run_count(&self) -> usize {
        usize::try_from(self.count_runs()).unwrap_or(usize::MAX)
    }

    /// The number of runs counted without expanding any, saturating (a product beyond `u128`
    /// is `u128::MAX`): what loading compares with `max_runs` before anything is built.
    fn count_runs(&self) -> u128 {
        let points = self.sweep.iter().fold(1u128, |n, (_, v)| n.saturating_mul(v.len() as u128));
        points.saturating_mul(self.variants.len().max(1) as u128).saturating_mul(u128::from(self.seeds.max(1)))
    }

    /// Build and validate the configuration of every variant × sweep point (once: seeds do not
    /// change a configuration's validity), in run order, handing each to `f`; stops at the first
    /// error.
    pub fn for_each_point(
        &self,
        mut f: impl FnMut(Option<&str>, &[(String, Value)], HostConfig) -> Result<(), ScenarioError>,
    ) -> Result<(), ScenarioError> {
        let seeds = self.seeds.max(1) as usize;
        for i in (0..self.run_count()).step_by(seeds) {
            let (v, point, _) = self.run_at(i).expect("index below the run count");
            let config = self.config_with(v, &point)?;
            f(v, &point, config)?;
        }
        Ok(())
    }

    /// The variant, sweep point and seed of the `index`th run in [`Scenario::runs`]' order,
    /// without building every run's configuration.
    pub fn run_at(&self, index: usize) -> Option<RunAt<'_>> {
        if index >= self.run_count() {
            return None;
        }
        let seeds = self.seeds as usize;
        let npoints: usize = self.sweep.iter().map(|(_, v)| v.len()).product();
        let k = index % seeds;
        let vp = index / seeds;
        let variant = self.variants.get(vp / npoints).map(|v| v.name.as_str());
        let mut rest = vp % npoints;
        let mut point = Vec::with_capacity(self.sweep.len());
        for (key, vals) in self.sweep.iter().rev() {
            point.push((key.clone(), vals[rest % vals.len()].clone()));
            rest /= vals.len();
        }
        point.reverse();
        let base = match point.iter().find(|(key, _)| key == "seed").and_then(|(_, v)| v.as_integer()) {
            Some(s) => s as u64,
            None => self.base.seed,
        };
        Some((variant, point, base.wrapping_add(k as u64)))
    }

    /// The configuration of the `index`th run.
    pub fn run_config(&self, index: usize) -> Result<RunSpec, ScenarioError> {
        let (variant, point, seed) = self.run_at(index).ok_or_else(|| {
            ScenarioError::new(
                &self.path,
                None,
                "",
                format!("run {index} out of range: the sweep has {} runs", self.run_count()),
            )
        })?;
        let mut config = self.config_with(variant, &point)?;
        config.seed = seed;
        Ok(RunSpec { variant: variant.unwrap_or("base").to_string(), point, seed, config })
    }

    /// Every variant × sweep point × seed: variant-major, points in sweep order (last key
    /// fastest), seeds fastest.
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
        let mut out = Vec::with_capacity(points.len() * variants.len() * self.seeds as usize);
        for v in &variants {
            for p in &points {
                let config = self.config_with(*v, p)?;
                for k in 0..u64::from(self.seeds) {
                    let mut c = config.clone();
                    c.seed = config.seed.wrapping_add(k);
                    out.push(RunSpec {
                        variant: v.unwrap_or("base").to_string(),
                        point: p.clone(),
                        seed: c.seed,
                        config: c,
                    });
                }
            }
        }
        Ok(out)
    }

    /// Add the `[metrics]` aliases to a run's metrics. An alias copies its metric exactly (so its
    /// values stay in that metric's range); an alias that would replace one of the model's own
    /// metrics, or that names a metric the run does not have, is an error naming the
    /// `[metrics]` line (the set of metrics is known only once the configuration has run).
    pub fn derive_metrics(&self, m: &mut std::collections::BTreeMap<String, f64>) -> Result<(), String> {
        for (alias, from) in &self.metric_aliases {
            let segs = [paths::Seg::Key("metrics".into()), paths::Seg::Key(alias.clone())];
            let fail = |msg: String| err_segs(&self.path, &self.src, &segs, paths::render(&segs), msg).to_string();
            if m.contains_key(alias) {
                return Err(fail(format!(
                    "`{alias}` is one of the model's own metrics; an alias may not replace it (choose another name)"
                )));
            }
            let Some(&v) = m.get(from) else {
                let near: Vec<&str> = m
                    .keys()
                    .filter(|k| k.contains(from.split('_').next().unwrap_or("")))
                    .take(8)
                    .map(String::as_str)
                    .collect();
                let hint = if near.is_empty() { String::new() } else { format!(" (similar: {})", near.join(", ")) };
                return Err(fail(format!("no metric named `{from}` in this run's results{hint}")));
            };
            m.insert(alias.clone(), v);
        }
        Ok(())
    }

    /// Evaluate the scenario's claims against sweep results (every seed's rows); a range's two
    /// ends are judged as one claim ([`evaluate_claims`]).
    pub fn evaluate(&self, rows: &[Row]) -> Vec<ExpectResult> {
        evaluate_claims(&self.expects, &self.name, rows)
    }

    /// Indices (in [`Scenario::runs`]' order) of the runs the claims with `role` need: the
    /// variants and sweep points their selectors name, every seed. `hostsim calibrate` runs only
    /// these for the calibration claims.
    pub fn runs_for_role(&self, role: Role) -> Vec<usize> {
        let sels: Vec<(Option<&str>, &Table)> = self
            .expects
            .iter()
            .filter(|e| e.role == role)
            .flat_map(|e| {
                std::iter::once((e.variant.as_deref(), &e.at))
                    .chain(e.rhs.iter().map(|r| (r.variant.as_deref(), &r.at)))
            })
            .collect();
        (0..self.run_count())
            .filter(|&i| {
                let (v, point, _) = self.run_at(i).expect("in range");
                sels.iter().any(|(sv, at)| {
                    sv.is_none_or(|sv| Some(sv) == v || (v.is_none() && sv == "base"))
                        && at.iter().all(|(k, want)| point.iter().any(|(pk, pv)| pk == k && expect::same(pv, want)))
                })
            })
            .collect()
    }

    /// Evaluate only the claims with `role` (on rows that may hold only the runs they need).
    pub fn evaluate_role(&self, rows: &[Row], role: Role) -> Vec<ExpectResult> {
        evaluate_claims(self.expects.iter().filter(|e| e.role == role), &self.name, rows)
    }
}
