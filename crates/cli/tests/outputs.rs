//! Nothing partial is ever mistaken for a result (issue 25): temporaries are removed on SIGINT,
//! SIGTERM, SIGHUP and SIGQUIT; a run's directory is complete or holds `INCOMPLETE`; an old trace
//! never stands beside a new untraced run; a failed write leaves the directory marked, not a new
//! summary beside an old time series; a sweep keeps the runs that finished when one fails; an
//! interrupted `reproduce` says so, drops the old expectations.json, and `--resume` goes on to
//! the same verdicts as an uninterrupted run. `HOSTSIM_TEST_BIN` runs the binary tests against
//! another build.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn hostsim() -> Command {
    let mut c =
        Command::new(std::env::var_os("HOSTSIM_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_hostsim").into()));
    c.current_dir(repo());
    // The stop signals as a terminal delivers them, whatever this test inherited.
    // SAFETY: signal() between fork and exec.
    unsafe {
        c.pre_exec(|| {
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(s, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    c
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hostsim-outputs-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

fn temporaries(dir: &Path) -> Vec<String> {
    names(dir).into_iter().filter(|n| n.ends_with(".tmp")).collect()
}

/// Wait (≤ 5 min) until `f` holds.
fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(300);
    while !f() {
        assert!(Instant::now() < end, "waited 5 min for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_traced_run_stopped_by_any_stop_signal_leaves_no_temporary() {
    for (sig, name) in
        [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM"), (libc::SIGHUP, "SIGHUP"), (libc::SIGQUIT, "SIGQUIT")]
    {
        let out = tmp(&format!("trace-{sig}"));
        // Half a simulated hour, traced only in its last second: long in wall time, light on disk.
        let child = hostsim()
            .args([
                "run",
                "scenarios/examples/livelock.toml",
                "--variant",
                "legacy",
                "--set",
                "traffic.load.rate_pps=2000",
            ])
            .args(["--set", "duration_ms=1800000", "--trace-from", "1799000", "--out"])
            .arg(&out)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for("the trace's temporary file", || {
            out.is_dir() && temporaries(&out).iter().any(|t| t.starts_with(".trace.perfetto-trace."))
        });
        // SAFETY: our child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let res = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&res.stderr);
        assert_eq!(res.status.code(), Some(128 + sig), "{name}: {err}");
        assert_eq!(temporaries(&out), Vec::<String>::new(), "{name} left temporaries");
        assert!(out.join("INCOMPLETE").exists(), "{name}: the directory is not marked incomplete: {:?}", names(&out));
        assert!(!out.join("summary.json").exists() && !out.join("trace.perfetto-trace").exists());
        let _ = std::fs::remove_dir_all(&out);
    }
}

fn run(out: &Path, extra: &[&str]) -> std::process::Output {
    hostsim()
        .args(["run", "scenarios/examples/livelock.toml", "--set", "duration_ms=6000"])
        .args(extra)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn a_new_run_never_stands_beside_an_old_runs_outputs() {
    let out = tmp("stale");
    assert!(run(&out, &["--trace"]).status.success());
    assert!(out.join("trace.perfetto-trace").exists());
    let r = run(&out, &["--seed", "2"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(names(&out), ["run.json", "summary.json", "timeseries.csv"], "an old trace beside a new untraced run");
    let _ = std::fs::remove_dir_all(&out);
}

/// A write that fails (here: files limited to 16 KiB, as a full disk would refuse the time
/// series after the summary) leaves the directory marked incomplete, with no earlier run's
/// time series beside the new summary.
#[test]
fn a_failed_write_marks_the_run_incomplete() {
    let out = tmp("full");
    assert!(run(&out, &[]).status.success());
    assert!(
        std::fs::metadata(out.join("timeseries.csv")).unwrap().len() > 16384,
        "the time series must exceed the limit"
    );
    let mut cmd = hostsim();
    cmd.args(["run", "scenarios/examples/livelock.toml", "--set", "duration_ms=6000", "--seed", "2", "--out"])
        .arg(&out);
    // SAFETY: async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN); // a too-large write fails (EFBIG) instead
            let lim = libc::rlimit { rlim_cur: 16384, rlim_max: libc::RLIM_INFINITY };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let r = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("writing {}", out.join("timeseries.csv").display())),
        "the error does not name the file: {err}"
    );
    assert!(out.join("INCOMPLETE").exists(), "not marked incomplete: {:?}", names(&out));
    let marker = std::fs::read_to_string(out.join("INCOMPLETE")).unwrap();
    assert!(marker.contains("failed: writing") && marker.contains("timeseries.csv"), "{marker}");
    assert!(!out.join("timeseries.csv").exists(), "the earlier run's time series stands beside the new summary");
    assert_eq!(temporaries(&out), Vec::<String>::new());
    // A complete run afterwards clears the mark.
    assert!(run(&out, &[]).status.success());
    assert!(!out.join("INCOMPLETE").exists());
    let _ = std::fs::remove_dir_all(&out);
}

/// A sweep in which one run fails keeps every run that finished (in results.csv), judges no
/// claim, and stays marked incomplete, naming the failure. (No valid scenario makes a run fail,
/// so the test gives the sweep a run function that fails one run.)
#[test]
fn a_sweep_keeps_the_runs_that_finished_when_one_fails() {
    let out = tmp("sweepfail");
    let sc = hostsim_scenario::load(
        &repo().join("scenarios/examples/livelock.toml"),
        &[("duration_ms".into(), "50".into()), ("warmup_ms".into(), "10".into())],
    )
    .unwrap();
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let bad = hostsim_scenario::parse_value("150000");
    let res = hostsim_cli::sweep_to_dir(&sc, 2, true, &out, |s| {
        calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if s.variant == "napi" && s.point.iter().any(|(_, v)| *v == bad) {
            return Err(format!("run {}: stalled (injected)", hostsim_cli::describe_run(s)));
        }
        hostsim_cli::run_spec(&sc, s)
    });
    let Err(err) = res else { panic!("a sweep with a failed run succeeded") };
    let n = sc.run_count();
    assert_eq!(calls.into_inner(), n, "every run ran");
    assert!(err.contains(&format!("1 of {n} runs failed")) && err.contains("stalled (injected)"), "{err}");
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + n - 1, "results.csv keeps the {} runs that finished", n - 1);
    assert!(!out.join("expectations.json").exists(), "claims judged on part of the runs");
    let marker = std::fs::read_to_string(out.join("INCOMPLETE")).unwrap();
    assert!(marker.contains("stalled (injected)"), "{marker}");
    let _ = std::fs::remove_dir_all(&out);
}

fn reproduce(out: &Path, extra: &[&str]) -> Command {
    let mut c = hostsim();
    c.args(["reproduce", "livelock", "ozaki-pbq-latency", "--seeds", "2", "--jobs", "2", "--no-report"])
        .args(extra)
        .arg("--out")
        .arg(out);
    c
}

/// An interrupted `reproduce` says so (INCOMPLETE, reproduce.json), leaves no expectations.json
/// of an earlier run beside its new results, and `--resume` reuses what it finished and ends with
/// the verdicts of an uninterrupted run.
#[test]
fn an_interrupted_reproduce_says_so_and_resumes_to_the_same_verdicts() {
    let straight = tmp("repro-straight");
    let r = reproduce(&straight, &[]).output().unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let want = std::fs::read_to_string(straight.join("expectations.json")).unwrap();
    // What made them is recorded beside them, not in them (expectations.json is deterministic).
    let prov: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(straight.join("provenance.json")).unwrap()).unwrap();
    for k in ["hostsim", "model_source_id", "commit", "command", "started", "finished", "machine"] {
        assert!(prov.get(k).is_some(), "provenance.json has no `{k}`: {prov}");
    }
    assert_eq!(prov["command"][1], "reproduce", "{prov}");
    assert!(prov["started"].as_str().unwrap().ends_with('Z') && prov["machine"]["cpus"].as_u64().unwrap() >= 1);
    assert_eq!(prov["resumed"], serde_json::json!([]));
    assert!(!want.contains(prov["started"].as_str().unwrap()));

    let out = tmp("repro");
    // An earlier, complete reproduce of the first experiment alone.
    let r =
        hostsim().args(["reproduce", "livelock", "--seeds", "2", "--no-report", "--out"]).arg(&out).output().unwrap();
    assert!(r.status.success());
    assert!(out.join("expectations.json").exists());
    // Interrupted once the first experiment is done.
    let child = reproduce(&out, &[]).stderr(Stdio::piped()).spawn().unwrap();
    wait_for("the first experiment", || {
        std::fs::read_to_string(out.join("INCOMPLETE")).is_ok_and(|t| t.contains("1 of 2 experiments done"))
    });
    // SAFETY: our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let res = child.wait_with_output().unwrap();
    assert_eq!(res.status.code(), Some(130), "{}", String::from_utf8_lossy(&res.stderr));
    assert!(out.join("INCOMPLETE").exists(), "an interrupted reproduce does not say so: {:?}", names(&out));
    assert!(!out.join("expectations.json").exists(), "the earlier expectations.json stands beside new results");
    assert!(!out.join("provenance.json").exists(), "the earlier provenance.json stands beside new results");
    assert_eq!(temporaries(&out), Vec::<String>::new());

    let r = reproduce(&out, &["--resume"]).output().unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert!(err.contains("examples/livelock: finished earlier (resumed"), "the finished experiment ran again: {err}");
    assert!(!out.join("INCOMPLETE").exists());
    let prov: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("provenance.json")).unwrap()).unwrap();
    assert_eq!(prov["resumed"], serde_json::json!(["examples/livelock"]), "the resumed experiment is named");
    assert_eq!(
        std::fs::read_to_string(out.join("expectations.json")).unwrap(),
        want,
        "resumed verdicts differ from an uninterrupted run's"
    );
    for d in ["livelock", "ozaki-pbq-latency"] {
        assert_eq!(
            std::fs::read(out.join(d).join("results.csv")).unwrap(),
            std::fs::read(straight.join(d).join("results.csv")).unwrap(),
            "{d}/results.csv"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&straight);
}

/// `reproduce` and `calibrate` never run `./.venv/bin/python` of the directory the user stands
/// in (under sudo it would run as root): the project's own interpreter, or HOSTSIM_PYTHON.
#[test]
fn no_program_from_the_current_directory_runs() {
    let d = tmp("cwd-python");
    std::fs::create_dir_all(d.join(".venv/bin")).unwrap();
    let fake = d.join(".venv/bin/python");
    let ran = d.join("ran");
    std::fs::write(&fake, format!("#!/bin/sh\ntouch {}\nexit 1\n", ran.display())).unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(&mut std::fs::metadata(&fake).unwrap().permissions(), 0o755);
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let micro = repo().join("scenarios/ozaki-pbq-micro.toml");
    for args in [
        vec![
            "reproduce".to_string(),
            "livelock".into(),
            "--seeds".into(),
            "1".into(),
            "--out".into(),
            d.join("out").display().to_string(),
        ],
        vec![
            "calibrate".into(),
            micro.display().to_string(),
            "--dry-run".into(),
            "--seeds".into(),
            "1".into(),
            "--trials".into(),
            "0".into(),
            "--refine".into(),
            "0".into(),
        ],
    ] {
        let r = hostsim().args(&args).current_dir(&d).env_remove("HOSTSIM_PYTHON").output().unwrap();
        assert!(
            !ran.exists(),
            "hostsim {} ran ./.venv/bin/python of the current directory: {}",
            args[0],
            String::from_utf8_lossy(&r.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `reproduce` copies a figure's measured data with the source's permission bits (a root run
/// copied a 0640 file as 0644), and never through a link that leads out of the scenario's tree.
#[test]
fn measured_data_is_copied_with_its_mode_and_only_from_inside_the_tree() {
    use std::os::unix::fs::PermissionsExt;
    let d = tmp("measured");
    std::fs::create_dir_all(d.join("scenarios/live")).unwrap();
    std::fs::copy(repo().join("scenarios/live-ozaki-pbq.toml"), d.join("scenarios/live-ozaki-pbq.toml")).unwrap();
    // The twin's measured file (its figures' `measured`).
    const MEASURED: &str = "ozaki-pbq-batch32.csv";
    let csv = d.join("scenarios/live").join(MEASURED);
    std::fs::copy(repo().join("scenarios/live").join(MEASURED), &csv).unwrap();
    std::fs::set_permissions(&csv, std::fs::Permissions::from_mode(0o640)).unwrap();
    let repro = |out: &str| {
        hostsim()
            .args(["reproduce", "live-ozaki-pbq", "--seeds", "1", "--jobs", "1", "--no-report", "--out", out])
            .current_dir(&d)
            .output()
            .unwrap()
    };
    let r = repro("out");
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let copied = d.join("out/live-ozaki-pbq").join(MEASURED);
    assert_eq!(std::fs::metadata(&copied).unwrap().permissions().mode() & 0o777, 0o640, "the copy's permission bits");
    // The measured file replaced by a link to a file outside the tree: refused, nothing copied.
    let secret = d.join("secret.csv");
    std::fs::write(&secret, "not for the report\n").unwrap();
    std::fs::remove_file(&csv).unwrap();
    std::os::unix::fs::symlink(&secret, &csv).unwrap();
    let r = repro("out2");
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains("outside the scenario's directory"), "{err}");
    assert!(!d.join("out2/live-ozaki-pbq").join(MEASURED).exists(), "a file from outside the tree was copied");
    let _ = std::fs::remove_dir_all(&d);
}
