//! No crate of the workspace has an import circle between its modules, and in the host crate no
//! policy or state module imports the `Host` hub (`sim.rs`): small shared types live in
//! `types.rs`, the policy enums in `policies.rs`, each subsystem's state in a module that does
//! not import the hub (a folder's `mod.rs`, `kernel/cpu.rs`, `kernel/task.rs`, ...), and the hub
//! imports them (see `docs/extending.md`). A module is a file under `src/` (`kernel/sched/core.rs`
//! is `kernel/sched/core`, a folder's `mod.rs` is the folder); every `crate::a::b::c` mention is an
//! edge to the longest of `a/b/c`, `a/b`, `a` that is a module, `use` lines and inline paths alike,
//! test modules included. `scripts/import_graph.py` prints the graphs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, Vec<String>>;

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn graph(src: &Path) -> Graph {
    let mut paths = Vec::new();
    rs_files(src, &mut paths);
    let mut files = BTreeMap::new();
    for p in paths {
        let rel = p.strip_prefix(src).expect("under src").with_extension("");
        let mut parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        if parts.last().is_some_and(|l| l == "mod") {
            parts.pop();
        }
        if parts.is_empty() || parts == ["lib"] || parts == ["main"] || parts[0] == "bin" {
            continue;
        }
        files.insert(parts.join("/"), std::fs::read_to_string(&p).expect("read module"));
    }
    let mut g = BTreeMap::new();
    for (m, text) in &files {
        let mut deps = Vec::new();
        for (i, _) in text.match_indices("crate::") {
            let path: String =
                text[i + 7..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            for k in (1..=segs.len()).rev() {
                let cand = segs[..k].join("/");
                if files.contains_key(&cand) {
                    if &cand != m {
                        deps.push(cand);
                    }
                    break;
                }
            }
        }
        deps.sort();
        deps.dedup();
        g.insert(m.clone(), deps);
    }
    g
}

fn find_cycle(g: &Graph) -> Option<Vec<String>> {
    fn dfs(g: &Graph, n: &str, stack: &mut Vec<String>, done: &mut Vec<String>) -> Option<Vec<String>> {
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

fn workspace_crates() -> Vec<PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("crates/").to_path_buf();
    let mut v: Vec<PathBuf> = std::fs::read_dir(&crates)
        .expect("read crates/")
        .map(|e| e.expect("dir entry").path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

#[test]
fn no_crate_has_an_import_circle() {
    let crates = workspace_crates();
    assert!(crates.len() >= 7, "expected the workspace's crates, found {crates:?}");
    for src in crates {
        let g = graph(&src);
        if let Some(c) = find_cycle(&g) {
            panic!("import circle in {}: {}", src.display(), c.join(" -> "));
        }
    }
}

#[test]
fn the_host_crate_is_arranged_by_subsystem() {
    let g = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    for m in [
        "drivers/net/nic",
        "net/core/rx",
        "net/ipv4/input",
        "kernel/sched/core",
        "kernel/irq/route",
        "fs/select",
        "mechanisms/ozaki_pbq/pbq",
        "mechanisms/goda_rfs",
        "mechanisms/tabata_speed/slots",
        "mechanisms/takeuchi_symbiose",
        "mechanisms/flow_limit",
        "metrics/summary",
    ] {
        assert!(g.contains_key(m), "module {m} is missing: {:?}", g.keys());
    }
}

#[test]
fn policy_and_state_modules_do_not_import_the_hub() {
    let g = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let pure = [
        "types",
        "policies",
        "net/core/backlog",
        "mechanisms/ozaki_pbq/pbq",
        "mechanisms/flow_limit",
        "kernel/sched/wake",
        "mechanisms/goda_rfs",
        "kernel/sched/placement",
        "kernel/sched/cfs6",
        "kernel/sched/o1",
        "metrics/migration_class",
        "metrics/trace",
        "metrics/stats",
        "mechanisms/tabata_speed/slots",
        "drivers/net/txring",
        "metrics/sink",
        "mechanisms/ozaki_pbq/xdp",
        "kernel/locking/spinlock",
        "mechanisms/takeuchi_symbiose",
        // each subsystem's state, which the hub holds
        "kernel/cpu",
        "kernel/task",
        "kernel/sched",
        "drivers/net",
        "net",
        "net/core/sock",
        "net/core/skbuff",
        "wire",
        "mechanisms",
    ];
    for m in pure {
        let deps = g.get(m).unwrap_or_else(|| panic!("no module {m}"));
        assert!(!deps.iter().any(|d| d == "sim"), "{m} imports the hub sim.rs: {deps:?}");
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
