//! # Bounds: the allowed range of every number a scenario or a machine profile sets
//!
//! The rows of a scenario's keys come from the keys' declarations (`keys.rs`: each field's
//! `#[option(bound = ..., why = ...)]`, next to the code that reads it), plus [`CLAIMS`], the
//! numbers of claims, figures and calibration parameters; [`PROFILE`] covers a machine profile.
//! Each row says which key it covers, the range of values the model accepts, and why the range
//! ends where it does. The check runs on the TOML document *before* it is deserialised (and
//! again after every `--set`, variant and sweep value is applied), so an out-of-range or mistyped
//! number is refused with the file, line, key and the allowed range, never wrapped, saturated or
//! allocated.
//!
//! **Adding a key.** Declare it where it is read, with its bound:
//!
//! ```text
//! /// TX descriptors per queue.
//! #[option(default = 256, bound = int(1, 8_192), why = "TX descriptors; the largest rings of real NICs (mlx5, ice) hold 8,192")]
//! pub tx_ring: u32,
//!        │                 │                  └ why the range ends there: a real limit, a memory budget, Linux's own bound
//!        │                 └ int(min, max) | float(min, max) | finite() | len(max) for arrays (each = for their elements)
//!        └ the scenario key (serde's name)
//! ```
//!
//! A row's pattern is a dotted path from the top of the file (`*` = any element of an array or
//! any key; `*_ns` = any key ending in `_ns`); the first row whose pattern matches a key applies.
//! `keys.rs`'s tests fail on a number without a bound; `every_numeric_key_has_a_bound` below
//! serialises every configuration type with all its fields and fails on a number without a row.
//! What a single range cannot say (warm-up shorter than the run, a source no faster than its
//! link, the model's total memory) is checked on the typed configuration in `validate.rs` and by
//! each mechanism's `check`.
//!
//! **Where the limits come from.** Times: simulated time is `u64` nanoseconds; every time-like key
//! is limited to one simulated day ([`DAY_MS`]), so sums of a few times cannot come near 2^64 and
//! a run ends in bounded wall time. Counts and sizes: the largest value a real system has (ring
//! sizes of real NICs, Linux's sysctl limits), or a memory budget at a stated cost per item.

use crate::paths::Seg;
pub use hostsim_options::{describe, finite, float, fmt_float, fmt_int, int, len, Range, DAY_MS, DAY_NS, DAY_US};
use std::sync::OnceLock;
use toml::{Table, Value};

/// A row: key pattern, range, why.
pub type Bound = (&'static str, Range, &'static str);

/// The numbers of a scenario that are no run's configuration: claims, figures, variants and
/// calibration parameters (values compared with or drawn, never simulated).
#[rustfmt::skip]
pub const CLAIMS: &[Bound] = &[
    ("variant", len(1_000), "variants"),
    ("expect", len(10_000), "claims"),
    ("figure", len(1_000), "figures"),
    ("calibrate", len(100), "calibration parameters"),
    ("calibrate.*.min", finite(), ""),
    ("calibrate.*.max", finite(), ""),
    ("calibrate.*.offset", finite(), ""),
    ("expect.*.paper_value", finite(), ""),
    ("expect.*.value", finite(), ""),
    ("expect.*.factor", finite(), ""),
    ("expect.*.offset", finite(), ""),
    ("expect.*.tolerance_abs", float(0.0, 1e15), "an absolute tolerance, in the metric's unit"),
    ("expect.*.tolerance", float(0.0, 1e6), "a relative tolerance"),
    // A condition's number: NaN would make every comparison false and a claim fail unseen.
    ("expect.*.where", len(100), "conditions"),
    ("expect.*.where.*.value", finite(), ""),
    ("expect.*.where.*.factor", finite(), ""),
    ("expect.*.rhs.where", len(100), "conditions"),
    ("expect.*.rhs.where.*.value", finite(), ""),
    ("expect.*.rhs.where.*.factor", finite(), ""),
    ("figure.*.marks", len(10_000), "marks"),
    ("figure.*.marks.*.x", finite(), ""),
    ("figure.*.marks.*.y", finite(), ""),
];

/// Keys of a scenario file: each declared key's bound (and its elements'), then [`CLAIMS`].
pub fn scenario() -> &'static [Bound] {
    static ROWS: OnceLock<Vec<Bound>> = OnceLock::new();
    ROWS.get_or_init(|| {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let mut rows = Vec::new();
        for e in crate::keys::entries() {
            if let Some((r, why)) = e.key.range {
                rows.push((leak(e.path.clone()), r, why));
            }
            if let Some((r, why)) = e.key.each {
                rows.push((leak(format!("{}.*", e.path)), r, why));
            }
        }
        rows.extend_from_slice(CLAIMS);
        rows
    })
}

/// Keys of a machine profile (in a scenario: under `profile_set`).
#[rustfmt::skip]
pub const PROFILE: &[Bound] = &[
    ("clock_mhz", int(1, 10_000), "MHz"),
    ("topology.packages", int(1, 128), "packages; the model has at most 128 CPUs"),
    ("topology.cores_per_package", int(1, 128), "cores; the model has at most 128 CPUs"),
    ("topology.threads_per_core", int(1, 8), "hardware threads; SMT8 is the most any CPU has"),
    ("costs.*_per_byte_ns", float(0.0, 1_000.0), "ns per byte; 1 us per byte is slower than a 1 MHz CPU's copy"),
    ("costs.newidle_balance_per_cpu_ns", int(0, 1_000_000), "ns per CPU of a domain; 1 ms per CPU would be a balance pass of a second on a 1,000-CPU domain"),
    ("costs.*", int(0, 1_000_000_000), "ns; an operation costing more than 1 s is a hang, not a cost"),
    ("cache.*_ns", int(0, 1_000_000_000), "ns; an operation costing more than 1 s is a hang, not a cost"),
    ("cache.*", int(0, 1_000_000), "modelled misses per event"),
    ("mechanisms.smp_lock_factor", float(1.0, 10.0), "a multiplier on the locking-sensitive costs: SMP locking adds cost (>= 1; measured factors are ~1.15)"),
    ("mechanisms.*", int(0, 1_000_000_000), "ns; an operation costing more than 1 s is a hang, not a cost"),
    ("syscalls.*", int(0, 1_000_000_000), "ns; a system call costing more than 1 s is a hang, not a cost"),
];

/// A value outside its bound: where it is (segments from the document's root) and the message.
pub type Violation = (Vec<Seg>, String);

/// Check every value of the document `doc` against the first row of `table` whose pattern
/// matches its key; `prefix` is where `doc` sits in the scenario (`profile_set` for profile keys).
/// The first violation in document order is returned.
pub fn check(doc: &Table, table: &'static [Bound], prefix: &[Seg]) -> Result<(), Violation> {
    let trie = trie(table);
    let mut at = prefix.to_vec();
    visit_table(doc, trie, table, &[0], &mut at)
}

/// The patterns of a table as a trie, built once: a node's children by literal segment and by
/// wildcard (`*` or `*suffix`), and the first row whose pattern ends at the node.
#[derive(Default)]
struct Node {
    lit: std::collections::BTreeMap<&'static str, usize>,
    wild: Vec<(&'static str, usize)>,
    ends: Option<usize>,
}

fn trie(table: &'static [Bound]) -> &'static [Node] {
    use std::sync::OnceLock;
    static SCEN: OnceLock<Vec<Node>> = OnceLock::new();
    static PROF: OnceLock<Vec<Node>> = OnceLock::new();
    let make = || {
        let mut nodes = vec![Node::default()];
        for (row, (pattern, _, _)) in table.iter().enumerate() {
            let mut n = 0;
            for seg in pattern.split('.') {
                let next = if let Some(suffix) = seg.strip_prefix('*') {
                    nodes[n].wild.iter().find(|(s, _)| *s == suffix).map(|w| w.1)
                } else {
                    nodes[n].lit.get(seg).copied()
                };
                n = match next {
                    Some(c) => c,
                    None => {
                        nodes.push(Node::default());
                        let c = nodes.len() - 1;
                        match seg.strip_prefix('*') {
                            Some(suffix) => nodes[n].wild.push((suffix, c)),
                            None => {
                                nodes[n].lit.insert(seg, c);
                            }
                        }
                        c
                    }
                };
            }
            nodes[n].ends.get_or_insert(row);
        }
        nodes
    };
    if std::ptr::eq(table, scenario()) {
        SCEN.get_or_init(make)
    } else if std::ptr::eq(table, PROFILE) {
        PROF.get_or_init(make)
    } else {
        Box::leak(make().into_boxed_slice())
    }
}

/// The trie nodes a child reached by `seg` matches, from the nodes `at` its parent matched.
fn step(trie: &[Node], from: &[usize], seg: Option<&str>) -> Vec<usize> {
    let mut out = Vec::new();
    for &n in from {
        if let Some(k) = seg {
            if let Some(&c) = trie[n].lit.get(k) {
                out.push(c);
            }
        }
        for &(suffix, c) in &trie[n].wild {
            let hit = match seg {
                Some(k) => k.ends_with(suffix),
                None => suffix.is_empty(),
            };
            if hit {
                out.push(c);
            }
        }
    }
    out
}

fn visit_table(t: &Table, trie: &[Node], table: &[Bound], nodes: &[usize], at: &mut Vec<Seg>) -> Result<(), Violation> {
    for (k, v) in t {
        let next = step(trie, nodes, Some(k));
        if next.is_empty() {
            continue;
        }
        at.push(Seg::Key(k.clone()));
        let r = visit(v, trie, table, &next, at);
        at.pop();
        r?;
    }
    Ok(())
}

/// `v` is at `at`; `nodes` are the trie nodes its path matches.
fn visit(v: &Value, trie: &[Node], table: &[Bound], nodes: &[usize], at: &mut Vec<Seg>) -> Result<(), Violation> {
    // The first row (in table order) ending here applies to this value.
    if let Some(row) = nodes.iter().filter_map(|&n| trie[n].ends).min() {
        let (_, range, why) = &table[row];
        check_value(v, range, why).map_err(|m| (at.clone(), m))?;
    }
    match v {
        Value::Table(t) => visit_table(t, trie, table, nodes, at),
        Value::Array(items) => {
            let next = step(trie, nodes, None);
            if next.is_empty() {
                return Ok(());
            }
            for (i, item) in items.iter().enumerate() {
                at.push(Seg::Index(i));
                let r = visit(item, trie, table, &next, at);
                at.pop();
                r?;
            }
            Ok(())
        }
        // Anything else has the wrong shape: deserialisation names the type it expected.
        _ => Ok(()),
    }
}

#[cfg(test)]
fn seg_matches(pat: &str, seg: &Seg) -> bool {
    match seg {
        Seg::Index(_) => pat == "*",
        Seg::Key(key) => match pat.strip_prefix('*') {
            Some("") => true,
            Some(suffix) => key.ends_with(suffix),
            None => pat == key,
        },
    }
}

fn type_of(v: &Value) -> String {
    match v {
        Value::String(s) => format!("a string {s:?}"),
        Value::Integer(i) => format!("{i}"),
        Value::Float(f) => fmt_float(*f),
        Value::Boolean(b) => format!("{b}"),
        Value::Datetime(d) => format!("a date-time {d}"),
        Value::Array(_) => "an array".into(),
        Value::Table(_) => "a table".into(),
    }
}

fn check_value(v: &Value, range: &Range, why: &str) -> Result<(), String> {
    let want = || describe(range, why);
    let bad = |got: String| Err(format!("expected {}, got {got}", want()));
    let wrong_type = || Err(format!("invalid type: {}, expected {}", type_of(v), want()));
    match (range, v) {
        (Range::Int(min, max), Value::Integer(i)) => {
            if i < min || i > max {
                return bad(i.to_string());
            }
        }
        (Range::Int(..), Value::Float(f)) => return bad(fmt_float(*f)),
        (Range::Float(min, max), Value::Float(f)) => {
            if !(f.is_finite() && f >= min && f <= max) {
                return bad(fmt_float(*f));
            }
        }
        (Range::Float(min, max), Value::Integer(i)) => {
            let f = *i as f64;
            if f < *min || f > *max {
                return bad(i.to_string());
            }
        }
        (Range::Finite, Value::Float(f)) => {
            if !f.is_finite() {
                return bad(fmt_float(*f));
            }
        }
        (Range::Finite, Value::Integer(_)) => {}
        (Range::Len(max), Value::Array(a)) => {
            if a.len() > *max {
                return Err(format!("expected {}, got {} elements", want(), fmt_int(a.len() as i64)));
            }
        }
        // A string where a name is allowed (`Finite` on a non-numeric key) is not ours to judge.
        (Range::Finite, _) | (Range::Len(_), _) => {}
        (
            Range::Int(..) | Range::Float(..),
            Value::String(_) | Value::Boolean(_) | Value::Datetime(_) | Value::Array(_) | Value::Table(_),
        ) => return wrong_type(),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(s: &str) -> Table {
        s.parse().unwrap()
    }

    #[test]
    fn ranges_and_types() {
        let k = |s: &str| Seg::Key(s.into());
        let e = check(&doc("[[nic]]\nname = \"a\"\nrx_ring = 100000\n"), scenario(), &[]).unwrap_err();
        assert_eq!(e.0, vec![k("nic"), Seg::Index(0), k("rx_ring")]);
        assert!(e.1.starts_with("expected a whole number in 1..=8192 ("), "{}", e.1);
        assert!(e.1.ends_with("got 100000"), "{}", e.1);
        let e = check(&doc("duration_ms = -5\n"), scenario(), &[]).unwrap_err();
        assert!(e.1.contains("1..=86_400_000") && e.1.ends_with("got -5"), "{}", e.1);
        let e = check(&doc("duration_ms = \"50\"\n"), scenario(), &[]).unwrap_err();
        assert!(e.1.starts_with("invalid type: a string \"50\", expected a whole number"), "{}", e.1);
        let e = check(&doc("[[traffic]]\nrate_pps = nan\n"), scenario(), &[]).unwrap_err();
        assert!(e.1.ends_with("got nan"), "{}", e.1);
        let e = check(&doc("[kernel]\nrps_cpus = [0, 300]\n"), scenario(), &[]).unwrap_err();
        assert_eq!(e.0, vec![k("kernel"), k("rps_cpus"), Seg::Index(1)]);
        let e = check(&doc("[costs]\ncopy_per_byte_ns = 1e9\n"), PROFILE, &[k("profile_set")]).unwrap_err();
        assert_eq!(e.0, vec![k("profile_set"), k("costs"), k("copy_per_byte_ns")]);
        assert!(check(&doc("[costs]\ncopy_per_byte_ns = 2\nrecv_ns = 5\n"), PROFILE, &[]).is_ok());
        assert!(check(&doc("[[nic]]\nirq_routing = \"msix\"\n"), scenario(), &[]).is_ok());
    }

    /// Every number a scenario or profile can set, found by serialising each configuration type
    /// with all its fields, must have a row. A new key without one fails here.
    #[test]
    fn every_numeric_key_has_a_bound() {
        use hostsim_host::{KernelConfig, NicConfig, ProcessConfig, Profile, TrafficConfig};
        let mut doc = Table::new();
        for k in ["duration_ms", "warmup_ms", "seed", "sample_interval_ms"] {
            doc.insert(k.into(), Value::Integer(1));
        }
        let mut kernel = KernelConfig { rps_cpus: vec![0], online_cpus: Some(1), ..KernelConfig::default() }
            .with("flow_limit_cpus", [0]);
        // Every mechanism's keys of [kernel], at their defaults (those present).
        for e in crate::keys::entries().iter().filter(|e| e.table == "kernel" && e.mechanism.is_some()) {
            let d: serde_json::Value = serde_json::from_str(&e.key.default_text().unwrap()).unwrap();
            if !d.is_null() {
                kernel.mechanisms.entry(e.key.name.to_string()).or_insert(d);
            }
        }
        doc.insert("kernel".into(), Value::try_from(kernel).unwrap());
        let nic: NicConfig = toml::from_str(
            "name = \"a\"\nrate_mbps = 1\nbalance_irq_interval_us = 1\nirq_cpus = [0]\ntx_irq_ring_level = 1",
        )
        .unwrap();
        let process: ProcessConfig = toml::from_str("name = \"a\"\nprogram = \"udp_sink\"\nport = 1\ncpus = [0]\nrenice = [{ at_ms = 1, nice = 0 }]\nrcvbuf_bytes = 1\nsndbuf_bytes = 1\nspeed_pct = 50\naccelerator = { origin = \"o\" }\nthread = [{ name = \"t\", program = \"io\", cpus = [0] }]").unwrap();
        let traffic: TrafficConfig = toml::from_str("name = \"a\"\nkind = \"cbr\"\nnic = \"a\"\ndst_port = 1\nstop_ms = 1\nlink_delay_us = 1\nhttp = { rate_rps = 1 }").unwrap();
        let expect: crate::Expect = toml::from_str(
            "claim = \"\"\nmetric = \"m\"\nop = \"<\"\nvalue = 1\npaper_value = 1\ntolerance = 1\ntolerance_abs = 1",
        )
        .unwrap();
        let figure: crate::Figure = toml::from_str("title = \"\"\ny = \"m\"\nmarks = [{ x = 1, y = 1 }]").unwrap();
        for (k, v) in [
            ("nic", Value::try_from(nic).unwrap()),
            ("process", Value::try_from(process).unwrap()),
            ("traffic", Value::try_from(traffic).unwrap()),
            ("expect", Value::try_from(expect).unwrap()),
            ("figure", Value::try_from(figure).unwrap()),
        ] {
            doc.insert(k.into(), Value::Array(vec![v]));
        }
        // Every built-in profile: optional tables ([syscalls]) are in some only.
        let profiles: Vec<Value> = crate::builtin_profiles()
            .iter()
            .map(|(_, text)| Value::try_from(toml::from_str::<Profile>(text).unwrap()).unwrap())
            .collect();
        assert!(profiles.iter().any(|p| p.get("syscalls").is_some()), "a profile with [syscalls]");
        let mut missing = Vec::new();
        fn leaves(v: &Value, path: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
            match v {
                Value::Table(t) => {
                    for (k, x) in t {
                        path.push(Seg::Key(k.clone()));
                        leaves(x, path, out);
                        path.pop();
                    }
                }
                Value::Array(a) => {
                    for (i, x) in a.iter().enumerate() {
                        path.push(Seg::Index(i));
                        leaves(x, path, out);
                        path.pop();
                    }
                }
                Value::Integer(_) | Value::Float(_) => out.push(path.clone()),
                _ => {}
            }
        }
        let doc = Value::Table(doc);
        for (d, table) in std::iter::once((&doc, scenario())).chain(profiles.iter().map(|p| (p, PROFILE))) {
            let mut found = Vec::new();
            leaves(d, &mut Vec::new(), &mut found);
            assert!(found.len() > 20);
            for path in found {
                let covered = table.iter().any(|(p, r, _)| {
                    let pat: Vec<&str> = p.split('.').collect();
                    !matches!(r, Range::Len(_))
                        && pat.len() == path.len()
                        && pat.iter().zip(&path).all(|(p, s)| seg_matches(p, s))
                });
                if !covered {
                    missing.push(crate::paths::render(&path));
                }
            }
        }
        assert!(missing.is_empty(), "numbers without a row in bounds.rs: {missing:?}");
    }

    /// The defaults of every key are inside its range.
    #[test]
    fn defaults_are_in_range() {
        // Every declared key outside an array of tables, at its default (keys.rs).
        let mut doc = Table::new();
        for e in crate::keys::entries().iter().filter(|e| !e.path.contains('*')) {
            let Some(json) = e.key.default_text() else { continue };
            let v: serde_json::Value = serde_json::from_str(&json).unwrap();
            let Ok(v) = Value::try_from(&v) else { continue };
            crate::paths::set_path(&mut doc, &e.path, v).unwrap();
        }
        assert!(doc["kernel"].get("pbq_min_packets").is_some(), "a mechanism's key is set");
        check(&doc, scenario(), &[]).unwrap();
        for (name, text) in crate::builtin_profiles() {
            let t: Table = text.parse().unwrap();
            check(&t, PROFILE, &[]).unwrap_or_else(|e| panic!("profile {name}: {e:?}"));
        }
    }
}
