//! # Keys: every key a scenario can set, read from the declarations
//!
//! Each key is declared once, next to the code that reads it (`hostsim_options::options`: its
//! documentation, type, default, bound and generator): the scenario's top level (`File` in
//! `lib.rs`), the kernel's (`hostsim_host::KernelConfig`), a NIC's, a process's, a traffic
//! source's and a route's, the programs' nested tables (`crates/workload`), and each mechanism's
//! own keys of `[kernel]` and of `[[process]]` (in its folder, `crates/host/src/mechanisms/`).
//! From the declarations come:
//!
//! - the rows of the bounds check (`bounds::scenario()`);
//! - the checks of the tables several declarations share ([`check`]): a key nobody declares, a
//!   mechanism's value of the wrong type, a policy that is neither Linux's nor a mechanism's;
//! - the fuzzer's keys (`fuzz/src/lib.rs` reads [`section`]);
//! - the key reference of the docs (`docs/src/reference/scenario-keys.md`, [`reference`],
//!   written by `cargo run -p hostsim-scenario --example scenario_keys`);
//! - the tests below, which fail when a key lacks documentation, a bound or a generator, when two
//!   declarations claim one key, or when the reference is stale.

use crate::paths::Seg;
use hostsim_host::hooks::Mechanisms;
use hostsim_host::mechanisms::Registry;
use hostsim_host::{KernelConfig, ProcessConfig};
use hostsim_options::{describe, fmt_int, At, Fault, Gen, Key, Options, Range, Selector};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// One key of a scenario file, where it is.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Its path, `*` standing for any element of an array of tables: `kernel.hz`,
    /// `nic.*.rx_ring`, `process.*.accelerator.ratio`.
    pub path: String,
    /// The table it is in (`kernel`, `nic.*`, `process.*.accelerator`; empty: the top level).
    pub table: String,
    pub key: Key,
    /// The mechanism declaring it (its registry name); None: the kernel's, a program's or the
    /// scenario's own.
    pub mechanism: Option<&'static str>,
}

/// Every key, in declaration order: a table's own keys, each followed by the keys of the table
/// it holds, then the mechanisms' keys of that table.
pub fn entries() -> &'static [Entry] {
    static ALL: OnceLock<Vec<Entry>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut out = Vec::new();
        walk(<crate::File as Options>::keys(), "", None, &mut out);
        out
    })
}

fn walk(keys: &'static [Key], table: &str, mechanism: Option<&'static str>, out: &mut Vec<Entry>) {
    for k in keys {
        let path = if table.is_empty() { k.name.to_string() } else { format!("{table}.{}", k.name) };
        out.push(Entry { path: path.clone(), table: table.to_string(), key: *k, mechanism });
        let inner = match (k.gen)() {
            Gen::Table(f) => Some((f(), path)),
            Gen::List(g) => match g() {
                Gen::Table(f) => Some((f(), format!("{path}.*"))),
                _ => None,
            },
            _ => None,
        };
        if let Some((keys, sub)) = inner {
            walk(keys, &sub, mechanism, out);
            let theirs = match sub.as_str() {
                "kernel" => Registry::kernel_keys(),
                "process.*" => Registry::task_keys(),
                _ => Vec::new(),
            };
            for (m, keys) in theirs {
                walk(keys, &sub, Some(m), out);
            }
        }
    }
}

/// The keys of `table` (`kernel`, `nic.*`, `process.*`), nested tables' keys dotted
/// (`accelerator.ratio`); an array of tables inside it (`thread`) is one key.
pub fn section(table: &str) -> Vec<(String, Gen)> {
    let prefix = if table.is_empty() { String::new() } else { format!("{table}.") };
    entries()
        .iter()
        .filter_map(|e| {
            let rest = e.path.strip_prefix(&prefix)?;
            let nested_list = rest.split('.').any(|s| s == "*");
            let is_table = matches!((e.key.gen)(), Gen::Table(_));
            (!nested_list && !is_table).then(|| (rest.to_string(), (e.key.gen)()))
        })
        .collect()
}

/// A policy key's values: Linux's, then the mechanisms' (value, what it is, the mechanism).
pub fn values(sel: &Selector) -> Vec<(&'static str, &'static str, Option<&'static str>)> {
    let mut v: Vec<_> = sel.linux.iter().map(|&(name, doc)| (name, doc, None)).collect();
    v.extend(Registry::policies().into_iter().filter(|p| p.0 == sel.key).map(|(_, name, doc, m)| (name, doc, Some(m))));
    v
}

/// `expected `a` or `b`` / `expected one of `a`, `b`, `c``, as serde says it.
fn expected(names: &[&str]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match q.len() {
        2 => format!("expected {} or {}", q[0], q[1]),
        _ => format!("expected one of {}", q.join(", ")),
    }
}

/// A fault's place as the scenario's key path.
pub fn segs(at: &[At]) -> Vec<Seg> {
    at.iter()
        .map(|a| match a {
            At::Key(k) => Seg::Key(k.clone()),
            At::Index(i) => Seg::Index(*i),
        })
        .collect()
}

/// The names of the keys declared for `table`.
fn names(table: &str) -> Vec<&'static str> {
    entries().iter().filter(|e| e.table == table).map(|e| e.key.name).collect()
}

/// Keys the kernel's and a process's own declarations left over (`mechanisms`) must be a
/// mechanism's, and read as its declaration says; a policy's value (`kernel.backlog`) must be
/// Linux's or a mechanism's. The fault's message is in serde's words, as the other tables'.
pub(crate) fn check(kernel: &KernelConfig, processes: &[ProcessConfig]) -> Result<(), (Vec<Seg>, String)> {
    let unknown =
        |at: Vec<Seg>, key: &str, table: &str| Err((at, format!("unknown key `{key}`, {}", expected(&names(table)))));
    let mine = |table: &str, key: &str| {
        entries().iter().any(|e| e.table == table && e.key.name == key && e.mechanism.is_some())
    };
    let kernel_at = |k: &str| vec![Seg::Key("kernel".into()), Seg::Key(k.into())];
    if let Some(k) = kernel.mechanisms.keys().find(|k| !mine("kernel", k)) {
        return unknown(kernel_at(k), k, "kernel");
    }
    for (i, p) in processes.iter().enumerate() {
        if let Some(k) = p.mechanisms.keys().find(|k| !mine("process.*", k)) {
            return unknown(vec![Seg::Key("process".into()), Seg::Index(i), Seg::Key(k.clone())], k, "process.*");
        }
    }
    let maps: Vec<_> = processes.iter().map(|p| &p.mechanisms).collect();
    Registry::read(&kernel.mechanisms, &maps).map_err(|f: Fault| {
        let s = segs(&f.at);
        let msg = crate::humanize(&f.msg, &s);
        (s, msg)
    })?;
    let policies = kernel.policies();
    for k in KernelConfig::keys() {
        let Gen::Selector(sel) = (k.gen)() else { continue };
        let value = policies
            .iter()
            .find(|(key, _)| *key == sel.key)
            .map(|(_, p)| p.0.as_str())
            .expect("every policy key is in KernelConfig::policies (keys.rs tests)");
        let all = values(sel);
        if !all.iter().any(|v| v.0 == value) {
            let names: Vec<&str> = all.iter().map(|v| v.0).collect();
            return Err((kernel_at(sel.key), format!("unknown value `{value}`, {}", expected(&names))));
        }
    }
    Ok(())
}

/// A default as a scenario writes it (None: required; `absent` for an optional key).
fn default_text(k: &Key) -> Option<String> {
    let text = k.default_text()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some(match &json {
        serde_json::Value::Null => "absent".to_string(),
        v => match toml::Value::try_from(v) {
            Ok(toml::Value::String(s)) => format!("`{s:?}`"),
            Ok(t) => format!("`{t}`"),
            Err(_) => format!("`{text}`"),
        },
    })
}

/// What a key's value is, in words.
fn kind(g: &Gen) -> String {
    match g {
        Gen::Int => "a whole number".into(),
        Gen::Float => "a number".into(),
        Gen::Bool => "`true` or `false`".into(),
        Gen::Text => "text".into(),
        Gen::Choice(_) => "one of the values below".into(),
        Gen::Selector(_) => "a policy: Linux's or a mechanism's (below)".into(),
        Gen::Cpus => "an array of CPU numbers".into(),
        Gen::Name => "a name (letters, digits, `_`, `-`)".into(),
        Gen::Profile => "a machine profile's name (`profiles/`) or a path to one".into(),
        Gen::List(e) => match e() {
            Gen::Table(_) => "an array of tables".into(),
            inner => format!("an array; each element {}", kind(&inner)),
        },
        Gen::Table(_) => "a table".into(),
    }
}

/// The heading of a table's section (`[kernel]`, `[[nic]]`, `[process.accelerator]`).
fn heading(table: &str) -> String {
    if table.is_empty() {
        return "The top level".into();
    }
    let parts: Vec<&str> = table.split('.').filter(|s| *s != "*").collect();
    if table.ends_with(".*") {
        format!("`[[{}]]`", parts.join("."))
    } else {
        format!("`[{}]`", parts.join("."))
    }
}

/// The key reference (`docs/src/reference/scenario-keys.md`): every key of every table, with
/// its default, its allowed values and its documentation, grouped by table and by mechanism.
pub fn reference() -> String {
    let mut out = String::new();
    out.push_str("# Scenario keys\n\n");
    out.push_str("<!-- Generated from the keys' declarations by `cargo run -p hostsim-scenario --example scenario_keys`;\n     do not edit (crates/scenario/src/keys.rs's tests fail when this file is stale). -->\n\n");
    out.push_str("Every key a scenario file can set, generated from the one place each is declared: the\n");
    out.push_str("kernel's, a NIC's, a process's and a traffic source's keys in `crates/host/src/config/`, the\n");
    out.push_str("programs' tables in `crates/workload/`, each mechanism's keys in its folder under\n");
    out.push_str("`crates/host/src/mechanisms/`, the top level in `crates/scenario/src/lib.rs`. A number outside\n");
    out.push_str("its range is refused when the scenario is loaded, with the file, line and key. The claims,\n");
    out.push_str("figures, variants and sweeps (`[[expect]]`, `[[figure]]`, `[[variant]]`, `[sweep]`) are\n");
    out.push_str("described with the scenario format; `[profile_set]` takes a machine profile's keys.\n");
    let mut groups: Vec<(&str, Option<&str>)> = Vec::new();
    for e in entries() {
        let g = (e.table.as_str(), e.mechanism.filter(|_| e.table == "kernel" || e.table == "process.*"));
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    for (table, mech) in groups {
        match mech {
            None => out.push_str(&format!("\n## {}\n\n", heading(table))),
            Some(m) => out.push_str(&format!("\n### {}: mechanism `{m}`\n\n", heading(table))),
        }
        let rows = entries().iter().filter(|e| e.table == table && e.mechanism.filter(|_| mech.is_some()) == mech);
        for e in rows {
            let k = &e.key;
            let g = (k.gen)();
            out.push_str(&format!("- **`{}`**: {}", k.name, k.doc));
            if !k.doc.ends_with('.') && !k.doc.ends_with(')') {
                out.push('.');
            }
            let what = match &k.range {
                Some((Range::Len(max), why)) => format!("{}, at most {} ({why})", kind(&g), fmt_int(*max as i64)),
                Some((r, why)) => describe(r, why),
                None => kind(&g),
            };
            out.push_str(&format!("\n  {}", capital(&what)));
            if let Some((r, why)) = &k.each {
                out.push_str(&format!("; each {}", describe(r, why)));
            }
            if !matches!(g, Gen::Table(_)) {
                match default_text(k) {
                    Some(d) => out.push_str(&format!(". Default {d}.")),
                    None => out.push_str(". Required."),
                }
            } else {
                out.push_str(&format!(" ({}).", heading(&e.path)));
            }
            out.push('\n');
            let listed: Vec<(&str, &str, Option<&str>)> = match g {
                Gen::Choice(v) => v.iter().map(|&(n, d)| (n, d, None)).collect(),
                Gen::Selector(sel) => values(sel),
                _ => Vec::new(),
            };
            for (name, doc, m) in listed {
                let by = m.map(|m| format!(" (mechanism `{m}`)")).unwrap_or_default();
                let doc = if doc.is_empty() { String::new() } else { format!(": {doc}") };
                out.push_str(&format!("  - `{name}`{by}{doc}\n"));
            }
        }
    }
    out
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// Where the reference is kept, from this crate's folder.
pub const REFERENCE_PATH: &str = "../../docs/src/reference/scenario-keys.md";

/// Keys declared twice (one path, two declarations): each path once, with its declarers.
pub fn duplicates() -> BTreeMap<String, Vec<Option<&'static str>>> {
    let mut by: BTreeMap<String, Vec<Option<&'static str>>> = BTreeMap::new();
    for e in entries() {
        by.entry(e.path.clone()).or_default().push(e.mechanism);
    }
    by.retain(|_, v| v.len() > 1);
    by
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A generator the fuzzer can follow: a choice with values, a table with keys, a list of one.
    fn generates(g: Gen) -> bool {
        match g {
            Gen::Choice(v) => !v.is_empty(),
            Gen::Selector(s) => !values(s).is_empty(),
            Gen::Table(f) => !f().is_empty(),
            Gen::List(e) => generates(e()),
            _ => true,
        }
    }

    #[test]
    fn every_key_has_documentation_a_bound_and_a_generator() {
        let mut bad = Vec::new();
        for e in entries() {
            let k = &e.key;
            if k.doc.trim().is_empty() {
                bad.push(format!("{}: no documentation (a doc comment on its field)", e.path));
            }
            let g = (k.gen)();
            let number = |g: &Gen| matches!(g, Gen::Int | Gen::Float | Gen::Cpus);
            if number(&g) && k.range.is_none() && k.each.is_none() {
                bad.push(format!("{}: a number without a bound (#[option(bound = ..., why = ...)])", e.path));
            }
            if let Gen::List(inner) = g {
                if k.range.is_none() {
                    bad.push(format!("{}: an array without a longest length (bound = len(N))", e.path));
                }
                if number(&inner()) && k.each.is_none() {
                    bad.push(format!("{}: an array of numbers without a bound on each (each = ...)", e.path));
                }
            }
            if let Some((r, why)) = k.range.iter().chain(k.each.iter()).next() {
                if why.is_empty() && !matches!(r, Range::Finite) {
                    bad.push(format!("{}: a bound without a reason (why = ...)", e.path));
                }
            }
            if !generates(g) {
                bad.push(format!("{}: no values to generate", e.path));
            }
        }
        assert!(bad.is_empty(), "keys missing a part of their declaration:\n{}", bad.join("\n"));
        assert!(entries().len() > 150, "{} keys", entries().len());
    }

    #[test]
    fn every_policy_key_is_read_by_kernel_policies() {
        let k = KernelConfig::default();
        let read: Vec<&str> = k.policies().iter().map(|(key, _)| *key).collect();
        let declared: Vec<&str> = KernelConfig::keys()
            .iter()
            .filter_map(|key| match (key.gen)() {
                Gen::Selector(sel) => Some(sel.key),
                _ => None,
            })
            .collect();
        assert_eq!(read.len(), declared.len(), "KernelConfig::policies {read:?}, the selectors {declared:?}");
        assert!(
            declared.iter().all(|d| read.contains(d)),
            "KernelConfig::policies {read:?} misses one of {declared:?}"
        );
        // The values are the fields': the default's as serialised.
        let json = serde_json::to_value(&k).unwrap();
        for (key, p) in k.policies() {
            assert_eq!(json[key].as_str(), Some(p.0.as_str()), "{key}");
        }
    }

    #[test]
    fn no_key_is_declared_twice() {
        assert!(duplicates().is_empty(), "keys declared by two declarations: {:?}", duplicates());
    }

    #[test]
    fn mechanism_keys_and_policies_are_found() {
        let paths: Vec<&str> = entries().iter().map(|e| e.path.as_str()).collect();
        for p in [
            "kernel.hz",
            "kernel.pbq_min_packets",
            "kernel.flow_limit_table_len",
            "process.*.speed_pct",
            "nic.*.rx_ring",
            "process.*.accelerator.ratio",
            "traffic.*.http.conns",
            "process.*.thread.*.cpus",
        ] {
            assert!(paths.contains(&p), "{p}");
        }
        let backlog: Vec<&str> = values(&hostsim_host::BACKLOG).iter().map(|v| v.0).collect();
        assert_eq!(backlog, ["fifo", "pbq", "flow_limit"]);
        let kernel: Vec<String> = section("kernel").into_iter().map(|s| s.0).collect();
        assert!(kernel.contains(&"napi_suppress".to_string()) && kernel.contains(&"hz".to_string()));
        let process: Vec<String> = section("process.*").into_iter().map(|s| s.0).collect();
        assert!(process.contains(&"accelerator.ratio".to_string()) && process.contains(&"thread".to_string()));
        assert!(!process.iter().any(|k| k.starts_with("thread.")));
    }

    /// The reference in the docs is what the declarations say today.
    #[test]
    fn the_key_reference_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(REFERENCE_PATH);
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == reference(),
            "{} is stale: run `cargo run -p hostsim-scenario --example scenario_keys`",
            path.display()
        );
    }
}
