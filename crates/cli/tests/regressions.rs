//! Regression files of issue 25 replayed through the `hostsim` binary (`HOSTSIM_TEST_BIN`
//! runs them against another build, to show them failing there):
//!
//! - `tests/check_regressions/`: claims and `[metrics]` aliases whose metric names only the
//!   model knows; `hostsim check` must refuse each with the file, line, key and message its
//!   header states (`# expect-line`, `# expect-key`, `# expect-message`), before any sweep.
//! - the scenario crate's hostile corpus entries of issue 25 (`hole-speed-*`, `hole-claim-*`,
//!   `hole-calibration-*`, `hole-measured-*`): the same through the command line.

use std::path::{Path, PathBuf};
use std::process::Command;

fn hostsim() -> Command {
    Command::new(std::env::var_os("HOSTSIM_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_hostsim").into()))
}

fn field<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("# expect-{name}:")))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no expect-{name}"))
}

fn replay(files: &[PathBuf]) -> Vec<String> {
    let mut failures = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        let (line, key, msg) = (field(&text, "line"), field(&text, "key"), field(&text, "message"));
        let out = hostsim().arg("check").arg(f).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let name = f.file_name().unwrap().to_string_lossy();
        let at = if line == "none" { format!("{}: ", f.display()) } else { format!("{}:{line}: ", f.display()) };
        if out.status.code() != Some(1) {
            failures.push(format!(
                "{name}: exit {:?} (accepted?) {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).trim()
            ));
        } else if !err.contains(&at) || !err.contains(&format!("key `{key}")) || !err.contains(msg) {
            failures.push(format!("{name}: want `{at}key `{key}`: …{msg}…`, got: {}", err.trim()));
        }
    }
    failures
}

fn toml_in(dir: &Path, prefixes: &[&str]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .filter(|p| {
            prefixes.is_empty() || prefixes.iter().any(|x| p.file_name().unwrap().to_string_lossy().starts_with(x))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn claims_and_aliases_naming_unknown_metrics_are_refused_by_check() {
    let files = toml_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/check_regressions"), &[]);
    assert!(files.len() >= 5);
    let failures = replay(&files);
    assert!(failures.is_empty(), "{} of {}:\n{}", failures.len(), files.len(), failures.join("\n"));
}

#[test]
fn the_hostile_files_of_issue_25_are_refused_by_check() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenario/tests/hostile");
    let files = toml_in(&dir, &["hole-speed-", "hole-claim-", "hole-calibration-", "hole-measured-"]);
    assert!(files.len() >= 15);
    let failures = replay(&files);
    assert!(failures.is_empty(), "{} of {}:\n{}", failures.len(), files.len(), failures.join("\n"));
}

/// A claim may name an alias, and a metric the runs have passes.
#[test]
fn a_claim_on_an_alias_is_accepted() {
    let d = std::env::temp_dir().join(format!("hostsim-regress-alias-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let base =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenario/tests/good/minimal.toml"))
            .unwrap();
    let f = d.join("alias.toml");
    std::fs::write(
        &f,
        base.replace("metric = \"delivered_pps\"\nvariant = \"napi\"", "metric = \"got\"\nvariant = \"napi\"")
            + "\n[metrics]\ngot = \"sink_rx_pps\"\n",
    )
    .unwrap();
    let out = hostsim().arg("check").arg(&f).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&d);
}
