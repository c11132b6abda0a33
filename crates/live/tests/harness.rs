//! The harness's pieces that need no root: results.csv's shape, the ledger's format (a line cut
//! short by a crash describes nothing), the exit codes.

use hostsim_live::harness::{results_csv, LiveError, Point};
use hostsim_live::ledger::{self, Entry};
use hostsim_live::signals::Interrupted;

#[test]
fn results_csv_keeps_key_order_unions_metrics_and_leaves_non_finite_empty() {
    let p = |v: &str, r: &str, m: &[(&str, f64)]| Point {
        keys: vec![("variant".into(), v.into()), ("traffic.x.rate_pps".into(), r.into())],
        metrics: m.iter().map(|(k, x)| (k.to_string(), *x)).collect(),
    };
    let csv = results_csv(&[p("off", "1000", &[("b_pps", 1.5), ("a_pps", f64::NAN)]), p("on", "2000", &[("c", 3.0)])]);
    assert_eq!(csv, "variant,traffic.x.rate_pps,a_pps,b_pps,c\noff,1000,,1.5,\non,2000,,,3\n");
}

#[test]
fn a_ledger_line_cut_short_describes_nothing() {
    let d = std::env::temp_dir().join(format!("hostsim-ledger-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join("hsl-1-0.jsonl");
    let a = Entry::Netns { name: "hsl-1-0-srv".into() };
    let b = Entry::File {
        ns: Some("hsl-1-0-srv".into()),
        path: "/sys/class/net/eth0/queues/rx-0/rps_cpus".into(),
        old: "0".into(),
    };
    let text = format!(
        "{{\"run\":\"hsl-1-0\",\"pid\":1,\"start_time\":5}}\n{}\n{}\n{{\"kind\":\"cgroup\",\"pa",
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    std::fs::write(&f, text).unwrap();
    let (h, entries) = ledger::read(&f).unwrap();
    assert_eq!((h.run.as_str(), h.pid, h.start_time), ("hsl-1-0", 1, 5));
    assert_eq!(entries, vec![a, b]);
    std::fs::write(&f, "{\"run\":\"hsl-1-0\",\"pid\":1,\"start_time\":5}\n{\"kind\":\"nosuch\"}\n").unwrap();
    assert!(ledger::read(&f).unwrap_err().to_string().contains("line 2"), "an unknown entry is an error, not skipped");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn exit_codes() {
    assert_eq!(LiveError::Unsupported("needs root".into()).exit_code(), 2);
    assert_eq!(LiveError::Failed("x".into()).exit_code(), 1);
    for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        assert_eq!(LiveError::Interrupted(Interrupted(s)).exit_code(), 128 + s as u8);
    }
}

/// `hostsim live clean` must undo what runs of earlier builds left: a ledger with every kind of
/// entry, as the code before the live crate was arranged by paper id (fcd7c51) wrote it, reads
/// back entry for entry and writes the same bytes (the format has not moved).
#[test]
fn ledgers_written_by_earlier_builds_still_read() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ledger-fcd7c51.jsonl");
    let (h, entries) = ledger::read(&path).unwrap();
    assert_eq!((h.run.as_str(), h.pid, h.start_time), ("hsl-4242-0", 4242, 987654));
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(entries.len(), lines.len());
    for (e, line) in entries.iter().zip(&lines) {
        assert_eq!(serde_json::to_string(e).unwrap(), *line);
    }
    let kinds: std::collections::BTreeSet<String> =
        entries.iter().map(|e| serde_json::to_value(e).unwrap()["kind"].as_str().unwrap().to_string()).collect();
    let all = ["affinity", "cgroup", "file", "link", "netns", "sched", "server_group", "tcx", "veth", "xdp"];
    assert_eq!(kinds.iter().map(String::as_str).collect::<Vec<_>>(), all, "every kind of entry");
}
