//! Seeds, claim roles and calibration overlays in the scenario format: `seeds` multiplies the
//! runs with consecutive seeds in a fixed order; `[[calibrate]]` parameters take their fitted
//! values from the overlay (`--set` still wins, out-of-bounds values are refused); `hostsim
//! calibrate` runs only what the calibration claims need.

use hostsim_scenario::{load, load_str, Role};
use std::path::{Path, PathBuf};

fn minimal() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/good/minimal.toml")).unwrap()
}

/// A scratch directory with `profiles/` visible from it (the scenario is written inside).
fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hostsim-calib-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("calibration")).unwrap();
    d
}

const CALIBRATED: &str = r#"
[[calibrate]]
name = "work"
key = "process.sink.work_ns"
min = 1000
max = 3000
source = "test bounds"

[[calibrate]]
name = "work"
key = "traffic.load.rate_pps"
min = 1000
max = 3000
offset = 8000
source = "test bounds"
"#;

fn with_calibration(name: &str) -> String {
    minimal().replace("warmup_ms = 10\n", &format!("warmup_ms = 10\ncalibration = \"{name}\"\n")) + CALIBRATED
}

#[test]
fn seeds_multiply_the_runs_in_a_fixed_order() {
    let text = minimal().replace("warmup_ms = 10\n", "warmup_ms = 10\nseed = 7\nseeds = 3\n");
    let sc = load_str(Path::new("tests/good/x.toml"), &text, &[]).unwrap();
    let runs = sc.runs().unwrap();
    assert_eq!(runs.len(), 4 * 3);
    assert_eq!(sc.seed_list(), vec![7, 8, 9]);
    for (i, r) in runs.iter().enumerate() {
        let (v, point, seed) = sc.run_at(i).unwrap();
        assert_eq!((v.unwrap(), &point, seed), (r.variant.as_str(), &r.point, r.seed));
        assert_eq!(r.config.seed, r.seed);
        assert_eq!(r.seed, 7 + (i as u64 % 3), "seeds vary fastest");
    }
    assert!(sc.run_at(12).is_none());
}

#[test]
fn calibration_runs_are_those_the_calibration_claims_name() {
    let text = minimal().replace("warmup_ms = 10\n", "warmup_ms = 10\nseeds = 2\n")
        + "\n[[expect]]\nclaim = \"legacy baseline\"\nrole = \"calibration\"\nmetric = \"delivered_pps\"\nvariant = \"legacy\"\nat = { \"traffic.load.rate_pps\" = 10000 }\nop = \">\"\nvalue = 0\n";
    let sc = load_str(Path::new("tests/good/x.toml"), &text, &[]).unwrap();
    // legacy at 10000, both seeds: runs 0 and 1 (variant-major, points, then seeds).
    assert_eq!(sc.runs_for_role(Role::Calibration), vec![0, 1]);
    assert_eq!(sc.runs_for_role(Role::Prediction).len(), 4, "napi and legacy at 50000, 2 seeds");
}

#[test]
fn the_overlay_supplies_the_fitted_values_and_set_still_wins() {
    let d = scratch("apply");
    let path = d.join("x.toml");
    std::fs::write(&path, with_calibration("t")).unwrap();
    // No overlay yet: the file's own values, reported as not applied.
    let sc = load(&path, &[]).unwrap();
    let cal = sc.calibration.clone().unwrap();
    assert!(cal.overlay.is_none() && cal.applied.is_empty());
    assert_eq!(cal.path, d.join("calibration").join("t.toml"));
    assert_eq!(sc.base_config().processes[0].work_ns, 2000);

    std::fs::write(d.join("calibration/t.toml"), "[values]\nwork = 1200\n[fit]\nobjective = 0.5\n").unwrap();
    let sc = load(&path, &[]).unwrap();
    assert_eq!(sc.calibration.as_ref().unwrap().applied, vec!["work".to_string()]);
    assert_eq!(sc.base_config().processes[0].work_ns, 1200);
    assert_eq!(sc.base_config().traffic[0].rate_pps, 9200.0, "same parameter, with its offset");
    for r in sc.runs().unwrap() {
        assert_eq!(r.config.processes[0].work_ns, 1200, "every run uses the fitted value");
    }
    let sc = load(&path, &[("process.sink.work_ns".into(), "2500".into())]).unwrap();
    assert_eq!(sc.base_config().processes[0].work_ns, 2500, "--set wins over the overlay");

    std::fs::write(d.join("calibration/t.toml"), "[values]\nwork = 9000\n").unwrap();
    let e = load(&path, &[]).unwrap_err();
    assert!(e.message.contains("outside min..=max"), "{e}");
    assert!(e.key.contains("calibrate.work"), "{e}");
    std::fs::write(d.join("calibration/t.toml"), "[values]\nwork = \"fast\"\n").unwrap();
    assert!(load(&path, &[]).unwrap_err().message.contains("expected a number"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_overlay_without_a_declared_parameter_is_reported_stale() {
    let d = scratch("stale");
    let path = d.join("x.toml");
    std::fs::write(&path, with_calibration("t")).unwrap();
    // No overlay: not stale (the report says "not calibrated").
    assert_eq!(load(&path, &[]).unwrap().stale_calibration(), None);
    // An overlay fitted before `work` was declared (it holds another name only).
    std::fs::write(d.join("calibration/t.toml"), "[values]\nold_name = 5\n").unwrap();
    let sc = load(&path, &[]).unwrap();
    assert_eq!(sc.base_config().processes[0].work_ns, 2000, "the file's own value stands");
    let w = sc.stale_calibration().expect("a stale overlay is reported");
    assert!(w.contains("has no value for work ") && w.contains("hostsim calibrate"), "{w}");
    // Once the overlay holds it: not stale.
    std::fs::write(d.join("calibration/t.toml"), "[values]\nwork = 1200\nold_name = 5\n").unwrap();
    assert_eq!(load(&path, &[]).unwrap().stale_calibration(), None);
    let _ = std::fs::remove_dir_all(&d);
}
