//! Embeds every machine profile (`profiles/*.toml`), built-in scenario (`scenarios/**/*.toml`) and
//! calibration overlay (`calibration/*.toml`) into the library, so the `hostsim` binary works from
//! any directory.

use std::fs;
use std::path::{Path, PathBuf};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|e| e == "toml") {
            out.push(p);
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
    let mut code = String::new();
    for (var, sub) in [("PROFILES", "profiles"), ("SCENARIOS", "scenarios"), ("CALIBRATIONS", "calibration")] {
        let dir = root.join(sub);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files = Vec::new();
        walk(&dir, &mut files);
        code.push_str(&format!("pub static {var}: &[(&str, &str)] = &[\n"));
        for f in &files {
            println!("cargo:rerun-if-changed={}", f.display());
            let rel = f.strip_prefix(&dir).unwrap().with_extension("");
            code.push_str(&format!("    ({:?}, include_str!({:?})),\n", rel.to_string_lossy(), f.display().to_string()));
        }
        code.push_str("];\n");
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("builtin.rs");
    fs::write(out, code).unwrap();
}
