//! Library side of the `hostsim` command: the claims table, reproducing the papers' experiments,
//! the seed check, benchmarks, fuzzing and the live experiments; running scenarios and sweeps is
//! the runner crate's (`hostsim-run`). The binary (`main.rs`) only parses arguments; tests call
//! these functions directly.

use hostsim_scenario::{ExpectResult, Role, Scenario, Verdict};
use std::fmt::Write as _;
use std::path::Path;

/// `eprintln!` that cannot panic (the runner crate's, which its signal clean-up uses too): in
/// scope in every module of this crate, and exported for the binary.
#[macro_use]
extern crate hostsim_run;
pub use hostsim_run::say;

/// Running, sweeping, the conservation checks and writing outputs are the runner crate's
/// (`hostsim-run`, shared with the Python package); re-exported here for the command and its tests.
pub use hostsim_run::{
    conservation, describe_run, outputs, peak_rss_bytes, pool, prepare_out, reset_peak_rss, results_csv, run_checked,
    run_checked_with, run_spec, run_timed, run_timed_traced, run_timed_with, run_traced_json, summary_json, sweep,
    sweep_keep, sweep_keep_with, sweep_to_dir, trace_out, write_atomic, write_atomic_mode, write_file, write_run,
    Marker, RunInfo, SweepOutcome, SweepResult, TraceFormat, RUN_OUTPUTS,
};

/// `println!` that cannot panic (`hostsim check … | head -1` closes the pipe early).
#[macro_export]
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

/// `print!` that cannot panic.
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($t)*);
    }};
}

/// Make sure descriptors 0, 1 and 2 are open (on /dev/null if they were closed): a file opened
/// later must never land on descriptor 2 and receive the progress lines.
pub fn ensure_stdio() {
    for fd in 0..=2 {
        // SAFETY: fcntl(F_GETFD) only queries; open returns the lowest free descriptor, which
        // is `fd` when it was closed.
        unsafe {
            if libc::fcntl(fd, libc::F_GETFD) == -1 {
                libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            }
        }
    }
}

pub mod bench;
pub mod fuzzing;
pub mod live;
pub mod report;
mod reproduce;

/// A number for the claims table: 4 significant digits, thousands without decimals.
fn num(v: f64) -> String {
    if !v.is_finite() {
        format!("{v}")
    } else if v.abs() >= 1e4 {
        format!("{v:.0}")
    } else {
        let digits = (3 - v.abs().max(1e-12).log10().floor() as i32).clamp(0, 8) as usize;
        format!("{v:.digits$}")
    }
}

/// `mean [lo, hi]` of a side of a claim.
fn with_ci(v: Option<f64>, ci: Option<[f64; 2]>, seeds: usize) -> String {
    match (v, ci) {
        (Some(v), Some([lo, hi])) if seeds > 1 => format!("{} [{}, {}]", num(v), num(lo), num(hi)),
        (Some(v), _) => num(v),
        (None, _) => "-".to_string(),
    }
}

/// A plain-text table of claims for the terminal: calibration claims first, then predictions;
/// each with its verdict, the simulated mean and the target with 95% intervals over the seeds,
/// and the fraction of seeds on which it holds.
pub fn claims_table(results: &[ExpectResult]) -> String {
    let mut s = String::new();
    for role in [Role::Calibration, Role::Prediction] {
        let rs: Vec<&ExpectResult> = results.iter().filter(|r| r.role == role).collect();
        if rs.is_empty() {
            continue;
        }
        let _ = writeln!(s, "== {} claims ==", if role == Role::Calibration { "calibration" } else { "prediction" });
        for r in rs {
            let verdict = match r.verdict {
                Verdict::Pass => "PASS",
                Verdict::Fail => "FAIL",
                Verdict::Inconclusive => "INCONCLUSIVE",
                Verdict::NotApplicable => "N/A",
            };
            let _ = writeln!(s, "{verdict}  {}: {}  [{}]", r.scenario, r.claim, r.paper);
            let op = match r.op {
                hostsim_scenario::Op::Lt => "<".to_string(),
                hostsim_scenario::Op::Le => "<=".to_string(),
                hostsim_scenario::Op::Gt => ">".to_string(),
                hostsim_scenario::Op::Ge => ">=".to_string(),
                hostsim_scenario::Op::Approx | hostsim_scenario::Op::Outside => {
                    let sign = if r.op == hostsim_scenario::Op::Approx { "~" } else { "outside" };
                    let t = r.tolerance.unwrap_or(0.05);
                    // An absolute tolerance is judged on `sim - target`, a relative one on the ratio.
                    if r.judged == "sim - target" {
                        format!("{sign}(±{t})")
                    } else {
                        format!("{sign}(±{}%)", t * 100.0)
                    }
                }
            };
            let _ =
                write!(s, "      sim {} {op} {}", with_ci(r.sim, r.sim_ci, r.seeds), with_ci(r.rhs, r.rhs_ci, r.seeds));
            if r.seeds > 1 {
                if r.paired {
                    let _ = write!(s, "; paired {} = {}", r.judged, with_ci(r.judged_mean, r.judged_ci, r.seeds));
                }
                if let Some(h) = r.held {
                    let _ = write!(s, "; holds on {:.0}% of {} seeds", h * 100.0, r.seeds);
                }
            }
            if let Some(e) = &r.error {
                let _ = write!(s, "  ({e})");
            }
            s.push('\n');
            if !r.finding.is_empty() && r.verdict != Verdict::Pass {
                let _ = writeln!(s, "      finding: {}", r.finding);
            }
        }
    }
    s
}

/// `N pass, M fail, …` over a set of verdicts.
pub fn tally(results: &[ExpectResult]) -> String {
    let count = |v: Verdict| results.iter().filter(|r| r.verdict == v).count();
    let mut s = format!("{} pass, {} fail", count(Verdict::Pass), count(Verdict::Fail));
    for (v, name) in [(Verdict::Inconclusive, "inconclusive"), (Verdict::NotApplicable, "not applicable")] {
        if count(v) > 0 {
            let _ = write!(s, ", {} {name}", count(v));
        }
    }
    s
}

/// The built-in scenarios `reproduce` runs: those with `[[expect]]` claims, except benchmarks,
/// filtered by `ids` (prefix of the scenario name, e.g. `ozaki-pbq`, or its full name).
pub fn reproducible(ids: &[String]) -> Vec<(&'static str, &'static str)> {
    hostsim_scenario::builtin_scenarios()
        .iter()
        .filter(|(name, text)| !name.starts_with("bench/") && text.contains("[[expect]]"))
        .filter(|(name, _)| {
            let short = name.rsplit('/').next().unwrap_or(name);
            ids.is_empty() || ids.iter().any(|id| short.starts_with(id.as_str()) || *name == id.as_str())
        })
        .copied()
        .collect()
}

/// Which seeds `reproduce` runs: each scenario's own (`seed`, `seeds`), or overridden.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SeedChoice {
    /// Seeds per point × variant instead of the scenario's `seeds`.
    pub seeds: Option<u32>,
    /// Shift every scenario's first seed by this much (a disjoint seed set for a large enough
    /// shift; see [`seed_check`]).
    pub shift: u64,
}

/// Load a built-in experiment: the file on disk wins (so edits take effect without a rebuild),
/// else the built-in copy; with the seed choice applied.
pub(crate) fn load_experiment(
    name: &str,
    text: &str,
    seeds: SeedChoice,
) -> Result<(Scenario, std::path::PathBuf), String> {
    let path = Path::new("scenarios").join(format!("{name}.toml"));
    let plain =
        if path.exists() { hostsim_scenario::load(&path, &[]) } else { hostsim_scenario::load_str(&path, text, &[]) }
            .map_err(|e| e.to_string())?;
    if let Some(w) = plain.stale_calibration() {
        say!("warning: {w}");
    }
    plain.check_metrics().map_err(|e| e.to_string())?;
    let mut sets = Vec::new();
    if let Some(n) = seeds.seeds {
        sets.push(("seeds".to_string(), n.to_string()));
    }
    if seeds.shift > 0 {
        let base = plain.seed_list().first().copied().unwrap_or(1);
        sets.push(("seed".to_string(), (base + seeds.shift).to_string()));
    }
    if sets.is_empty() {
        return Ok((plain, path));
    }
    let sc = if path.exists() {
        hostsim_scenario::load(&path, &sets)
    } else {
        hostsim_scenario::load_str(&path, text, &sets)
    }
    .map_err(|e| e.to_string())?;
    Ok((sc, path))
}

pub use reproduce::{reproduce, reproduce_resumable, reproduce_with};

/// One claim's verdicts on two disjoint seed sets.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SeedCheck {
    pub scenario: String,
    pub claim: String,
    pub seeds_a: Vec<u64>,
    pub seeds_b: Vec<u64>,
    pub a: ExpectResult,
    pub b: ExpectResult,
    pub same: bool,
}

/// The acceptance check of claims judged over seeds: run every reproducible scenario (matching
/// `ids`) on its own seeds (set A: `seed` .. `seed + seeds - 1`) and on the next, disjoint block
/// (set B: `seed + seeds` ..), and compare every claim's verdict. Writes `out/a`, `out/b` (as
/// `reproduce` does) and `out/seedcheck.json`.
pub fn seed_check(
    ids: &[String],
    jobs: usize,
    quiet: bool,
    out: &Path,
    seeds: Option<u32>,
) -> Result<Vec<SeedCheck>, String> {
    let list = reproducible(ids);
    if list.is_empty() {
        return Err(format!("no built-in experiment matches {ids:?} (see `hostsim scenarios`)"));
    }
    let mut checks = Vec::new();
    for (name, text) in &list {
        let (sc, _) = load_experiment(name, text, SeedChoice { seeds, shift: 0 })?;
        let n = u64::from(sc.seeds);
        let (sb, _) = load_experiment(name, text, SeedChoice { seeds, shift: n })?;
        if !quiet {
            say!("{name}: seeds {:?} vs {:?}", sc.seed_list(), sb.seed_list());
        }
        checks.extend(seed_check_pair(&sc, &sb, jobs, quiet, Some(out))?);
    }
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let json = serde_json::to_string_pretty(&checks).expect("serialises") + "\n";
    write_file(&out.join("seedcheck.json"), &json)?;
    Ok(checks)
}

/// Sweep one scenario loaded with two seed sets (`a` and `b`, which must not share a seed) and
/// pair their claims' verdicts; with `out`, write each sweep's results.csv to `out/{a,b}/NAME/`.
pub fn seed_check_pair(
    a: &Scenario,
    b: &Scenario,
    jobs: usize,
    quiet: bool,
    out: Option<&Path>,
) -> Result<Vec<SeedCheck>, String> {
    let (la, lb) = (a.seed_list(), b.seed_list());
    if la.iter().any(|s| lb.contains(s)) {
        return Err(format!("{}: the seed sets {la:?} and {lb:?} overlap", a.name));
    }
    let ra = sweep(a, jobs, quiet)?;
    let rb = sweep(b, jobs, quiet)?;
    if let Some(out) = out {
        for (d, r) in [("a", &ra), ("b", &rb)] {
            let dir = out.join(d).join(&a.name);
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            write_file(&dir.join("results.csv"), &r.csv)?;
        }
    }
    Ok(ra
        .expectations
        .into_iter()
        .zip(rb.expectations)
        .map(|(x, y)| SeedCheck {
            scenario: x.scenario.clone(),
            claim: x.claim.clone(),
            seeds_a: la.clone(),
            seeds_b: lb.clone(),
            same: x.verdict == y.verdict,
            a: x,
            b: y,
        })
        .collect())
}

/// The seed check as a table: one line per claim with both verdicts.
pub fn seed_check_table(checks: &[SeedCheck]) -> String {
    let mut s = String::new();
    for c in checks {
        let mark = if c.same { "same" } else { "DIFFERENT" };
        let _ = writeln!(
            s,
            "{mark:9}  {:12} {:12}  {}: {}",
            c.a.verdict.as_str(),
            c.b.verdict.as_str(),
            c.scenario,
            c.claim
        );
    }
    s
}
