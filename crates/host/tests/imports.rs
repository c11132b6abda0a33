//! The host crate's modules form no import circle: small shared types live in `types.rs`, the
//! policy enums in `policies.rs`, and no policy file imports the `Host` hub (`sim.rs`) or is
//! imported back by it (see `docs/extending.md`). Every `crate::<module>` mention counts, `use`
//! lines and inline paths alike, test modules included. `scripts/import_graph.py` prints the graph.

use std::collections::BTreeMap;
use std::path::Path;

fn graph() -> BTreeMap<String, Vec<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    for e in std::fs::read_dir(&src).expect("read src/") {
        let p = e.expect("dir entry").path();
        if p.extension().is_some_and(|x| x == "rs") {
            let stem = p.file_stem().expect("stem").to_string_lossy().into_owned();
            if stem != "lib" {
                files.insert(stem, std::fs::read_to_string(&p).expect("read module"));
            }
        }
    }
    let mut g = BTreeMap::new();
    for (m, text) in &files {
        let mut deps: Vec<String> = text
            .match_indices("crate::")
            .map(|(i, _)| {
                let rest = &text[i + 7..];
                rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>()
            })
            .filter(|d| d != m && files.contains_key(d))
            .collect();
        deps.sort();
        deps.dedup();
        g.insert(m.clone(), deps);
    }
    g
}

fn find_cycle(g: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn dfs(g: &BTreeMap<String, Vec<String>>, n: &str, stack: &mut Vec<String>, done: &mut Vec<String>) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == n) {
            let mut c = stack[i..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.iter().any(|d| d == n) {
            return None;
        }
        stack.push(n.to_string());
        for d in &g[n] {
            if let Some(c) = dfs(g, d, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.push(n.to_string());
        None
    }
    let mut done = Vec::new();
    g.keys().find_map(|n| dfs(g, n, &mut Vec::new(), &mut done))
}

#[test]
fn host_modules_form_no_import_circle() {
    let g = graph();
    assert!(g.len() > 15, "expected the host crate's modules, found {:?}", g.keys());
    if let Some(c) = find_cycle(&g) {
        panic!("import circle in crates/host/src: {}", c.join(" -> "));
    }
}

#[test]
fn policy_files_do_not_import_the_hub() {
    let g = graph();
    for policy in ["types", "policies", "backlog", "pbq", "flow_limit", "wake", "wake_goda", "placement", "sched_cfs6", "sched_o1", "migration_class", "trace", "stats", "slots", "tcp_conn", "txring", "sink_metrics", "xdp_pbq", "concurrency"] {
        let deps = &g[policy];
        assert!(!deps.iter().any(|d| d == "sim"), "{policy}.rs imports the hub sim.rs: {deps:?}");
    }
}

#[test]
fn the_cycle_finder_finds_a_planted_circle() {
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), vec!["b".to_string()]);
    g.insert("b".to_string(), vec!["c".to_string()]);
    g.insert("c".to_string(), vec!["a".to_string()]);
    assert_eq!(find_cycle(&g), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
}
