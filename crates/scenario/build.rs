//! Embeds every machine profile (`profiles/*.toml`), built-in scenario (`scenarios/**/*.toml`) and
//! calibration overlay (`calibration/*.toml`) into the library, so the `hostsim` binary works from
//! any directory.
//!
//! Also computes `MODEL_SOURCE_ID`: a hash (64-bit FNV-1a) of the sources that decide a run's
//! results, i.e. the Rust sources of the crates in [`MODEL_CRATES`] and the machine profiles.
//! Every crate of the workspace is either one of them or in [`OTHER_CRATES`] with the reason it
//! decides no result; `tests/model_source.rs` fails on a crate in neither list, so a new crate
//! cannot escape the id. The CLI and the Python module (`_native`) are built separately; `hostsim
//! calibrate` fits through `_native`, so it compares the two ids and refuses a stale module.

use std::fs;
use std::path::{Path, PathBuf};

/// The crates (`crates/<name>`) whose Rust sources decide a run's results: the options'
/// declarations (defaults, bounds), the event engine, the sending TCP, the workloads, the host
/// model, the scenario format (a configuration's values, sweeps, claims) and the runner (which
/// runs, with which seeds, what their rows say).
const MODEL_CRATES: &[&str] = &["options-macros", "options", "engine", "tcp", "workload", "host", "scenario", "run"];

/// The workspace's other crates, and why no result depends on their sources.
const OTHER_CRATES: &[(&str, &str)] = &[
    ("cli", "the `hostsim` command: arguments, the claims table, the report's invocation; every run goes through the runner crate"),
    ("py", "the Python binding: passes scenarios and results between Python and the runner crate"),
    ("live", "experiments on this machine's kernel: their results are measurements, not the model's"),
];

/// Every file under `dir` (sorted, recursive) whose extension is `ext`.
fn walk(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, ext, out);
        } else if p.extension().is_some_and(|e| e == ext) {
            out.push(p);
        }
    }
}

/// 64-bit FNV-1a over each file's path (relative to the repository) and contents.
fn model_source_id(root: &Path) -> String {
    let mut files = Vec::new();
    for krate in MODEL_CRATES {
        let dir = root.join("crates").join(krate).join("src");
        println!("cargo:rerun-if-changed={}", dir.display());
        walk(&dir, "rs", &mut files);
    }
    walk(&root.join("profiles"), "toml", &mut files);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in &files {
        let rel = f.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        let body = fs::read(f).unwrap();
        for b in rel.as_bytes().iter().chain([0u8].iter()).chain(body.iter()).chain([0u8].iter()) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
    let mut code = String::new();
    code.push_str(&format!("pub const MODEL_SOURCE_ID: &str = {:?};\n", model_source_id(&root)));
    code.push_str(&format!("pub const MODEL_SOURCE_CRATES: &[&str] = &{MODEL_CRATES:?};\n"));
    code.push_str(&format!("pub const OTHER_CRATES: &[(&str, &str)] = &{OTHER_CRATES:?};\n"));
    for (var, sub) in [("PROFILES", "profiles"), ("SCENARIOS", "scenarios"), ("CALIBRATIONS", "calibration")] {
        let dir = root.join(sub);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files = Vec::new();
        walk(&dir, "toml", &mut files);
        code.push_str(&format!("pub static {var}: &[(&str, &str)] = &[\n"));
        for f in &files {
            println!("cargo:rerun-if-changed={}", f.display());
            let rel = f.strip_prefix(&dir).unwrap().with_extension("");
            code.push_str(&format!(
                "    ({:?}, include_str!({:?})),\n",
                rel.to_string_lossy(),
                f.display().to_string()
            ));
        }
        code.push_str("];\n");
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("builtin.rs");
    fs::write(out, code).unwrap();
}
