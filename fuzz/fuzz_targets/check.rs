//! Parsing and validation: any text (structured mutations of real scenarios, or raw bytes) gets
//! an answer from the loader: accepted, or an error naming the file with a line that exists.
#![no_main]
use arbitrary::Arbitrary;
use hostsim_fuzz::{build, render, show, Input, PATH};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

#[derive(Arbitrary, Debug)]
enum CheckInput {
    Structured(Input),
    Raw(String),
}

fuzz_target!(|input: CheckInput| {
    let text = match &input {
        CheckInput::Structured(i) => match render(&build(i)) {
            Some(t) => t,
            None => return,
        },
        CheckInput::Raw(s) => s.clone(),
    };
    show(&text, &[]);
    hostsim_cli::fuzzing::check_load(Path::new(PATH), &text, &[], 256);
});
