//! `hostsim reproduce`: every built-in experiment with claims, into one directory per experiment
//! and `expectations.json`, recorded as it goes so that an interrupted run resumes.
//!
//! ```text
//! DIR/INCOMPLETE            until expectations.json is written: what runs, how far it got, why it stopped
//! DIR/reproduce.json        the record: per finished experiment, the fingerprint of what it ran
//! DIR/<experiment>/results.csv, scenario.toml, measured data (the report reads these)
//! DIR/<experiment>/rows.json            every run's exact metrics (what --resume reads back)
//! DIR/<experiment>/expectations.json    its claims' verdicts
//! DIR/expectations.json     all verdicts, written last (deterministic: the same for the same model and seeds)
//! DIR/provenance.json       what made them: hostsim's version, the commit of its checkout, the
//!                           model-source id, the command, when and on what machine (not deterministic,
//!                           so kept out of expectations.json; the report shows it at the top)
//! ```
//!
//! `--resume` reuses an experiment whose record's fingerprint matches (a hash of every run's
//! configuration, the claims, the aliases, hostsim's version and the model-source id) and whose
//! rows.json reads back whole; its claims are judged again from those rows, so the verdicts are
//! those of an uninterrupted run. Anything else is run again.

use crate::outputs::{self, Marker};
use crate::{load_experiment, reproducible, sweep, write_atomic_mode, write_file, SeedChoice};
use hostsim_scenario::{ExpectResult, Row, Scenario};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

/// `DIR/reproduce.json`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    version: String,
    model_source_id: String,
    seeds: SeedChoice,
    /// Finished experiments by name.
    done: BTreeMap<String, Done>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Done {
    fingerprint: String,
    runs: usize,
}

/// One row of rows.json: a metric that is not finite is a string (`nan`, `inf`, `-inf`), so
/// that every value reads back exactly.
#[derive(Serialize, Deserialize)]
struct RowJson {
    variant: String,
    point: Vec<(String, toml::Value)>,
    seed: u64,
    metrics: BTreeMap<String, serde_json::Value>,
}

fn row_json(r: &Row) -> RowJson {
    let metrics = r
        .metrics
        .iter()
        .map(|(k, &v)| {
            let j = serde_json::Number::from_f64(v)
                .map_or_else(|| serde_json::Value::String(format!("{v}")), serde_json::Value::Number);
            (k.clone(), j)
        })
        .collect();
    RowJson { variant: r.variant.clone(), point: r.point.clone(), seed: r.seed, metrics }
}

fn row_of(j: RowJson) -> Option<Row> {
    let mut metrics = BTreeMap::new();
    for (k, v) in j.metrics {
        let x = match v {
            serde_json::Value::Number(n) => n.as_f64()?,
            serde_json::Value::String(s) => s.parse::<f64>().ok()?,
            _ => return None,
        };
        metrics.insert(k, x);
    }
    Some(Row { variant: j.variant, point: j.point, seed: j.seed, metrics })
}

/// What an experiment's results depend on: every run's configuration, the claims, the metric
/// aliases, hostsim's version and the model's sources.
fn fingerprint(sc: &Scenario) -> Result<String, String> {
    let mut h = Sha256::new();
    h.update(format!("hostsim {}\nmodel {}\n", env!("CARGO_PKG_VERSION"), hostsim_scenario::MODEL_SOURCE_ID));
    for r in sc.runs().map_err(|e| e.to_string())? {
        h.update(format!("{:?}\n", r.config));
    }
    h.update(format!("{:?}\n{:?}\n", sc.expects, sc.metric_aliases));
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The rows an earlier run wrote for `sc`, if they read back whole.
fn saved_rows(dir: &Path, sc: &Scenario) -> Option<Vec<Row>> {
    let bytes = hostsim_scenario::files::read_bytes(&dir.join("rows.json"), "rows file", 1 << 30).ok()?;
    let rows: Vec<RowJson> = serde_json::from_slice(&bytes).ok()?;
    let rows: Vec<Row> = rows.into_iter().map(row_of).collect::<Option<_>>()?;
    (rows.len() == sc.run_count()).then_some(rows)
}

/// `hostsim reproduce`: sweep every reproducible scenario (see the module documentation).
pub fn reproduce(ids: &[String], jobs: usize, quiet: bool, out: &Path) -> Result<Vec<ExpectResult>, String> {
    reproduce_with(ids, jobs, quiet, out, SeedChoice::default())
}

/// [`reproduce`] with a choice of seeds.
pub fn reproduce_with(
    ids: &[String],
    jobs: usize,
    quiet: bool,
    out: &Path,
    seeds: SeedChoice,
) -> Result<Vec<ExpectResult>, String> {
    reproduce_resumable(ids, jobs, quiet, out, seeds, false)
}

/// [`reproduce_with`], resuming what an interrupted run in `out` finished when `resume`.
pub fn reproduce_resumable(
    ids: &[String],
    jobs: usize,
    quiet: bool,
    out: &Path,
    seeds: SeedChoice,
    resume: bool,
) -> Result<Vec<ExpectResult>, String> {
    let list = reproducible(ids);
    if list.is_empty() {
        return Err(format!("no built-in experiment matches {ids:?} (see `hostsim scenarios`)"));
    }
    let marker = Marker::begin(
        out,
        &format!("hostsim reproduce {}: one directory per experiment, expectations.json last; `hostsim reproduce --resume --out {}` (same IDs) goes on from reproduce.json", ids.join(" "), out.display()),
    )?;
    let res = run_all(&list, jobs, quiet, out, seeds, resume, &marker);
    match res {
        Ok(all) => {
            marker.complete()?;
            Ok(all)
        }
        Err(e) => {
            marker.failed(&e);
            Err(e)
        }
    }
}

fn run_all(
    list: &[(&'static str, &'static str)],
    jobs: usize,
    quiet: bool,
    out: &Path,
    seeds: SeedChoice,
    resume: bool,
    marker: &Marker,
) -> Result<Vec<ExpectResult>, String> {
    outputs::remove_stale(out, &["expectations.json", PROVENANCE])?;
    // What made the results is what ran when they started (the checkout and the machine's load
    // may change meanwhile).
    let (started, commit, machine) =
        (utc_now(), crate::report::checkout_commit(), hostsim_live::harness::machine_facts());
    let mut resumed = Vec::new();
    let record_path = out.join("reproduce.json");
    let fresh = Record {
        version: env!("CARGO_PKG_VERSION").into(),
        model_source_id: hostsim_scenario::MODEL_SOURCE_ID.into(),
        seeds,
        done: BTreeMap::new(),
    };
    let mut record = if resume {
        let old = hostsim_scenario::files::read_bytes(&record_path, "record", 16 << 20)
            .ok()
            .and_then(|b| serde_json::from_slice::<Record>(&b).ok());
        match old {
            Some(r) if r.seeds == seeds => r,
            Some(_) => {
                say!("reproduce: {} was made with other seeds: starting over", record_path.display());
                fresh
            }
            None => {
                say!("reproduce: nothing to resume in {} (no readable reproduce.json): starting over", out.display());
                fresh
            }
        }
    } else {
        fresh
    };
    let save = |r: &Record| write_file(&record_path, &(serde_json::to_string_pretty(r).expect("serialises") + "\n"));
    save(&record)?;
    let mut all = Vec::new();
    for (i, (name, text)) in list.iter().enumerate() {
        let (sc, path) = load_experiment(name, text, seeds)?;
        let fp = fingerprint(&sc)?;
        let dir = out.join(name.rsplit('/').next().unwrap_or(name));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let reuse = resume && record.done.get(*name).is_some_and(|d| d.fingerprint == fp);
        let rows = match reuse.then(|| saved_rows(&dir, &sc)).flatten() {
            Some(rows) => {
                // Said also when piped: what was not run again belongs in any log.
                say!(
                    "[{}/{}] {name}: finished earlier (resumed from {})",
                    i + 1,
                    list.len(),
                    dir.join("rows.json").display()
                );
                resumed.push(name.to_string());
                rows
            }
            None => {
                if !quiet {
                    say!("[{}/{}] {name}", i + 1, list.len());
                }
                record.done.remove(*name);
                sweep(&sc, jobs, quiet)?.rows
            }
        };
        let expectations = sc.evaluate(&rows);
        write_experiment(&dir, &sc, &path, text, &rows, &expectations)?;
        record.done.insert(name.to_string(), Done { fingerprint: fp, runs: rows.len() });
        save(&record)?;
        marker.progress(&format!(
            "{} of {} experiments done (reproduce.json); stopped before the rest, or still running",
            i + 1,
            list.len()
        ))?;
        all.extend(expectations);
    }
    let json = serde_json::to_string_pretty(&all).expect("serialises") + "\n";
    write_file(&out.join("expectations.json"), &json)?;
    let prov = provenance(seeds, started, commit, machine, resumed);
    write_file(&out.join(PROVENANCE), &(serde_json::to_string_pretty(&prov).expect("serialises") + "\n"))?;
    Ok(all)
}

/// `DIR/provenance.json`.
pub const PROVENANCE: &str = "provenance.json";

/// What made a reproduce directory's results, for a reader of its report: which hostsim (version,
/// the commit of the checkout it belongs to when the run started, the model-source id), run how
/// (the command as given), when (UTC) and where (the machine: the facts a live run records, read
/// when the run started, and the OS).
/// Experiments taken over from an interrupted run (`--resume`) are named: their runs are that
/// run's.
fn provenance(
    seeds: SeedChoice,
    started: String,
    commit: Option<String>,
    mut machine: serde_json::Value,
    resumed: Vec<String>,
) -> serde_json::Value {
    let os = std::fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_string()))
        .unwrap_or_default();
    machine["os"] = serde_json::Value::String(os);
    serde_json::json!({
        "hostsim": env!("CARGO_PKG_VERSION"),
        "model_source_id": hostsim_scenario::MODEL_SOURCE_ID,
        "commit": commit,
        "command": std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
        "seeds": seeds,
        "started": started,
        "finished": utc_now(),
        "resumed": resumed,
        "machine": machine,
    })
}

/// Now as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    utc_iso(secs)
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (the proleptic Gregorian calendar,
/// H. Hinnant's `civil_from_days`).
fn utc_iso(secs: u64) -> String {
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// An experiment's directory: results.csv, scenario.toml, its measured data, rows.json,
/// expectations.json (rows.json last: it is what says the experiment is there, with the record).
fn write_experiment(
    dir: &Path,
    sc: &Scenario,
    path: &Path,
    builtin_text: &str,
    rows: &[Row],
    expectations: &[ExpectResult],
) -> Result<(), String> {
    let text = match hostsim_scenario::files::read_bytes(path, "scenario", hostsim_scenario::FILE_BYTES_MAX) {
        Ok(b) => String::from_utf8(b).map_err(|e| format!("{}: {e}", path.display()))?,
        Err(hostsim_scenario::files::ReadError::Missing) => builtin_text.to_string(),
        Err(hostsim_scenario::files::ReadError::Refused(m)) => return Err(format!("{}: {m}", path.display())),
    };
    write_file(&dir.join("results.csv"), &crate::results_csv(sc, rows))?;
    write_file(&dir.join("scenario.toml"), &text)?;
    // Measurements a figure overlays travel with the results (the report reads them there),
    // with the source's permission bits (a root run must not make a 0640 file 0644).
    for f in sc.figures.iter().filter_map(|f| f.measured.as_deref()) {
        let name = Path::new(f).file_name().map(|n| n.to_os_string()).unwrap_or_default();
        match hostsim_scenario::files::read_measured(path, f) {
            Ok(Some((bytes, mode))) => write_atomic_mode(&dir.join(&name), &bytes, mode)
                .map_err(|e| format!("writing {}: {e}", dir.join(&name).display()))?,
            Ok(None) => {
                say!("warning: {}: measured data {f} not found; its figure is drawn without it", path.display())
            }
            Err(e) => return Err(e),
        }
        // A live run's record of its machine (`hostsim live` writes FILE.run.json beside the
        // CSV; the report's summary shows it), read as carefully as the data.
        let record = Path::new(f).with_extension("run.json");
        if let (Some(r), Some(rname)) = (record.to_str(), record.file_name()) {
            if let Some((bytes, mode)) = hostsim_scenario::files::read_measured(path, r)? {
                write_atomic_mode(&dir.join(rname), &bytes, mode)
                    .map_err(|e| format!("writing {}: {e}", dir.join(rname).display()))?;
            }
        }
    }
    write_file(
        &dir.join("expectations.json"),
        &(serde_json::to_string_pretty(expectations).expect("serialises") + "\n"),
    )?;
    let rows: Vec<RowJson> = rows.iter().map(row_json).collect();
    write_file(&dir.join("rows.json"), &(serde_json::to_string(&rows).expect("serialises") + "\n"))
}

#[cfg(test)]
mod tests {
    use super::utc_iso;

    #[test]
    fn utc_dates_as_the_calendar_has_them() {
        assert_eq!(utc_iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_iso(951_782_400), "2000-02-29T00:00:00Z", "a leap day of a century divisible by 400");
        assert_eq!(utc_iso(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(utc_iso(4_107_542_400), "2100-03-01T00:00:00Z", "2100 is not a leap year");
    }
}
