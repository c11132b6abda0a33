//! Structure-aware inputs for the hostsim fuzzers: a fuzzer's bytes become (through `arbitrary`)
//! a base scenario and a list of mutations of it (set a known key to a value near its bounds or
//! of the wrong type, remove a key or a table, duplicate or add an array element, sweep a key,
//! add a variant or a metric alias), rendered back to TOML text. Mutating valid scenarios keeps
//! most inputs close to ones the validator accepts, so the fuzzer spends its time on the
//! boundary between accepted and refused, and on the runs of accepted ones.

use arbitrary::Arbitrary;
use hostsim_options::{Gen, Key};
use hostsim_scenario::bounds::{self, Range};
use hostsim_scenario::keys;
use std::sync::OnceLock;
use toml::{Table, Value};

/// The file name every generated scenario is loaded as (its directory does not exist, so only
/// built-in profiles are found).
pub const PATH: &str = "/nonexistent-hostsim-fuzz/fuzz.toml";

/// How a key's value is generated: from its declaration's generator (`hostsim_options::Gen`).
#[derive(Clone, Debug)]
pub enum Kind {
    Int,
    Float,
    Bool,
    /// One of these values (a choice's, or a policy's: Linux's and the mechanisms').
    Enum(Vec<&'static str>),
    /// A name from the pool (`eth0`, `sink`, …), so references resolve often.
    Name,
    Cpus,
    /// An array of tables with these keys (`renice`, `thread`): one element, each key typical.
    Tables(&'static [Key]),
    /// An array of values of one kind (`tcp_rmem`).
    List(Box<Kind>),
    /// A table with these keys, each typical.
    Table(&'static [Key]),
    Profile,
    Text,
}
use Kind::*;

const NAMES: &[&str] = &["eth0", "eth1", "sink", "echo", "load", "flood", "a", "0", "x-y", "bad,name", ""];

/// The generator of a declared key.
pub fn kind_of(g: Gen) -> Kind {
    match g {
        Gen::Int => Int,
        Gen::Float => Float,
        Gen::Bool => Bool,
        Gen::Text => Text,
        Gen::Choice(v) => Enum(v.iter().map(|c| c.0).collect()),
        Gen::Selector(sel) => Enum(keys::values(sel).into_iter().map(|v| v.0).collect()),
        Gen::Cpus => Cpus,
        Gen::Name => Name,
        Gen::Profile => Profile,
        Gen::List(e) => match e() {
            Gen::Table(f) => Tables(f()),
            inner => List(Box::new(kind_of(inner))),
        },
        Gen::Table(f) => Kind::Table(f()),
    }
}

/// A section's keys (dotted inside it), from the declarations (`hostsim_scenario::keys`).
fn declared(table: &str) -> Vec<(String, Kind)> {
    keys::section(table).into_iter().map(|(k, g)| (k, kind_of(g))).collect()
}

/// `[profile_set]` keys (dotted inside it): every number of the built-in profiles.
fn profile_keys() -> Vec<(String, Kind)> {
    fn leaves(t: &Table, prefix: &str, out: &mut Vec<(String, Kind)>) {
        for (k, v) in t {
            let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
            match v {
                Value::Table(s) => leaves(s, &path, out),
                Value::Integer(_) => out.push((path, Int)),
                Value::Float(_) => out.push((path, Float)),
                _ => {}
            }
        }
    }
    let mut out: Vec<(String, Kind)> = Vec::new();
    for (_, text) in hostsim_scenario::builtin_profiles() {
        let mut these = Vec::new();
        leaves(&text.parse().expect("built-in profiles are valid TOML"), "", &mut these);
        for (k, kind) in these {
            if !out.iter().any(|(o, _)| *o == k) {
                out.push((k, kind));
            }
        }
    }
    out.push(("topology.llc".into(), Enum(vec!["per_core", "per_package"])));
    out
}

/// Sections a mutation can address: (array name or table, its keys, is an array of tables).
fn sections() -> &'static [(&'static str, Vec<(String, Kind)>, bool)] {
    static S: OnceLock<Vec<(&'static str, Vec<(String, Kind)>, bool)>> = OnceLock::new();
    S.get_or_init(|| {
        vec![
            ("", declared(""), false),
            ("kernel", declared("kernel"), false),
            ("nic", declared("nic.*"), true),
            ("process", declared("process.*"), true),
            ("traffic", declared("traffic.*"), true),
            ("route", declared("route.*"), true),
            ("profile_set", profile_keys(), false),
        ]
    })
}

/// The keys of section `name` (`kernel`, `nic`, …).
pub fn section_keys(name: &str) -> &'static [(String, Kind)] {
    &sections().iter().find(|s| s.0 == name).expect("a section").1
}

/// A value, before it is shaped by the key it goes to.
#[derive(Arbitrary, Debug, Clone)]
pub enum Val {
    /// A sane value for the key.
    Typical(u8),
    /// At or just past an end of the key's range (bounds.rs), or a machine-word edge.
    Edge(u8),
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    Array(Vec<Val>),
    EmptyTable,
}

#[derive(Arbitrary, Debug, Clone)]
pub enum Mutation {
    Set { section: u8, elem: u8, key: u8, val: Val },
    SetRaw { path: String, val: Val },
    Remove { section: u8, elem: u8, key: u8 },
    RemoveSection { section: u8 },
    Duplicate { section: u8, elem: u8 },
    AddElem { section: u8, name: u8 },
    Sweep { section: u8, elem: u8, key: u8, vals: Vec<Val> },
    Variant { name: u8, section: u8, elem: u8, key: u8, val: Val },
    Alias { alias: u8, target: u8 },
}

/// A base scenario and what to do to it.
#[derive(Arbitrary, Debug, Clone)]
pub struct Input {
    pub base: u8,
    pub mutations: Vec<Mutation>,
}

/// The scenarios mutations start from, parsed once: a minimal one and the built-ins, each cut
/// to at most two values per swept key and two variants, without claims and figures (which name
/// sweep points), and without the two largest (512 instances, 32 readers): their features
/// (instances, RFS, many flows) are reached by mutations, and every input stays fast.
pub fn base_tables() -> &'static [Table] {
    static BASES: std::sync::OnceLock<Vec<Table>> = std::sync::OnceLock::new();
    BASES.get_or_init(|| {
        let mut texts = vec![include_str!("../../crates/scenario/tests/good/minimal.toml")];
        texts.extend(
            hostsim_scenario::builtin_scenarios()
                .iter()
                .filter(|(n, _)| !matches!(*n, "goda-rfs-migrations" | "examples/rfs-modern" | "bench/udp-flood"))
                .map(|(_, t)| *t),
        );
        texts
            .into_iter()
            .map(|t| {
                let mut doc: Table = t.parse().expect("base scenarios are valid TOML");
                doc.remove("expect");
                doc.remove("figure");
                if let Some(Value::Table(sw)) = doc.get_mut("sweep") {
                    for (_, v) in sw.iter_mut() {
                        if let Value::Array(a) = v {
                            a.truncate(2);
                        }
                    }
                }
                if let Some(Value::Array(vs)) = doc.get_mut("variant") {
                    vs.truncate(2);
                }
                doc
            })
            .collect()
    })
}

fn bound_of(path: &str, profile: bool) -> Option<Range> {
    let table = if profile { bounds::PROFILE } else { bounds::scenario() };
    let segs: Vec<&str> = path.split('.').collect();
    table.iter().find_map(|(p, r, _)| {
        let pat: Vec<&str> = p.split('.').collect();
        let hit = pat.len() == segs.len()
            && pat.iter().zip(&segs).all(|(p, s)| match p.strip_prefix('*') {
                Some("") => true,
                Some(suffix) => s.ends_with(suffix) || s.parse::<usize>().is_ok(),
                None => p == s,
            });
        hit.then_some(*r)
    })
}

fn shape(val: &Val, kind: &Kind, path: &str, profile: bool, depth: u8) -> Value {
    let range = bound_of(path, profile);
    match val {
        Val::Typical(n) => match kind {
            Int => match range {
                Some(Range::Int(lo, hi)) => Value::Integer(
                    lo.saturating_add(i64::from(*n) % (hi.saturating_sub(lo).saturating_add(1)).clamp(1, 64)),
                ),
                _ => Value::Integer(i64::from(*n)),
            },
            Float => Value::Float(f64::from(*n) * 1000.0 + 1.0),
            Bool => Value::Boolean(n % 2 == 0),
            Enum(vals) => Value::String(vals[*n as usize % vals.len()].to_string()),
            Name => Value::String(NAMES[*n as usize % 6].to_string()),
            Cpus => Value::Array((0..(n % 3)).map(|c| Value::Integer(i64::from(c))).collect()),
            Tables(keys) => Value::Array(vec![typical_table(keys, *n, &format!("{path}.0"), profile, depth)]),
            Kind::Table(keys) => typical_table(keys, *n, path, profile, depth),
            List(elem) => Value::Array(
                (0..(n % 4))
                    .map(|i| shape(&Val::Typical(n.wrapping_add(i)), elem, &format!("{path}.0"), profile, depth + 1))
                    .collect(),
            ),
            Profile => {
                let p = hostsim_scenario::builtin_profiles();
                Value::String(p[*n as usize % p.len()].0.to_string())
            }
            Text => Value::String(format!("t{n}")),
        },
        Val::Edge(n) => {
            let (lo, hi) = match range {
                Some(Range::Int(lo, hi)) => (lo, hi),
                Some(Range::Float(lo, hi)) => (lo as i64, hi as i64),
                _ => (0, 1),
            };
            let edges = [
                lo,
                hi,
                lo.saturating_sub(1),
                hi.saturating_add(1),
                0,
                -1,
                i64::MAX,
                i64::MIN,
                1 << 31,
                1 << 32,
                (1 << 32) - 1,
                1 << 53,
                18_446_744_073_709,
            ];
            match (kind, n % 4) {
                (Float, 0) => {
                    Value::Float([f64::NAN, f64::INFINITY, -f64::INFINITY, 1e-300, 5e-324, 1e300][*n as usize / 4 % 6])
                }
                _ => Value::Integer(edges[*n as usize % edges.len()]),
            }
        }
        Val::Int(i) => Value::Integer(*i),
        Val::Float(f) => Value::Float(*f),
        Val::Str(s) => Value::String(s.chars().take(64).collect()),
        Val::Bool(b) => Value::Boolean(*b),
        Val::Array(items) if depth < 3 => {
            let elem = if matches!(kind, Cpus) { &Int } else { kind };
            Value::Array(
                items.iter().take(8).map(|v| shape(v, elem, &format!("{path}.0"), profile, depth + 1)).collect(),
            )
        }
        Val::Array(_) => Value::Array(Vec::new()),
        Val::EmptyTable => Value::Table(Table::new()),
    }
}

/// A table of `keys`, each typical (its bound's low end shifted by `n`).
fn typical_table(keys: &[Key], n: u8, path: &str, profile: bool, depth: u8) -> Value {
    let mut t = Table::new();
    if depth < 3 {
        for k in keys {
            let v = shape(&Val::Typical(n), &kind_of((k.gen)()), &format!("{path}.{}", k.name), profile, depth + 1);
            t.insert(k.name.into(), v);
        }
    }
    Value::Table(t)
}

/// The table a section names (created if missing); for arrays, element `elem` (if any).
fn section_table<'a>(doc: &'a mut Table, section: usize, elem: u8) -> Option<&'a mut Table> {
    let (name, array) = (sections()[section].0, sections()[section].2);
    if name.is_empty() {
        return Some(doc);
    }
    let v = doc.entry(name.to_string()).or_insert_with(|| {
        if array {
            Value::Array(Vec::new())
        } else {
            Value::Table(Table::new())
        }
    });
    match v {
        Value::Table(t) => Some(t),
        Value::Array(a) if !a.is_empty() => {
            let n = a.len();
            a[elem as usize % n].as_table_mut()
        }
        _ => None,
    }
}

/// Set a dotted key inside a table (profile_set keys have a dot).
fn set_dotted(t: &mut Table, key: &str, v: Value) {
    match key.split_once('.') {
        Some((head, rest)) => {
            let sub = t.entry(head.to_string()).or_insert_with(|| Value::Table(Table::new()));
            if let Value::Table(s) = sub {
                set_dotted(s, rest, v);
            }
        }
        None => {
            t.insert(key.to_string(), v);
        }
    }
}

/// The dotted key path (as `--set` and sweeps write it) of a section's key.
pub fn key_path(doc: &Table, section: usize, elem: u8, key: &str) -> String {
    let (name, array) = (sections()[section].0, sections()[section].2);
    if name.is_empty() {
        return key.to_string();
    }
    if array {
        let n = doc.get(name).and_then(Value::as_array).map_or(0, Vec::len);
        let i = if n == 0 { 0 } else { elem as usize % n };
        // Address by name when the element has one, as users do.
        let by_name = doc
            .get(name)
            .and_then(Value::as_array)
            .and_then(|a| a.get(i))
            .and_then(|e| e.get("name"))
            .and_then(Value::as_str);
        return match by_name {
            Some(nm) if elem % 2 == 0 => format!("{name}.{nm}.{key}"),
            _ => format!("{name}.{i}.{key}"),
        };
    }
    format!("{name}.{key}")
}

fn pick(section: u8, key: u8) -> (usize, &'static str, &'static Kind) {
    let s = section as usize % sections().len();
    let keys = &sections()[s].1;
    let (k, kind) = &keys[key as usize % keys.len()];
    (s, k.as_str(), kind)
}

fn val_path(section: usize, key: &str) -> (String, bool) {
    let (name, array) = (sections()[section].0, sections()[section].2);
    if name == "profile_set" {
        (key.to_string(), true)
    } else if name.is_empty() {
        (key.to_string(), false)
    } else if array {
        (format!("{name}.0.{key}"), false)
    } else {
        (format!("{name}.{key}"), false)
    }
}

/// Apply `input` to its base scenario; the document and the `--set` list (empty here).
pub fn build(input: &Input) -> Table {
    let bases = base_tables();
    let mut doc = bases[input.base as usize % bases.len()].clone();
    for m in input.mutations.iter().take(24) {
        apply(&mut doc, m);
    }
    doc
}

fn apply(doc: &mut Table, m: &Mutation) {
    match m {
        Mutation::Set { section, elem, key, val } => {
            let (s, k, kind) = pick(*section, *key);
            let (vp, prof) = val_path(s, k);
            let v = shape(val, kind, &vp, prof, 0);
            if let Some(t) = section_table(doc, s, *elem) {
                set_dotted(t, k, v);
            }
        }
        Mutation::SetRaw { path, val } => {
            let v = shape(val, &Int, "", false, 0);
            let _ = hostsim_scenario::set_path(doc, &path.chars().take(80).collect::<String>(), v);
        }
        Mutation::Remove { section, elem, key } => {
            let (s, k, _) = pick(*section, *key);
            if let Some(t) = section_table(doc, s, *elem) {
                t.remove(k.split('.').next().unwrap_or(k));
            }
        }
        Mutation::RemoveSection { section } => {
            let s = *section as usize % sections().len();
            let name = sections()[s].0;
            if name.is_empty() {
                doc.remove("profile");
            } else {
                doc.remove(name);
            }
        }
        Mutation::Duplicate { section, elem } => {
            let s = *section as usize % sections().len();
            if let Some(Value::Array(a)) = doc.get_mut(sections()[s].0) {
                if !a.is_empty() && a.len() < 64 {
                    let e = a[*elem as usize % a.len()].clone();
                    a.push(e);
                }
            }
        }
        Mutation::AddElem { section, name } => {
            let s = *section as usize % sections().len();
            let mut t = Table::new();
            let nm = NAMES[*name as usize % NAMES.len()];
            t.insert("name".into(), Value::String(format!("{nm}{}", name / 16)));
            match sections()[s].0 {
                "nic" => {
                    t.insert("rate_mbps".into(), Value::Integer(1000));
                }
                "process" => {
                    t.insert(
                        "program".into(),
                        Value::String(["udp_sink", "spin", "tcp_stream"][*name as usize % 3].into()),
                    );
                    t.insert("port".into(), Value::Integer(9000 + i64::from(*name)));
                    t.insert("work_ns".into(), Value::Integer(1000));
                }
                "traffic" => {
                    t.insert(
                        "kind".into(),
                        Value::String(["cbr", "poisson", "ping_pong", "tcp_window"][*name as usize % 4].into()),
                    );
                    t.insert("nic".into(), Value::String("eth0".into()));
                    t.insert("dst_port".into(), Value::Integer(9000));
                    t.insert("rate_pps".into(), Value::Integer(1000));
                }
                _ => return,
            }
            if let Value::Array(a) = doc.entry(sections()[s].0.to_string()).or_insert_with(|| Value::Array(Vec::new()))
            {
                if a.len() < 64 {
                    a.push(Value::Table(t));
                }
            }
        }
        Mutation::Sweep { section, elem, key, vals } => {
            let (s, k, kind) = pick(*section, *key);
            let path = key_path(doc, s, *elem, k);
            let (vp, prof) = val_path(s, k);
            let vals: Vec<Value> = vals.iter().take(16).map(|v| shape(v, kind, &vp, prof, 0)).collect();
            if let Value::Table(sw) = doc.entry("sweep".to_string()).or_insert_with(|| Value::Table(Table::new())) {
                sw.insert(path, Value::Array(vals));
            }
        }
        Mutation::Variant { name, section, elem, key, val } => {
            let (s, k, kind) = pick(*section, *key);
            let path = key_path(doc, s, *elem, k);
            let (vp, prof) = val_path(s, k);
            let v = shape(val, kind, &vp, prof, 0);
            let mut set = Table::new();
            set.insert(path, v);
            let mut t = Table::new();
            t.insert("name".into(), Value::String(format!("v{}", name % 4)));
            t.insert("set".into(), Value::Table(set));
            if let Value::Array(a) = doc.entry("variant".to_string()).or_insert_with(|| Value::Array(Vec::new())) {
                if a.len() < 16 {
                    a.push(Value::Table(t));
                }
            }
        }
        Mutation::Alias { alias, target } => {
            let aliases = ["rate", "cpu_util", "delivered_pps", "x,y", "ok_alias", "1"];
            let targets =
                ["delivered_pps", "cpu_util", "sink_cpu_frac", "nonexistent", "rtt_us_mean", "load_rtt_us_p99"];
            if let Value::Table(m) = doc.entry("metrics".to_string()).or_insert_with(|| Value::Table(Table::new())) {
                m.insert(
                    aliases[*alias as usize % aliases.len()].into(),
                    Value::String(targets[*target as usize % targets.len()].into()),
                );
            }
        }
    }
}

/// TOML text of a document (None if the serializer refuses its shape).
pub fn render(doc: &Table) -> Option<String> {
    toml::to_string(doc).ok()
}

/// A `--set` expression, known or arbitrary.
#[derive(Arbitrary, Debug, Clone)]
pub enum SetExpr {
    Known { section: u8, elem: u8, key: u8, val: Val },
    RawKey { key: String, val: Val },
    Raw(String),
}

/// Inputs of the `set` target: a base scenario and `--set` expressions.
#[derive(Arbitrary, Debug, Clone)]
pub struct SetInput {
    pub base: u8,
    pub sets: Vec<SetExpr>,
}

/// The base text and the `--set` pairs (split at the first `=`, as the command line does).
pub fn build_sets(input: &SetInput) -> (String, Vec<(String, String)>) {
    static TEXTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let bases = base_tables();
    let texts = TEXTS.get_or_init(|| bases.iter().map(|d| toml::to_string(d).expect("renders")).collect());
    let i = input.base as usize % bases.len();
    let (doc, text) = (&bases[i], texts[i].clone());
    let mut sets = Vec::new();
    for s in input.sets.iter().take(16) {
        let expr = match s {
            SetExpr::Known { section, elem, key, val } => {
                let (sec, k, kind) = pick(*section, *key);
                let path = key_path(&doc, sec, *elem, k);
                let (vp, prof) = val_path(sec, k);
                format!("{path}={}", shape(val, kind, &vp, prof, 0))
            }
            SetExpr::RawKey { key, val } => {
                format!("{}={}", key.chars().take(80).collect::<String>(), shape(val, &Int, "", false, 0))
            }
            SetExpr::Raw(r) => r.chars().take(120).collect(),
        };
        // As `hostsim --set` parses it: KEY=VALUE, trimmed; without `=` it is refused earlier.
        if let Some((k, v)) = expr.split_once('=') {
            sets.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    (text, sets)
}

/// With `HOSTSIM_FUZZ_PRINT=1`, print the scenario an input stands for (to turn a finding into a
/// regression file: `HOSTSIM_FUZZ_PRINT=1 cargo +nightly fuzz run check artifacts/check/crash-…`).
pub fn show(text: &str, sets: &[(String, String)]) {
    if std::env::var_os("HOSTSIM_FUZZ_PRINT").is_some() {
        for (k, v) in sets {
            eprintln!("# set: {k}={v}");
        }
        eprintln!("{text}");
    }
}
