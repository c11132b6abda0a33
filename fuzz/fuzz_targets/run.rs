//! Short runs of accepted scenarios: every configuration the validator accepts runs to its end
//! (no stall, no panic, no abort) and conserves CPU time and packets.
#![no_main]
use hostsim_fuzz::{build, render, show, Input, PATH};
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use toml::Value;

/// Runs estimated above this many events are skipped (not run), to keep every input fast.
const EVENTS_MAX: f64 = 40_000.0;

fuzz_target!(|input: Input| {
    let mut doc = build(&input);
    // Short runs: 1..=5 simulated ms, measured from the start, sampled every ms.
    doc.insert("duration_ms".into(), Value::Integer(1 + i64::from(input.base % 5)));
    doc.insert("warmup_ms".into(), Value::Integer(0));
    doc.insert("sample_interval_ms".into(), Value::Integer(1));
    let Some(text) = render(&doc) else { return };
    show(&text, &[]);
    let Some(sc) = hostsim_cli::fuzzing::check_load(Path::new(PATH), &text, &[], 64) else { return };
    // The last run: with variants, the most overridden one.
    for i in [sc.run_count() - 1] {
        let cfg = sc.run_config(i).expect("every run was validated at load").config;
        if hostsim_cli::fuzzing::run_cost(&cfg) > EVENTS_MAX {
            continue;
        }
        hostsim_cli::fuzzing::check_run(cfg);
    }
});
