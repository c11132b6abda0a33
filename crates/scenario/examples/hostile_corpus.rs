//! Writes the generated part of the hostile corpus (`tests/hostile/range-*.toml`): for every row
//! of the bounds tables (`src/bounds.rs`), `tests/good/minimal.toml` with that key set just past
//! each end of its range (or its array one element too long, or a number that is not finite),
//! with a header saying which line, key and allowed values the error must name. The other files
//! in `tests/hostile/` are written by hand, one per hole class. Run it after changing a bound:
//!
//! ```sh
//! cargo run -p hostsim-scenario --example hostile_corpus
//! ```

use hostsim_scenario::bounds::{describe, fmt_float, fmt_int, scenario, Range, PROFILE};
use std::fmt::Write as _;
use std::path::Path;

const MINIMAL: &str = include_str!("../tests/good/minimal.toml");

/// One generated case: file stem, what it tries, the text, and the expected line, key, message.
struct Case {
    stem: String,
    what: String,
    text: String,
    line: usize,
    key: String,
    message: String,
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.starts_with(needle)).unwrap_or_else(|| panic!("no line starting {needle:?}")) + 1
}

/// Set `key = value` in the table whose header line is `header` ("" = top level): replace the
/// key's line if the table has one, else insert a line right after the header (or at the top).
fn set_in(text: &str, header: &str, key: &str, value: &str) -> (String, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let start = if header.is_empty() { 0 } else { line_of(text, header) };
    let end = lines.iter().enumerate().skip(start).find(|(_, l)| l.starts_with('[')).map_or(lines.len(), |(i, _)| i);
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let new = format!("{key} = {value}");
    let at = match (start..end).find(|&i| lines[i].split('=').next().is_some_and(|k| k.trim() == key)) {
        Some(i) => {
            out[i] = new;
            i
        }
        None => {
            // At the top level, after the leading comment and `description`.
            let i = if header.is_empty() { 2 } else { start };
            out.insert(i, new);
            i
        }
    };
    (out.join("\n") + "\n", at + 1)
}

/// A value's TOML text (floats keep a decimal point or an exponent).
fn int(v: i64) -> String {
    v.to_string()
}

fn cases_for_key(pattern: &str, range: Range, why: &str) -> Vec<Case> {
    let segs: Vec<&str> = pattern.split('.').collect();
    // Where the key lives in minimal.toml and how it is written.
    type Shape = Box<dyn Fn(&str) -> String>;
    let plain: Shape = Box::new(|v| v.to_string());
    let list: Shape = Box::new(|v| format!("[{v}]"));
    let (header, key, shown, shape): (&str, &str, String, Shape) = match segs.as_slice() {
        [k] => ("", *k, k.to_string(), plain),
        ["kernel", k] => ("[kernel]", *k, format!("kernel.{k}"), plain),
        ["kernel", k, "*"] => ("[kernel]", *k, format!("kernel.{k}[0]"), list),
        ["nic", "*", k] => ("[[nic]]", *k, format!("nic[0].{k}"), plain),
        ["nic", "*", k, "*"] => ("[[nic]]", *k, format!("nic[0].{k}[0]"), list),
        ["process", "*", "renice", "*", "at_ms"] => (
            "[[process]]",
            "renice",
            "process[0].renice[0].at_ms".into(),
            Box::new(|v| format!("[{{ at_ms = {v}, nice = 0 }}]")),
        ),
        ["process", "*", "renice", "*", "nice"] => (
            "[[process]]",
            "renice",
            "process[0].renice[0].nice".into(),
            Box::new(|v| format!("[{{ at_ms = 1, nice = {v} }}]")),
        ),
        ["process", "*", "thread", "*", "cpus", "*"] => (
            "[[process]]",
            "thread",
            "process[0].thread[0].cpus[0]".into(),
            Box::new(|v| format!("[{{ name = \"t\", program = \"io\", cpus = [{v}] }}]")),
        ),
        ["process", "*", "accelerator", k] => {
            let k = k.to_string();
            (
                "[[process]]",
                "accelerator",
                format!("process[0].accelerator.{k}"),
                Box::new(move |v| format!("{{ {k} = {v} }}")),
            )
        }
        ["traffic", "*", "http", k] => {
            let k = k.to_string();
            ("[[traffic]]", "http", format!("traffic[0].http.{k}"), Box::new(move |v| format!("{{ {k} = {v} }}")))
        }
        ["process", "*", k] => ("[[process]]", *k, format!("process[0].{k}"), plain),
        ["process", "*", k, "*"] => ("[[process]]", *k, format!("process[0].{k}[0]"), list),
        ["traffic", "*", k] => ("[[traffic]]", *k, format!("traffic[0].{k}"), plain),
        ["expect", "*", k] => ("[[expect]]", *k, format!("expect[0].{k}"), plain),
        _ => return Vec::new(),
    };
    let stem = pattern.replace(".*", "").replace('.', "-");
    let mut out = Vec::new();
    let mut push = |suffix: &str, what: String, value: String, got: String| {
        let (text, line) = set_in(MINIMAL, header, key, &shape(&value));
        out.push(Case {
            stem: format!("range-{stem}-{suffix}"),
            what,
            text,
            line,
            key: shown.clone(),
            message: format!("expected {}, got {got}", describe(&range, why)),
        });
    };
    match range {
        Range::Int(min, max) => {
            if max < i64::MAX {
                push(
                    "above",
                    format!("{pattern} one past its largest allowed value, {}", fmt_int(max)),
                    int(max + 1),
                    int(max + 1),
                );
            }
            if min > i64::MIN {
                push(
                    "below",
                    format!("{pattern} one below its smallest allowed value, {}", fmt_int(min)),
                    int(min - 1),
                    int(min - 1),
                );
            }
        }
        Range::Float(min, max) => {
            push(
                "above",
                format!("{pattern} ten times its largest allowed value"),
                format!("{:e}", max * 10.0),
                fmt_float(max * 10.0),
            );
            push("nan", format!("{pattern} not a number"), "nan".into(), "nan".into());
            let _ = min;
        }
        Range::Finite => push("inf", format!("{pattern} infinite"), "inf".into(), "inf".into()),
        Range::Len(_) => {}
    }
    out
}

/// A [[figure]] or [[calibrate]] entry appended, or an array one element too long.
fn special_cases() -> Vec<Case> {
    let mut out = Vec::new();
    let row = |p: &str| scenario().iter().find(|r| r.0 == p).copied().unwrap_or_else(|| panic!("no row {p}"));
    // Arrays one element too long.
    for (pattern, header, key, elem) in [
        ("kernel.rps_cpus", "[kernel]", "rps_cpus", "0"),
        ("nic.*.irq_cpus", "[[nic]]", "irq_cpus", "0"),
        ("process.*.cpus", "[[process]]", "cpus", "0"),
        ("process.*.renice", "[[process]]", "renice", "{ at_ms = 1, nice = 0 }"),
    ] {
        let (_, range, why) = row(pattern);
        let Range::Len(max) = range else { panic!("{pattern} is not a length") };
        let value = format!("[{}]", vec![elem; max + 1].join(", "));
        let (text, line) = set_in(MINIMAL, header, key, &value);
        let shown = pattern.replace(".*", "[0]");
        out.push(Case {
            stem: format!("range-{}-too-long", pattern.replace(".*", "").replace('.', "-")),
            what: format!("{pattern} with {} elements, one more than allowed", max + 1),
            text,
            line,
            key: shown,
            message: format!("expected {}, got {} elements", describe(&range, why), fmt_int(max as i64 + 1)),
        });
    }
    // 65 NICs.
    let (_, range, why) = row("nic");
    let Range::Len(max) = range else { panic!() };
    let mut text = MINIMAL.to_string();
    for i in 1..=max {
        let _ = write!(text, "\n[[nic]]\nname = \"eth{i}\"\nrate_mbps = 1000\n");
    }
    out.push(Case {
        stem: "range-nic-too-many".into(),
        what: format!("{} [[nic]] tables, one more than allowed", max + 1),
        line: line_of(&text, "[[nic]]"),
        text,
        key: "nic".into(),
        message: format!("expected {}, got {} elements", describe(&range, why), max + 1),
    });
    // Figure marks and calibration bounds that are not finite.
    for (pattern, block, field) in [
        (
            "figure.*.marks.*.x",
            "[[figure]]\ntitle = \"t\"\ny = \"delivered_pps\"\nmarks = [{ x = inf, y = 1 }]\n",
            "figure[0].marks[0].x",
        ),
        (
            "figure.*.marks.*.y",
            "[[figure]]\ntitle = \"t\"\ny = \"delivered_pps\"\nmarks = [{ x = 1, y = inf }]\n",
            "figure[0].marks[0].y",
        ),
        (
            "calibrate.*.min",
            "[[calibrate]]\nname = \"c\"\nkey = \"kernel.hz\"\nmin = inf\nmax = 1000\n",
            "calibrate[0].min",
        ),
        (
            "calibrate.*.max",
            "[[calibrate]]\nname = \"c\"\nkey = \"kernel.hz\"\nmin = 100\nmax = inf\n",
            "calibrate[0].max",
        ),
        (
            "calibrate.*.offset",
            "[[calibrate]]\nname = \"c\"\nkey = \"kernel.hz\"\nmin = 100\nmax = 1000\noffset = inf\n",
            "calibrate[0].offset",
        ),
    ] {
        let (_, range, why) = row(pattern);
        let text = format!("{MINIMAL}\n{block}");
        let field_name = field.rsplit('.').next().unwrap();
        let line = text
            .lines()
            .enumerate()
            .skip(line_of(&text, block.lines().next().unwrap()) - 1)
            .find(|(_, l)| l.contains(&format!("{field_name} = inf")) || (field_name.len() == 1 && l.contains("inf")))
            .map(|(i, _)| i + 1)
            .unwrap();
        out.push(Case {
            stem: format!("range-{}-inf", pattern.replace(".*", "").replace('.', "-")),
            what: format!("{pattern} infinite"),
            text,
            line,
            key: field.into(),
            message: format!("expected {}, got inf", describe(&range, why)),
        });
    }
    out
}

/// Every key of the profile, set past its range through `[profile_set]`.
fn profile_cases() -> Vec<Case> {
    let (_, text) =
        hostsim_scenario::builtin_profiles().iter().find(|(n, _)| *n == "pentium3-800").expect("built-in profile");
    let t: toml::Table = text.parse().expect("valid profile");
    let mut keys: Vec<(String, String)> = Vec::new();
    for (table, v) in &t {
        if let toml::Value::Table(sub) = v {
            for k in sub.keys() {
                keys.push((table.clone(), k.clone()));
            }
        }
    }
    for k in [
        "pbq_branch_ns",
        "pbq_classify_ns",
        "pbq_dequeue_ns",
        "irq_suppress_check_ns",
        "irq_affinity_write_ns",
        "xdp_run_ns",
        "flow_limit_ns",
        "smp_lock_factor",
        "lock_acquire_ns",
        "lock_line_transfer_ns",
        "bkl_data_transfer_ns",
        "symbiose_splice_ns",
    ] {
        if !keys.iter().any(|(t, x)| t == "mechanisms" && x == k) {
            keys.push(("mechanisms".into(), k.into()));
        }
    }
    // Optional costs that pentium3-800 (a 2.4-era machine) leaves out.
    if !keys.iter().any(|(t, x)| t == "costs" && x == "newidle_balance_per_cpu_ns") {
        keys.push(("costs".into(), "newidle_balance_per_cpu_ns".into()));
    }
    keys.push((String::new(), "clock_mhz".into()));
    let mut out = Vec::new();
    for (table, key) in keys {
        let path = if table.is_empty() { key.clone() } else { format!("{table}.{key}") };
        let Some((_, range, why)) = PROFILE.iter().find(|(p, _, _)| {
            let pat: Vec<&str> = p.split('.').collect();
            let seg: Vec<&str> = path.split('.').collect();
            pat.len() == seg.len()
                && pat.iter().zip(&seg).all(|(p, s)| match p.strip_prefix('*') {
                    Some(suffix) => s.ends_with(suffix),
                    None => p == s,
                })
        }) else {
            continue;
        };
        let value = match range {
            Range::Int(_, max) => int(max + 1),
            Range::Float(_, max) => format!("{:e}", max * 10.0),
            _ => continue,
        };
        let got = match range {
            Range::Int(_, max) => int(max + 1),
            Range::Float(_, max) => fmt_float(max * 10.0),
            _ => continue,
        };
        let (header, tail) = if table.is_empty() {
            ("[profile_set]".to_string(), key.clone())
        } else {
            (format!("[profile_set.{table}]"), key.clone())
        };
        let text = format!("{MINIMAL}\n{header}\n{tail} = {value}\n");
        let line = text.lines().count();
        out.push(Case {
            stem: format!("range-profile-{}", path.replace('.', "-")),
            what: format!("profile key {path} (through [profile_set]) one past its largest allowed value"),
            text,
            line,
            key: format!("profile_set.{path}"),
            message: format!("expected {}, got {got}", describe(range, why)),
        });
    }
    out
}

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile");
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap().to_string_lossy().starts_with("range-") {
            std::fs::remove_file(p).unwrap();
        }
    }
    let mut cases: Vec<Case> = scenario().iter().flat_map(|(p, r, w)| cases_for_key(p, *r, w)).collect();
    cases.extend(special_cases());
    cases.extend(profile_cases());
    let n = cases.len();
    for c in cases {
        let header = format!(
            "# hostile: {}\n# expect-line: {}\n# expect-key: {}\n# expect-message: {}\n",
            c.what,
            c.line + 4,
            c.key,
            c.message
        );
        std::fs::write(dir.join(format!("{}.toml", c.stem)), header + &c.text).unwrap();
    }
    println!("wrote {n} files to {}", dir.display());
}
