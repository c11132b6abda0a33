//! The error corpus: every file in `tests/bad/` is `tests/good/minimal.toml` with one defect, and
//! loading it must give an error (never a panic) that names the file, the line the offending key
//! is on, the key and what was expected.

use hostsim_scenario::{load, load_str, ScenarioError};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn dir(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(sub)
}

/// One bad file and what its error must say.
struct Case {
    file: &'static str,
    /// `--set` overrides given with it.
    sets: &'static [(&'static str, &'static str)],
    /// The line the error points at; `None` only where the offending thing is not in the file.
    line: Option<usize>,
    /// A substring of the error's key.
    key: &'static str,
    /// A substring of the error's message: what was expected.
    message: &'static str,
}

const fn case(file: &'static str, line: usize, key: &'static str, message: &'static str) -> Case {
    Case { file, sets: &[], line: Some(line), key, message }
}

#[rustfmt::skip]
const CASES: &[Case] = &[
    // Syntax.
    case("syntax_error.toml", 18, "name", "not valid TOML"),
    // The receiving and sending TCP (issue 26).
    case("tcp_rmem_unordered.toml", 10, "kernel.tcp_rmem", "min <= default <= max"),
    case("tcp_cc_on_udp.toml", 30, "traffic[0].tcp_cc", "applies to `tcp_window` traffic only"),
    // Unknown keys, at every level.
    case("unknown_top_key.toml", 6, "duration_s", "unknown key `duration_s`, expected one of"),
    case("unknown_kernel_key.toml", 9, "kernel.napi", "unknown key `napi`, expected one of"),
    case("unknown_nic_key.toml", 14, "nic[0].speed", "unknown key `speed`, expected one of"),
    case("unknown_process_key.toml", 22, "process[0].priority", "unknown key `priority`, expected one of"),
    case("unknown_traffic_key.toml", 30, "traffic[0].rate_mbps", "unknown key `rate_mbps`, expected one of"),
    case("unknown_variant_key.toml", 40, "variant[1].sets", "unknown key `sets`, expected one of `name`, `description`, `set`"),
    case("unknown_expect_key.toml", 48, "expect[0].tolerence", "unknown key `tolerence`, expected one of"),
    case("unknown_expect_rhs_key.toml", 48, "expect[0].rhs.varient", "unknown key `varient`, expected one of `metric`, `variant`"),
    // Wrong types.
    case("wrong_type_string_for_int.toml", 4, "duration_ms", "invalid type: a string \"50\", expected a whole number in 1..=86_400_000 (one simulated day at most)"),
    case("wrong_type_int_for_array.toml", 15, "nic[0].irq_cpus", "expected an array"),
    case("nice_overflows_i8.toml", 22, "process[0].nice", "expected a whole number in -20..=19 (Linux nice values), got 200"),
    // Values outside an enumeration.
    case("bad_rx_path.toml", 9, "kernel.rx_path", "unknown value `fast`, expected `legacy` or `napi`"),
    case("bad_program.toml", 19, "process[0].program", "unknown value `foo`, expected one of `udp_sink`"),
    case("bad_traffic_kind.toml", 25, "traffic[0].kind", "unknown value `burst`, expected one of `cbr`, `poisson`"),
    case("spread_without_quantum.toml", 30, "traffic[0].spread", "spread shares out pacing quanta (quantum_us)"),
    case("bad_irq_routing.toml", 14, "nic[0].irq_routing", "unknown value `x`, expected one of `fixed`, `mask`"),
    case("bad_expect_op.toml", 47, "expect[0].op", "unknown value `==`, expected one of `<`"),
    case("bad_backlog.toml", 9, "kernel.backlog", "unknown value `flowlimit`, expected one of `fifo`, `pbq`, `flow_limit`"),
    // Missing required keys: the line is the table they belong in (none for the top level).
    Case { file: "missing_profile.toml", sets: &[], line: None, key: "profile", message: "missing required key `profile` (at the top level" },
    Case { file: "missing_duration.toml", sets: &[], line: None, key: "duration_ms", message: "missing required key `duration_ms` (at the top level" },
    case("missing_program.toml", 17, "process[0].program", "missing required key `program` (in this [[process]])"),
    case("missing_traffic_nic.toml", 23, "traffic[0].nic", "missing required key `nic` (in this [[traffic]])"),
    // Meaning.
    case("unknown_profile.toml", 3, "profile", "no profile `pentium5-9000` (built-in: "),
    case("extends_not_a_paper_id.toml", 3, "extends", "expected a paper id such as `ozaki-pbq` (lowercase letters, digits, `-`), got `paper 000`"),
    case("warmup_not_shorter.toml", 5, "warmup_ms", "expected warm-up shorter than duration_ms"),
    case("duplicate_process.toml", 24, "process[1].name", "duplicate process name `sink`"),
    case("duplicate_nic.toml", 18, "nic[1].name", "duplicate NIC name `eth0`"),
    case("duplicate_traffic.toml", 32, "traffic[1].name", "duplicate traffic name `load`"),
    case("duplicate_variant.toml", 39, "variant[1].name", "duplicate variant name `legacy`"),
    case("traffic_missing_nic.toml", 26, "traffic[0].nic", "no NIC named `eth1` (have: eth0)"),
    case("process_cpu_out_of_range.toml", 22, "process[0].cpus", "CPU 1 does not exist (the profile has 1 CPU: 0)"),
    case("irq_cpu_out_of_range.toml", 15, "nic[0].irq_cpus", "CPU 1 does not exist (the profile has 1 CPU: 0)"),
    case("rps_cpu_out_of_range.toml", 10, "kernel.rps_cpus", "CPU 3 does not exist"),
    case("nice_out_of_range.toml", 22, "process[0].nice", "expected a whole number in -20..=19 (Linux nice values), got 25"),
    case("rfs_without_rps.toml", 9, "kernel.rfs", "RFS needs RPS"),
    case("xdp_on_legacy_path.toml", 10, "kernel.xdp", "needs kernel.rx_path = \"napi\""),
    case("napi_suppress_without_threads.toml", 12, "kernel.napi_suppress", "needs kernel.napi_threaded = true"),
    case("napi_threaded_with_rps.toml", 12, "kernel.rps", "RPS from a threaded-NAPI kthread is not modelled"),
    case("xdp_release_frac_out_of_range.toml", 11, "kernel.xdp_release_frac", "expected a number in 0..=1 (a fraction of the rate at which high load began (strictly inside 0..1)), got 1.5"),
    case("o1_runqueue_without_o1.toml", 10, "kernel.o1_runqueue", "it needs kernel.scheduler = \"o1\""),
    case("dynamic_itr_on_legacy.toml", 17, "nic[0].itr_mode", "it needs kernel.rx_path = \"napi\""),
    case("net_dim_on_legacy.toml", 17, "nic[0].itr_mode", "net_dim samples at the NAPI poll's completion (mlx5e_napi_poll): it needs kernel.rx_path = \"napi\""),
    case("gro_on_legacy.toml", 17, "nic[0].gro", "GRO runs in the NAPI poll (napi_gro_receive): it needs kernel.rx_path = \"napi\""),
    case("rsc_max_desc_not_a_setting.toml", 17, "nic[0].rsc_max_desc", "expected 1, 4, 8 or 16 (the 82599's RSCCTL.MAXDESC settings), got 5"),
    case("flow_limit_on_legacy.toml", 10, "kernel.backlog", "flow_limit is Linux 3.11+'s enqueue_to_backlog: it needs kernel.rx_path = \"napi\""),
    case("flow_limit_table_len_not_pow2.toml", 10, "kernel.flow_limit_table_len", "expected a power of two in 1..=65536, got 1000"),
    case("flow_limit_cpu_out_of_range.toml", 10, "kernel.flow_limit_cpus", "CPU 5 does not exist (the profile has 1 CPU: 0)"),
    case("fifo_without_rt_priority.toml", 22, "process[0].sched", "SCHED_FIFO needs rt_priority in 1..=99"),
    case("udp_to_tcp_port.toml", 27, "traffic[0].dst_port", "port 9000 is served by a TCP program but this traffic is UDP"),
    case("payload_too_large.toml", 29, "traffic[0].payload_bytes", "expected a whole number in 0..=1472 (bytes; one unfragmented frame), got 9000"),
    // Paper 002's keys: the allowed range is named for every kind of bad value.
    case("speed_pct_zero.toml", 22, "process[0].speed_pct", "expected a whole number in 1..=100 (a speed in percent, Tender's regulation), got 0"),
    case("speed_pct_over.toml", 22, "process[0].speed_pct", "expected a whole number in 1..=100 (a speed in percent, Tender's regulation), got 101"),
    case("speed_pct_negative.toml", 22, "process[0].speed_pct", "expected a whole number in 1..=100 (a speed in percent, Tender's regulation), got -5"),
    case("speed_pct_string.toml", 22, "process[0].speed_pct", "invalid type: a string \"fast\", expected a whole number in 1..=100 (a speed in percent, Tender's regulation)"),
    case("unit_bytes_zero.toml", 26, "process[1].unit_bytes", "expected a send() unit in 1..=4294967295 bytes, got 0"),
    // Paper 004's keys (files derived from tests/good/accelerator.toml).
    case("accel_cycle_negative.toml", 17, "process[0].accelerator.min_cycle_ms", "expected a number in 0..=60000 (ms per interval-control cycle"),
    case("accel_ratio_negative.toml", 18, "process[0].accelerator.ratio", "expected a number in 0..=1000 (the paper's k-times interval is ratio = k - 1"),
    case("http_zero_conns.toml", 42, "traffic[0].http.conns", "expected a whole number in 1..=262_144 (persistent connections"),
    case("accel_thread_without_program.toml", 27, "process[0].thread[1].name", "thread `io` has no program: expected program = \"listen\", \"io\" or \"retrieve\""),
    // Kernel concurrency models and forwarding (paper 003).
    case("functional_stage_cpu_out_of_range.toml", 12, "kernel.driver_cpu", "CPU 1 does not exist (the profile has 1 CPU: 0)"),
    case("exchange_period_zero.toml", 13, "kernel.exchange_period_us", "expected a whole number in 1..=1_000_000 (us between Symbiose's queue exchanges"),
    case("functional_needs_legacy.toml", 10, "kernel.concurrency", "it needs rx_path = \"legacy\""),
    case("online_cpus_out_of_range.toml", 10, "kernel.online_cpus", "expected 1..=1 (the profile has 1 CPU: 0)"),
    case("route_to_missing_nic.toml", 33, "route[0].to", "no NIC named `eth1` (have: eth0)"),
    case("route_without_sink.toml", 32, "route[0].to", "nothing receives on NIC `eth0`: add a [[traffic]] with kind = \"sink\""),
    // Sweeps: errors point at the sweep's key, even when the bad value lands elsewhere.
    case("sweep_not_array.toml", 32, "sweep.\"traffic.load.rate_pps\"", "expected a non-empty array of values, found an integer"),
    case("sweep_empty_array.toml", 32, "sweep.\"traffic.load.rate_pps\"", "expected a non-empty array of values, found an empty one"),
    case("sweep_unquoted_key.toml", 32, "sweep.traffic", "write a dotted key in quotes"),
    case("sweep_unknown_key.toml", 33, "sweep.\"kernel.bogus\"", "unknown key `bogus`, expected one of"),
    case("sweep_missing_element.toml", 33, "sweep.\"traffic.flood.flows\"", "no `[[traffic]]` named `flood` (have: load)"),
    case("sweep_wrong_type.toml", 32, "sweep.\"traffic.load.rate_pps\"", "invalid type: a string \"fast\", expected a number in 0..=1_000_000_000 (packets per second"),
    case("sweep_invalid_value.toml", 33, "sweep.\"traffic.load.payload_bytes\"", "expected a whole number in 0..=1472 (bytes; one unfragmented frame), got 4000"),
    // A swept key that makes another key invalid: the line is the sweep key's, the key the failing one.
    case("sweep_breaks_base.toml", 35, "kernel.rfs", "RFS needs RPS"),
    // Variants: errors point at the variant's `set` key.
    case("variant_bad_key.toml", 40, "variant.napi.set.\"kernel.polling\"", "unknown key `polling`, expected one of"),
    case("variant_bad_value.toml", 40, "variant.napi.set.\"kernel.rx_path\"", "unknown value `fast`, expected `legacy` or `napi`"),
    case("variant_invalid_combination.toml", 40, "variant.napi.set.\"kernel.rfs\"", "RFS needs RPS"),
    case("variant_breaks_base.toml", 42, "kernel.rfs", "RFS needs RPS"),
    // Expectations.
    case("expect_missing_variant.toml", 45, "expect[0].variant", "no variant `polling` (have: legacy, napi)"),
    case("expect_rhs_missing_variant.toml", 48, "expect[0].rhs.variant", "no variant `legacy24` (have: legacy, napi)"),
    case("expect_at_unswept.toml", 46, "expect[0].at.\"traffic.load.flows\"", "`traffic.load.flows` is not a swept key (swept: traffic.load.rate_pps)"),
    case("expect_without_rhs.toml", 42, "expect[0]", "expected `value` or `rhs`"),
    // Figures.
    case("unknown_figure_key.toml", 53, "figure[0].marks[0].yy", "unknown key `yy`, expected one of `x`, `y`, `variant`, `label`"),
    case("figure_x_unswept.toml", 52, "figure[0].x", "`traffic.load.flows` is not a swept key (swept: traffic.load.rate_pps)"),
    case("figure_unknown_variant.toml", 54, "figure[0].variants", "no variant `polling` (have: legacy, napi)"),
    // Seeds, claim roles and calibration parameters.
    case("seeds_out_of_range.toml", 6, "seeds", "expected a whole number in 1..=1000 (seeds per sweep point and variant), got 0"),
    case("seeds_with_seed_sweep.toml", 6, "seeds", "`seeds` and a sweep over `seed` cannot be combined"),
    case("expect_bad_role.toml", 44, "expect[0].role", "unknown value `baseline`, expected `calibration` or `prediction`"),
    case("expect_not_applicable_without_finding.toml", 44, "expect[0].applicable", "needs a `finding` saying why"),
    case("expect_not_applicable_without_untestable.toml", 45, "expect[0].applicable", "needs `untestable`: \"no_reference\""),
    case("expect_untestable_but_applicable.toml", 44, "expect[0].untestable", "`untestable` is for a claim with `applicable = false`"),
    case("expect_range_without_lower_end.toml", 53, "expect[1].claim_id", "`napi's rate` is claimed 2 times: two claims of one sentence and reading are the two ends of a range"),
    case("calibrate_without_calibration.toml", 50, "calibrate", "needs `calibration = \"NAME\"` at the top level"),
    case("calibrate_bad_bounds.toml", 55, "calibrate[0].max", "expected min < max, got 3000..=1000"),
    case("calibrate_bad_key.toml", 53, "calibrate[0].key", "unknown key `hzz`"),
    case("calibrate_missing_source.toml", 51, "calibrate[0].source", "say where the bounds come from"),
    case("calibrate_bound_invalid.toml", 53, "calibrate[0].key", "`kernel.hz` = 20000 (a bound, + offset) does not give a valid scenario: expected a whole number in 1..=10000"),
    // Command-line overrides (`--set`): valid files, bad only with the override, which has no line.
    Case { file: "set_missing_element.toml", sets: &[("process.nobody.nice", "5")], line: None, key: "process.nobody.nice", message: "--set: no `[[process]]` named `nobody` (have: sink)" },
    Case { file: "set_wrong_type.toml", sets: &[("kernel.hz", "fast")], line: None, key: "kernel.hz", message: "invalid type: a string \"fast\", expected a whole number in 1..=10000 (timer interrupts per second; Linux offers 100..=1000) (given by --set kernel.hz=\"fast\")" },
];

fn run(c: &Case) -> Result<ScenarioError, String> {
    let path = dir("bad").join(c.file);
    let sets: Vec<(String, String)> = c.sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    match std::panic::catch_unwind(|| load(&path, &sets)) {
        Err(_) => Err(format!("{}: load panicked", c.file)),
        Ok(Ok(_)) => Err(format!("{}: loaded without an error", c.file)),
        Ok(Err(e)) => Ok(e),
    }
}

#[test]
fn every_bad_file_gives_a_precise_error() {
    let mut failures = Vec::new();
    for c in CASES {
        let e = match run(c) {
            Ok(e) => e,
            Err(m) => {
                failures.push(m);
                continue;
            }
        };
        let shown = e.to_string();
        let mut bad = Vec::new();
        if e.file != dir("bad").join(c.file) || !shown.starts_with(&dir("bad").join(c.file).display().to_string()) {
            bad.push(format!("file {:?}", e.file));
        }
        if e.line != c.line {
            bad.push(format!("line {:?}, want {:?}", e.line, c.line));
        }
        if let Some(l) = c.line {
            if !shown.contains(&format!("{}:{l}: ", c.file)) {
                bad.push("Display lacks file:line".into());
            }
        }
        if !e.key.contains(c.key) {
            bad.push(format!("key {:?}, want it to contain {:?}", e.key, c.key));
        }
        if !shown.contains(&format!("key `{}`", e.key)) {
            bad.push("Display lacks the key".into());
        }
        if !e.message.contains(c.message) {
            bad.push(format!("message {:?}, want it to contain {:?}", e.message, c.message));
        }
        if e.message.contains('\n') {
            bad.push("message spans lines".into());
        }
        if !bad.is_empty() {
            failures.push(format!("{}: {}\n    error: {shown}", c.file, bad.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases wrong:\n{}", failures.len(), CASES.len(), failures.join("\n"));
}

#[test]
fn every_bad_file_is_in_the_table() {
    let on_disk: BTreeSet<String> =
        std::fs::read_dir(dir("bad")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    let listed: BTreeSet<String> = CASES.iter().map(|c| c.file.to_string()).collect();
    assert_eq!(listed.len(), CASES.len(), "a file is listed twice");
    let untested: Vec<&String> = on_disk.difference(&listed).collect();
    let missing: Vec<&String> = listed.difference(&on_disk).collect();
    assert!(untested.is_empty(), "files in tests/bad/ without a row in CASES: {untested:?}");
    assert!(missing.is_empty(), "rows in CASES without a file in tests/bad/: {missing:?}");
    assert!(CASES.len() >= 25);
}

#[test]
fn the_minimal_scenario_they_derive_from_is_valid() {
    let sc = load(&dir("good").join("minimal.toml"), &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sc.runs().unwrap().len(), 4);
    load(&dir("good").join("accelerator.toml"), &[]).unwrap_or_else(|e| panic!("{e}"));
    // The --set cases are only bad because of their overrides.
    for c in CASES.iter().filter(|c| !c.sets.is_empty()) {
        load(&dir("bad").join(c.file), &[]).unwrap_or_else(|e| panic!("{}: {e}", c.file));
    }
}

#[test]
fn a_missing_file_is_an_error() {
    let e = load(&dir("bad").join("no-such-file.toml"), &[]).unwrap_err();
    assert!(e.to_string().contains("no-such-file.toml"), "{e}");
    assert!(e.message.contains("cannot read scenario"), "{e}");
}

#[test]
fn builtin_scenarios_load() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let all = hostsim_scenario::builtin_scenarios();
    assert!(all.iter().any(|(n, _)| *n == "examples/livelock"), "livelock is built in");
    let mut failures = Vec::new();
    for (name, text) in all {
        let path = root.join(format!("{name}.toml"));
        match load_str(&path, text, &[]) {
            Ok(sc) => {
                if let Err(e) = sc.runs() {
                    failures.push(format!("{name}: runs: {e}"));
                }
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "built-in scenarios that do not load:\n{}", failures.join("\n"));
}
