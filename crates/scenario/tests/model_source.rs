//! The model-source id covers every crate that decides results (issue 39): each member of the
//! workspace is hashed into `MODEL_SOURCE_ID` or listed with the reason its sources decide no
//! result, so a new crate (or one a change makes decide results) cannot escape restamping and the
//! identity checks.

use hostsim_scenario::{MODEL_SOURCE_CRATES, NOT_MODEL_SOURCE_CRATES};
use std::path::Path;

/// The workspace's members (`crates/<name>`), from the root `Cargo.toml`.
fn members() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("Cargo.toml")).expect("read the workspace's Cargo.toml");
    let doc: toml::Table = text.parse().expect("the workspace's Cargo.toml is TOML");
    let members = doc["workspace"]["members"].as_array().expect("workspace.members");
    members
        .iter()
        .map(|m| {
            let m = m.as_str().expect("a member path");
            m.strip_prefix("crates/").unwrap_or_else(|| panic!("member {m} is not under crates/")).to_string()
        })
        .collect()
}

#[test]
fn every_workspace_crate_is_in_the_model_source_id_or_says_why_not() {
    let members = members();
    assert!(members.len() >= 8, "expected the workspace's crates, found {members:?}");
    for m in &members {
        let hashed = MODEL_SOURCE_CRATES.contains(&m.as_str());
        let other = NOT_MODEL_SOURCE_CRATES.iter().find(|(n, _)| n == m);
        assert!(
            hashed != other.is_some(),
            "crate `{m}` must be in exactly one of crates/scenario/build.rs's lists: MODEL_CRATES (its sources \
             decide results and are hashed into MODEL_SOURCE_ID) or OTHER_CRATES (with the reason they do not)"
        );
        if let Some((_, why)) = other {
            assert!(!why.trim().is_empty(), "crate `{m}`: say why its sources decide no result");
        }
    }
    for c in MODEL_SOURCE_CRATES.iter().chain(NOT_MODEL_SOURCE_CRATES.iter().map(|(n, _)| n)) {
        assert!(
            members.iter().any(|m| m == c),
            "crates/scenario/build.rs lists `{c}`, which is not a workspace member"
        );
    }
}

#[test]
fn the_sending_tcp_is_hashed() {
    // The crate issue 39 found missing: a change to the one TCP must change the id.
    assert!(MODEL_SOURCE_CRATES.contains(&"tcp"));
}
