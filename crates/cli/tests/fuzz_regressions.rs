//! Every input a fuzzer (`scripts/fuzz.sh`) ever failed on, replayed: `tests/fuzz_regressions/`
//! holds each as the scenario text it stood for (printed with `HOSTSIM_FUZZ_PRINT=1`), with
//! header comments `# fuzz: <target>` and, for the `set` target, `# set: KEY=VALUE` lines. CI
//! runs these, not the fuzzers.

use hostsim_cli::fuzzing::{check_load, check_run, run_cost};
use std::path::Path;

#[test]
fn every_fuzzer_finding_stays_fixed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(!files.is_empty());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let header = |tag: &'static str| text.lines().filter_map(move |l| l.strip_prefix(tag)).map(str::trim);
        let target = header("# fuzz:").next().unwrap_or_else(|| panic!("{}: no `# fuzz: <target>` line", f.display()));
        let sets: Vec<(String, String)> = header("# set:")
            .map(|s| {
                let (k, v) = s.split_once('=').expect("KEY=VALUE");
                (k.trim().to_string(), v.trim().to_string())
            })
            .collect();
        let sc = check_load(&f, &text, &sets, 256);
        if target.starts_with("run") {
            let sc = sc.unwrap_or_else(|| panic!("{}: a run regression must be accepted", f.display()));
            for i in 0..sc.run_count().min(2) {
                let cfg = sc.run_config(i).unwrap().config;
                assert!(run_cost(&cfg) < 1e6, "{}: too long for a test", f.display());
                check_run(cfg);
            }
        }
    }
}
