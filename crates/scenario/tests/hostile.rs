//! The hostile corpus (`tests/hostile/`): at least one file per hole class of issue 15 (keys past
//! their range, wrong types, files that cannot be read, dangling references, sweeps too large to
//! expand, names that would corrupt outputs, configurations that would exhaust memory, values
//! whose arithmetic would wrap). Every one must be refused, never loaded, never a panic, with an
//! error naming the file, the line (where there is one), the key and what is allowed, as its
//! header says:
//!
//! ```text
//! # hostile: what the file tries
//! # expect-line: 16            (or `none` where the fault is not on a line)
//! # expect-key: nic[0].rx_ring (a part of the error's key; empty where there is none)
//! # expect-message: expected a whole number in 1..=8192   (a part of the message)
//! ```
//!
//! `range-*.toml` are generated from the bounds tables (`examples/hostile_corpus.rs`); the rest
//! are written by hand. Entries that are not readable files (a directory named like a built-in
//! scenario) carry their expectation in `<name>.expect`.

use hostsim_scenario::load;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile")
}

/// Every entry of the corpus with the text that holds its header.
pub fn corpus() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir()).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".toml") {
            continue;
        }
        let sidecar = p.with_file_name(format!("{}.expect", name.trim_end_matches(".toml")));
        let header = if sidecar.exists() {
            std::fs::read_to_string(&sidecar).unwrap()
        } else {
            String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned()
        };
        out.push((p, header));
    }
    out.sort();
    out
}

fn field<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.lines().find_map(|l| l.strip_prefix(&format!("# expect-{name}:"))).map(str::trim)
}

#[test]
fn every_hostile_file_is_refused_with_file_line_key_and_what_is_allowed() {
    let files = corpus();
    let mut failures = Vec::new();
    for (path, header) in &files {
        let name = path.file_name().unwrap().to_string_lossy();
        let (Some(line), Some(key), Some(message)) =
            (field(header, "line"), field(header, "key"), field(header, "message"))
        else {
            failures.push(format!("{name}: header lacks expect-line, expect-key or expect-message"));
            continue;
        };
        let want_line = if line == "none" { None } else { Some(line.parse::<usize>().unwrap()) };
        let e = match std::panic::catch_unwind(|| load(path, &[])) {
            Err(_) => {
                failures.push(format!("{name}: load panicked"));
                continue;
            }
            Ok(Ok(_)) => {
                failures.push(format!("{name}: accepted"));
                continue;
            }
            Ok(Err(e)) => e,
        };
        let shown = e.to_string();
        let mut bad = Vec::new();
        if !shown.starts_with(&path.display().to_string()) {
            bad.push("does not name the file".to_string());
        }
        if e.line != want_line {
            bad.push(format!("line {:?}, want {want_line:?}", e.line));
        }
        if !e.key.contains(key) {
            bad.push(format!("key {:?}, want {key:?}", e.key));
        }
        if !e.message.contains(message) {
            bad.push(format!("message lacks {message:?}"));
        }
        if e.message.contains('\n') {
            bad.push("message spans lines".into());
        }
        if !bad.is_empty() {
            failures.push(format!("{name}: {}\n    error: {shown}", bad.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{} of {} hostile files wrong:\n{}", failures.len(), files.len(), failures.join("\n"));
    assert!(files.len() >= 200, "the corpus has {} files; it must have at least 200", files.len());
}
