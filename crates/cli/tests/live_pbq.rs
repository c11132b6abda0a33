//! `hostsim live pbq --dev IFACE` (issue 28, item 6), on a veth pair between two network
//! namespaces this test creates (`hsltest-<pid>-<tag>-{s,c}`, deleted at its end): it refuses a
//! device that already has an XDP program; by default it counts and drops nothing; with
//! `--drop`, under a flood at low priority, the program sheds the low level and never the high
//! one (the program's own counters, printed at exit); servers it protects get their level at
//! bind() through its cgroup; SIGINT, SIGTERM, SIGHUP and SIGQUIT each leave no XDP program, no
//! hook and no cgroup behind; after a SIGKILL `hostsim live clean` removes what is left.
//!
//! Needs root (namespaces, XDP, cgroups); elsewhere each test writes why it skips. Every check is
//! about the namespaces, device and ledger this test made: another run on the machine cannot
//! fail it. Every wait is bounded.

mod common;

use common::{cannot_run_here, entries_of, hostsim, root, skip};

use hostsim_live::ledger::{self, Entry};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn ip(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip").args(args).output().map_err(|e| e.to_string())?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr)))
    }
}

/// Two namespaces and a veth pair `v0` (server side, 198.18.210.1) – `v1` (client side).
struct Topo {
    srv: String,
    cli: String,
}

impl Topo {
    fn new(tag: &str) -> Result<Topo, String> {
        let p = format!("hsltest-{}-{tag}", std::process::id());
        let t = Topo { srv: format!("{p}-s"), cli: format!("{p}-c") };
        for n in [&t.srv, &t.cli] {
            ip(&["netns", "add", n])?;
            ip(&["-n", n, "link", "set", "lo", "up"])?;
        }
        ip(&["link", "add", "v0", "netns", &t.srv, "type", "veth", "peer", "name", "v1", "netns", &t.cli])?;
        for (n, d, a) in [(&t.srv, "v0", "198.18.210.1/24"), (&t.cli, "v1", "198.18.210.2/24")] {
            ip(&["-n", n, "addr", "add", a, "dev", d])?;
            ip(&["-n", n, "link", "set", d, "up"])?;
        }
        Ok(t)
    }

    /// The XDP program on `v0`, if any (read in the server namespace).
    fn xdp(&self) -> Option<(u32, &'static str)> {
        let ns = File::open(format!("/run/netns/{}", self.srv)).unwrap();
        hostsim_live::sys::in_netns(&ns, || hostsim_live::bpf::xdp_attached(hostsim_live::sys::ifindex("v0")?)).unwrap()
    }
}

impl Drop for Topo {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.srv]);
        let _ = ip(&["netns", "del", &self.cli]);
    }
}

/// The stop signals at their defaults, whatever this test inherited (CI runs it as a
/// background job, where SIGINT and SIGQUIT are ignored and hostsim would keep them so).
fn default_signals(cmd: &mut Command) {
    // SAFETY: signal() between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(s, libc::SIG_DFL);
            }
            Ok(())
        });
    }
}

/// A running `hostsim live pbq` with its stdout collected by a thread.
struct Tool {
    child: Child,
    out: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Tool {
    fn start(t: &Topo, args: &[&str]) -> Tool {
        let mut cmd = hostsim();
        default_signals(&mut cmd);
        cmd.args(["live", "pbq", "--dev", "v0", "--netns", &t.srv, "--interval", "0.2"]).args(args);
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start hostsim live pbq");
        let out = Arc::new(Mutex::new(String::new()));
        let (o, so) = (Arc::clone(&out), child.stdout.take().unwrap());
        let reader = std::thread::spawn(move || {
            for l in BufReader::new(so).lines().map_while(Result::ok) {
                let mut g = o.lock().unwrap();
                g.push_str(&l);
                g.push('\n');
            }
        });
        Tool { child, out, reader: Some(reader) }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stdout(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    /// Wait until the ledger records the XDP attachment, the hooks and the group (≤ 20 s);
    /// Err(stderr) if the tool exited first.
    fn wait_attached(&mut self) -> Result<Vec<Entry>, (Option<i32>, String)> {
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            let e = entries_of(self.pid());
            let has = |k: &str| e.iter().any(|x| serde_json::to_value(x).unwrap()["kind"] == k);
            if has("xdp") && has("link") && has("server_group") {
                return Ok(e);
            }
            if let Some(st) = self.child.try_wait().unwrap() {
                return Err((st.code(), self.stderr()));
            }
            assert!(Instant::now() < end, "hostsim live pbq attached nothing within 20 s: {e:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stderr(&mut self) -> String {
        let mut s = String::new();
        if let Some(e) = self.child.stderr.as_mut() {
            let _ = std::io::Read::read_to_string(e, &mut s);
        }
        s
    }

    /// Wait for the exit (≤ 30 s): (exit code, stdout, stderr).
    fn wait(mut self) -> (Option<i32>, String, String) {
        let end = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() {
            if Instant::now() > end {
                let _ = self.child.kill();
                panic!("hostsim live pbq did not exit within 30 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let code = self.child.wait().unwrap().code();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        let err = self.stderr();
        (code, self.stdout(), err)
    }
}

impl Drop for Tool {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ledgers_of(pid: u32) -> Vec<PathBuf> {
    let p = format!("hsl-{pid}-");
    ledger::list().into_iter().filter(|f| f.file_name().unwrap().to_string_lossy().starts_with(&p)).collect()
}

fn group_of(entries: &[Entry]) -> PathBuf {
    entries
        .iter()
        .find_map(|e| if let Entry::ServerGroup { path } = e { Some(path.clone()) } else { None })
        .expect("a cgroup in the ledger")
}

/// Start `hostsim live-worker ARGS` in namespace `ns`, optionally in cgroup `group` and at
/// `nice`, before it creates any socket.
fn worker(ns: &str, group: Option<&PathBuf>, nice: i32, args: &[&str]) -> Child {
    let nsf = File::open(format!("/run/netns/{ns}")).unwrap();
    let procs = group.map(|g| std::fs::OpenOptions::new().write(true).open(g.join("cgroup.procs")).unwrap());
    let (ns_fd, cg_fd) = (nsf.as_raw_fd(), procs.as_ref().map(|f| f.as_raw_fd()));
    let mut cmd = hostsim();
    cmd.arg("live-worker").args(args).stdout(Stdio::piped()).stderr(Stdio::null());
    // SAFETY: async-signal-safe system calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(ns_fd, libc::CLONE_NEWNET) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(fd) = cg_fd {
                if libc::write(fd, b"0".as_ptr().cast(), 1) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            libc::setpriority(libc::PRIO_PROCESS, 0, nice);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd.spawn().expect("start a live-worker")
}

/// The program's totals the tool prints at exit: level → (rx, drop).
fn counters(stdout: &str) -> std::collections::BTreeMap<String, (u64, u64)> {
    stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.strip_prefix("counters: level ")?.split_whitespace().collect();
            Some((f[0].to_string(), (f[2].parse().ok()?, f[4].parse().ok()?)))
        })
        .collect()
}

/// Everything the run recorded is gone, its ledger too, and `v0` has no XDP program.
fn assert_clean(t: &Topo, pid: u32, entries: &[Entry], when: &str) {
    let left: Vec<&Entry> = entries.iter().filter(|e| common::exists(e)).collect();
    assert!(left.is_empty(), "left after {when}: {left:?}");
    assert_eq!(ledgers_of(pid), Vec::<PathBuf>::new(), "ledger left after {when}");
    assert_eq!(t.xdp(), None, "an XDP program is left on v0 after {when}");
    assert!(!group_of(entries).exists(), "the cgroup is left after {when}");
}

#[test]
fn it_refuses_a_device_that_already_has_an_xdp_program() {
    let _g = hostsim_live::testing::exclusive();
    if !root() {
        return skip("needs root (namespaces, XDP, cgroups)");
    }
    let t = match Topo::new("busy") {
        Ok(t) => t,
        Err(e) => return skip(&e),
    };
    let mut first = Tool::start(&t, &["--duration", "60"]);
    let entries = match first.wait_attached() {
        Ok(e) => e,
        Err((code, err)) if cannot_run_here(code, &err) => return,
        Err((c, err)) => panic!("exit {c:?}: {err}"),
    };
    let (id, _) = t.xdp().expect("the first agent's program is on v0");
    let second = Tool::start(&t, &["--duration", "60"]);
    let pid2 = second.pid();
    let (code, _, err) = second.wait();
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("already has an XDP program") && err.contains(&format!("id {id}")), "{err}");
    assert_eq!(t.xdp().map(|x| x.0), Some(id), "the refusal touched the program in place");
    assert_eq!(ledgers_of(pid2), Vec::<PathBuf>::new(), "the refused run left its ledger");
    // SAFETY: our child.
    unsafe { libc::kill(first.pid() as i32, libc::SIGTERM) };
    let pid = first.pid();
    let (code, _, err) = first.wait();
    assert_eq!(code, Some(128 + libc::SIGTERM), "{err}");
    assert_clean(&t, pid, &entries, "SIGTERM");
}

#[test]
fn by_default_it_counts_and_drops_nothing() {
    let _g = hostsim_live::testing::exclusive();
    if !root() {
        return skip("needs root (namespaces, XDP, cgroups)");
    }
    let t = match Topo::new("count") {
        Ok(t) => t,
        Err(e) => return skip(&e),
    };
    let mut tool = Tool::start(&t, &["--duration", "4"]);
    let entries = match tool.wait_attached() {
        Ok(e) => e,
        Err((code, err)) if cannot_run_here(code, &err) => return,
        Err((c, err)) => panic!("exit {c:?}: {err}"),
    };
    let pid = tool.pid();
    // A server at nice 5 (level 14) in the agent's group; 2,000 datagrams to it at 4,000 pkt/s.
    // (Level 0 also counts the namespace's own portless frames, IPv6 neighbour discovery.)
    let sink = worker(&t.srv, Some(&group_of(&entries)), 5, &["sink", "--port", "7000", "--secs", "3"]);
    let end = Instant::now() + Duration::from_secs(10);
    while !tool.stdout().contains("port 7000: level 14") {
        assert!(Instant::now() < end, "the server's port did not reach the table within 10 s: {}", tool.stdout());
        std::thread::sleep(Duration::from_millis(50));
    }
    let snd = worker(
        &t.cli,
        None,
        0,
        &["send", "--dst", "198.18.210.1", "--ports", "7000", "--rate-pps", "4000", "--secs", "0.5"],
    );
    let sent = snd.wait_with_output().unwrap();
    let sent: serde_json::Value = serde_json::from_slice(&sent.stdout).expect("the sender's report");
    let sent = sent["count"].as_u64().unwrap();
    let (code, out, err) = tool.wait();
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("count only") && out.contains("mode"), "the output does not say it only counts: {out}");
    assert!(
        out.contains("native mode") || out.contains("generic mode"),
        "the output does not state the XDP mode: {out}"
    );
    let _ = sink.wait_with_output();
    let c = counters(&out);
    let (rx, _) = c.get("14").copied().unwrap_or_default();
    // Every datagram the veth's ring took is counted once (a loaded machine may let the ring
    // overflow before the program sees a frame: hence not equality).
    assert!(sent > 0 && rx <= sent && 2 * rx >= sent, "the program counted {rx} of the {sent} datagrams sent: {out}");
    assert!(c.values().all(|&(_, d)| d == 0), "count-only mode dropped packets: {out}");
    assert_clean(&t, pid, &entries, "a normal exit");
}

#[test]
fn with_drop_a_low_priority_flood_is_shed_and_the_high_level_never() {
    let _g = hostsim_live::testing::exclusive();
    if !root() {
        return skip("needs root (namespaces, XDP, cgroups)");
    }
    let t = match Topo::new("drop") {
        Ok(t) => t,
        Err(e) => return skip(&e),
    };
    // High load once the arrivals reach 90% of 2,000 pkt/s (the flood alone does).
    let mut tool = Tool::start(&t, &["--drop", "--capacity-pps", "2000", "--duration", "8"]);
    let entries = match tool.wait_attached() {
        Ok(e) => e,
        Err((code, err)) if cannot_run_here(code, &err) => return,
        Err((c, err)) => panic!("exit {c:?}: {err}"),
    };
    let pid = tool.pid();
    let group = group_of(&entries);
    // The servers, in the agent's group before they bind: bw at nice -19, flood at nice 19.
    let bw = worker(&t.srv, Some(&group), -19, &["sink", "--port", "5000", "--secs", "6"]);
    let fl = worker(&t.srv, Some(&group), 19, &["sink", "--port", "6000", "--secs", "6"]);
    // Their levels, set at bind(), reach the tool's table (≤ 10 s on a loaded machine).
    let end = Instant::now() + Duration::from_secs(10);
    while !(tool.stdout().contains("port 5000: level 38") && tool.stdout().contains("port 6000: level 0")) {
        assert!(Instant::now() < end, "the servers' ports did not reach the table within 10 s: {}", tool.stdout());
        std::thread::sleep(Duration::from_millis(50));
    }
    let flood = worker(
        &t.cli,
        None,
        0,
        &["send", "--dst", "198.18.210.1", "--ports", "6000", "--rate-pps", "50000", "--secs", "2"],
    );
    let trickle = worker(
        &t.cli,
        None,
        0,
        &["send", "--dst", "198.18.210.1", "--ports", "5000", "--rate-pps", "2000", "--secs", "2"],
    );
    for w in [flood, trickle] {
        let _ = w.wait_with_output();
    }
    let (code, out, err) = tool.wait();
    for w in [bw, fl] {
        let _ = w.wait_with_output();
    }
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("mode: drop"), "{out}");
    let c = counters(&out);
    let (lo_rx, lo_drop) = c.get("0").copied().unwrap_or_default();
    let (hi_rx, hi_drop) = c.get("38").copied().unwrap_or_default();
    assert!(hi_rx > 0 && lo_rx > 0, "both levels arrived: {out}");
    assert!(lo_drop > 0, "the flood at level 0 was not shed ({lo_rx} arrived): {out}");
    assert_eq!(hi_drop, 0, "the program dropped the high level: {out}");
    assert!(out.contains("high load yes"), "the detector never said high load: {out}");
    assert_clean(&t, pid, &entries, "a normal exit with servers in the group");
}

#[test]
fn every_stop_signal_leaves_no_program_and_no_group() {
    let _g = hostsim_live::testing::exclusive();
    if !root() {
        return skip("needs root (namespaces, XDP, cgroups)");
    }
    let t = match Topo::new("sig") {
        Ok(t) => t,
        Err(e) => return skip(&e),
    };
    for (sig, name) in
        [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM"), (libc::SIGHUP, "SIGHUP"), (libc::SIGQUIT, "SIGQUIT")]
    {
        let mut tool = Tool::start(&t, &[]);
        let entries = match tool.wait_attached() {
            Ok(e) => e,
            Err((code, err)) if cannot_run_here(code, &err) => return,
            Err((c, err)) => panic!("exit {c:?}: {err}"),
        };
        assert!(t.xdp().is_some(), "no program on v0 while the agent runs");
        let pid = tool.pid();
        // SAFETY: our child.
        unsafe { libc::kill(pid as i32, sig) };
        let (code, _, err) = tool.wait();
        assert_eq!(code, Some(128 + sig), "exit after {name}: {err}");
        assert!(err.contains(&format!("interrupted ({name})")), "{err}");
        assert_clean(&t, pid, &entries, name);
    }
}

#[test]
fn after_sigkill_live_clean_removes_what_is_left() {
    let _g = hostsim_live::testing::exclusive();
    if !root() {
        return skip("needs root (namespaces, XDP, cgroups)");
    }
    let t = match Topo::new("kill") {
        Ok(t) => t,
        Err(e) => return skip(&e),
    };
    let mut tool = Tool::start(&t, &[]);
    let entries = match tool.wait_attached() {
        Ok(e) => e,
        Err((code, err)) if cannot_run_here(code, &err) => return,
        Err((c, err)) => panic!("exit {c:?}: {err}"),
    };
    let pid = tool.pid();
    tool.child.kill().unwrap(); // SIGKILL: nothing runs in the victim
    let _ = tool.wait();
    // The bpf_links died with their last descriptor; the group and the ledger stay.
    assert!(group_of(&entries).exists(), "a SIGKILLed agent leaves its group");
    assert_eq!(ledgers_of(pid).len(), 1, "and its ledger");
    let clean = hostsim().args(["live", "clean"]).output().unwrap();
    let said = String::from_utf8_lossy(&clean.stdout);
    // Its exit status also speaks for other dead runs' leftovers: only ours are asserted on.
    assert!(
        said.contains(&format!("removed cgroup {}", group_of(&entries).display())),
        "clean did not name the group: {said}"
    );
    assert_clean(&t, pid, &entries, "SIGKILL and `hostsim live clean`");
}
