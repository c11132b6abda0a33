//! Tests that prove the model: one binary, one file per area. None depends on wall-clock speed.
//! Every assertion that involves a run prints the seed that reproduces it.

mod accelerator;
mod concurrency;
mod conservation;
mod determinism;
mod flow_limit;
mod goda;
mod ixgbe32;
mod livelock;
mod pbq;
mod profiles;
mod queueing;
mod rfs;
mod scheduler;
mod seeds;
mod speed;
mod tcp_senders;
mod transmit;

use hostsim_host::Summary;
use hostsim_scenario::Scenario;
use std::path::{Path, PathBuf};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sets(s: &[(&str, &str)]) -> Vec<(String, String)> {
    s.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// Load a scenario file of the repository (path relative to the repo root).
pub fn load(rel: &str, overrides: &[(&str, &str)]) -> Scenario {
    let p = repo().join(rel);
    hostsim_scenario::load(&p, &sets(overrides)).unwrap_or_else(|e| panic!("{e}"))
}

/// Load scenario text as if it were `scenarios/tests/<name>.toml` (so profiles resolve).
pub fn load_text(name: &str, text: &str, overrides: &[(&str, &str)]) -> Scenario {
    let p = repo().join("scenarios/tests").join(format!("{name}.toml"));
    hostsim_scenario::load_str(&p, text, &sets(overrides)).unwrap_or_else(|e| panic!("{e}"))
}

/// Run the scenario's base configuration.
pub fn run(sc: &Scenario) -> Summary {
    hostsim_host::run(sc.base_config().clone()).summary
}

pub fn process<'a>(s: &'a Summary, name: &str) -> &'a hostsim_host::ProcessSummary {
    s.processes.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("no process {name}"))
}
