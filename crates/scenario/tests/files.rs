//! A path means that file (issue 25): every file hostsim reads (scenario, profile, calibration
//! overlay, a figure's measured data) is a regular file read with a size limit, or an error
//! naming the path and the reason; nothing at a path is ever replaced by a built-in of the
//! same name, waited on (a FIFO), or read without end (`/dev/zero`). Names meant as names
//! (`calibration`, `measured`) stay inside the scenario's tree; an overlay's numbers are checked
//! (finite, within `[[calibrate]]`'s bounds).

use hostsim_scenario::{files, load, ScenarioError};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

fn minimal() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/good/minimal.toml")).unwrap()
}

/// A scratch directory with `calibration/` inside; the scenario is written at its top.
fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hostsim-files-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("calibration")).unwrap();
    d
}

/// `load`, in a thread, with a deadline: a load that blocks (on a FIFO) fails the test.
fn load_within(path: &Path) -> Result<hostsim_scenario::Scenario, ScenarioError> {
    let (tx, rx) = mpsc::channel();
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(load(&p, &[]));
    });
    rx.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("loading {} hung", path.display()))
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
}

/// The scenario, its profile, and (by name) the built-in overlay `ozaki-pbq`: a user's file of
/// that name that cannot be read must be an error naming it, never the built-in instead.
fn with_overlay(d: &Path) -> PathBuf {
    let p = d.join("x.toml");
    std::fs::write(&p, minimal().replace("warmup_ms = 10\n", "warmup_ms = 10\ncalibration = \"ozaki-pbq\"\n")).unwrap();
    p
}

#[test]
fn an_overlay_that_cannot_be_read_is_an_error_naming_it() {
    let d = scratch("overlay");
    let path = with_overlay(&d);
    let ov = d.join("calibration/ozaki-pbq.toml");
    // Nothing there: the built-in overlay of that name.
    let sc = load_within(&path).unwrap();
    assert!(sc.calibration.unwrap().overlay.unwrap().path.starts_with("<built-in>"));
    type Make<'a> = Box<dyn Fn() + 'a>;
    let cases: Vec<(&str, Make, &str)> = vec![
        ("Latin-1", Box::new(|| std::fs::write(&ov, b"[values]\n# caf\xe9\nx = 1\n").unwrap()), "not UTF-8"),
        ("directory", Box::new(|| std::fs::create_dir(&ov).unwrap()), "it is a directory"),
        (
            "dangling link",
            Box::new(|| std::os::unix::fs::symlink(d.join("nowhere.toml"), &ov).unwrap()),
            "does not exist",
        ),
        ("link to /dev/zero", Box::new(|| std::os::unix::fs::symlink("/dev/zero", &ov).unwrap()), "a character device"),
        ("FIFO", Box::new(|| mkfifo(&ov)), "a FIFO"),
    ];
    for (what, make, want) in cases {
        make();
        let e = load_within(&path).expect_err(what);
        let shown = e.to_string();
        assert!(shown.starts_with(&path.display().to_string()), "{what}: {shown}");
        assert!(e.message.contains(&ov.display().to_string()) && e.message.contains(want), "{what}: {shown}");
        assert_eq!((e.key.as_str(), e.line), ("calibration", Some(6)), "{what}: {shown}");
        let _ = std::fs::remove_file(&ov).or_else(|_| std::fs::remove_dir(&ov));
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_fifo_or_device_as_scenario_or_profile_is_refused_at_once() {
    let d = scratch("fifo");
    let fifo = d.join("s.toml");
    mkfifo(&fifo);
    let e = load_within(&fifo).unwrap_err();
    assert!(e.message.contains("a FIFO (named pipe), not a regular file"), "{e}");
    std::fs::create_dir_all(d.join("profiles")).unwrap();
    mkfifo(&d.join("profiles/pfifo.toml"));
    std::os::unix::fs::symlink("/dev/zero", d.join("profiles/pzero.toml")).unwrap();
    for (name, want) in [("pfifo", "a FIFO"), ("pzero", "a character device")] {
        let p = d.join(format!("{name}.toml"));
        std::fs::write(&p, minimal().replace("\"pentium3-800\"", &format!("\"{name}\""))).unwrap();
        let e = load_within(&p).unwrap_err();
        assert!(
            e.message.contains(&d.join(format!("profiles/{name}.toml")).display().to_string())
                && e.message.contains(want),
            "{e}"
        );
        assert_eq!(e.key, "profile", "{e}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

const CALIBRATED: &str = "\n[[calibrate]]\nname = \"work\"\nkey = \"process.sink.work_ns\"\nmin = 1000\nmax = 3000\nsource = \"test bounds\"\n";

#[test]
fn an_overlay_value_must_be_finite_and_within_the_bounds() {
    let d = scratch("nan");
    let path = d.join("x.toml");
    std::fs::write(&path, minimal().replace("warmup_ms = 10\n", "warmup_ms = 10\ncalibration = \"t\"\n") + CALIBRATED)
        .unwrap();
    for v in ["nan", "+nan", "inf", "-inf"] {
        std::fs::write(d.join("calibration/t.toml"), format!("[values]\nwork = {v}\n")).unwrap();
        let e = load(&path, &[]).expect_err(v);
        assert!(e.message.contains("expected a finite number"), "{v}: {e}");
    }
    std::fs::write(d.join("calibration/t.toml"), "[values]\nwork = 1500.0\n").unwrap();
    assert_eq!(load(&path, &[]).unwrap().base_config().processes[0].work_ns, 1500);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn calibration_and_measured_are_names_inside_the_scenarios_tree() {
    let d = scratch("names");
    let path = d.join("x.toml");
    let outside = std::env::temp_dir().join(format!("hostsim-files-outside-{}.toml", std::process::id()));
    std::fs::write(&outside, "[values]\nwork = 1200\n").unwrap();
    let stem = outside.with_extension("");
    for name in [stem.display().to_string(), "../x".into(), "sub/t".into(), "".into(), ".hidden".into()] {
        std::fs::write(
            &path,
            minimal().replace("warmup_ms = 10\n", &format!("warmup_ms = 10\ncalibration = {name:?}\n")) + CALIBRATED,
        )
        .unwrap();
        let e = load(&path, &[]).expect_err(&name);
        assert_eq!((e.key.as_str(), e.line), ("calibration", Some(6)), "{name}: {e}");
        assert!(e.message.contains("expected the name of an overlay"), "{name}: {e}");
    }
    let fig = |m: &str| {
        format!("\n[[figure]]\ntitle = \"f\"\nx = \"traffic.load.rate_pps\"\ny = \"delivered_pps\"\nmeasured = {m:?}\n")
    };
    for m in ["/etc/hostname", "../../etc/hostname", "live/../../x.csv", ""] {
        std::fs::write(&path, minimal() + &fig(m)).unwrap();
        let e = load(&path, &[]).expect_err(m);
        assert_eq!(e.key, "figure[0].measured", "{m}: {e}");
        assert_eq!(e.line, Some(minimal().lines().count() + 6), "{m}: {e}");
    }
    // A link inside the tree that leads out of it is refused when the file is read.
    std::os::unix::fs::symlink(&outside, d.join("m.csv")).unwrap();
    std::fs::write(&path, minimal() + &fig("m.csv")).unwrap();
    load(&path, &[]).unwrap();
    let e = files::read_measured(&path, "m.csv").unwrap_err();
    assert!(e.contains("outside the scenario's directory"), "{e}");
    // A file inside: read, with its permission bits.
    std::fs::create_dir_all(d.join("live")).unwrap();
    std::fs::write(d.join("live/m.csv"), "variant,x\n").unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(
        &mut std::fs::metadata(d.join("live/m.csv")).unwrap().permissions(),
        0o640,
    );
    std::fs::set_permissions(d.join("live/m.csv"), std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
    assert_eq!(files::read_measured(&path, "live/m.csv").unwrap(), Some((b"variant,x\n".to_vec(), 0o640)));
    assert_eq!(files::read_measured(&path, "live/none.csv").unwrap(), None);
    let _ = std::fs::remove_file(&outside);
    let _ = std::fs::remove_dir_all(&d);
}

/// `hostsim calibrate` writes the overlay where the scenario finds it: in its project's
/// `calibration/` (the directory holding its `scenarios/`), else beside it.
#[test]
fn the_overlay_of_a_project_scenario_is_the_projects() {
    let d = scratch("project");
    std::fs::create_dir_all(d.join("scenarios/sub")).unwrap();
    let path = d.join("scenarios/sub/x.toml");
    std::fs::write(&path, minimal().replace("warmup_ms = 10\n", "warmup_ms = 10\ncalibration = \"t\"\n") + CALIBRATED)
        .unwrap();
    assert_eq!(load(&path, &[]).unwrap().calibration.unwrap().path, d.join("calibration/t.toml"));
    std::fs::write(d.join("calibration/t.toml"), "[values]\nwork = 1300\n").unwrap();
    assert_eq!(load(&path, &[]).unwrap().base_config().processes[0].work_ns, 1300);
    // An overlay above the project is not looked at.
    let _ = std::fs::remove_dir_all(&d);
}
