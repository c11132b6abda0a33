//! `--set` expressions: known keys with values at and past their bounds, arbitrary keys and
//! arbitrary text, applied to real scenarios, always get an answer from the loader.
#![no_main]
use hostsim_fuzz::{build_sets, show, SetInput, PATH};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|input: SetInput| {
    let (text, sets) = build_sets(&input);
    show(&text, &sets);
    hostsim_cli::fuzzing::check_load(Path::new(PATH), &text, &sets, 256);
});
