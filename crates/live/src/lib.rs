//! # hostsim-live: the mechanisms on today's Linux, and the harness every live run uses
//!
//! ## Writing a live experiment: the harness on one page
//!
//! Every `hostsim live <experiment>` runs through [`harness::LiveRun`], which does what a run on
//! a real machine must do around its measurements, so that an experiment only measures:
//!
//! ```no_run
//! use hostsim_live::harness::{LiveError, LiveRun, Point};
//! use hostsim_live::netns::Veth;
//! use std::time::Duration;
//!
//! fn my_experiment(out: &std::path::Path) -> Result<(), LiveError> {
//!     // 1. Start: not root → LiveError::Unsupported("needs root…", exit 2); installs the
//!     //    SIGINT/SIGTERM/SIGHUP/SIGQUIT handlers; creates and probes `out` (a full disk or a
//!     //    bad path fails here, before anything exists); undoes what SIGKILLed runs left;
//!     //    opens this run's ledger; writes out/run.json (status "running").
//!     let mut run = LiveRun::start("my-experiment", out)?;
//!     run.set_info("config", serde_json::json!({ "rate_pps": 1000 }));   // into run.json
//!     // 2. Everything the run creates goes through `run`, which records it in its ledger
//!     //    before creating it: namespaces (named <run>-<role>), veths, RPS masks and other
//!     //    values written to /sys or /proc (the old value is kept and written back), the CPU
//!     //    cgroup, XDP attachments (`record_xdp`, after the agent attached), other processes'
//!     //    affinities (`set_affinity`). Workers: `worker::spawn` (they die with the run).
//!     let outcome = (|| {
//!         let srv = run.netns("srv")?;
//!         let cli = run.netns("cli")?;
//!         run.veth(&Veth { ns_a: srv.name.clone(), a: "eth0".into(), addr_a: "198.18.0.1/24".into(),
//!                          ns_b: cli.name.clone(), b: "eth0".into(), addr_b: "198.18.0.2/24".into() })?;
//!         run.set_rps(&srv, "eth0", 0b1)?;
//!         for rate in [1000.0, 2000.0] {
//!             run.check()?;                              // Err(Interrupted) after a stop signal
//!             run.sleep(Duration::from_secs(1))?;        // every wait: interruptible
//!             let mut p = Point::default();
//!             p.keys.push(("variant".into(), "on".into()));
//!             p.keys.push(("traffic.load.rate_pps".into(), rate.to_string()));
//!             p.metrics.insert("delivered_pps".into(), 0.0);   // the model's metric names
//!             run.progress(format!("rate {rate} done"));      // never fails, never panics
//!             run.push(p)?;   // results.csv rewritten atomically with this point; run.json counts it
//!         }
//!         Ok(())
//!     })();
//!     // 3. Finish: undo the ledger (last first), write run.json's final status ("complete",
//!     //    "interrupted (SIGTERM)", "failed: …"), and return the outcome, or an error listing
//!     //    what could not be removed. Dropping `run` without finishing (a panic) undoes too.
//!     run.finish(outcome)
//! }
//! ```
//!
//! The command maps the result to an exit code with [`harness::LiveError::exit_code`]: 0; 1
//! (failed, the message names the file or command); 2 (this machine cannot: not root, no
//! XDP…; the tests skip on it and print why); 128 + N (stopped by signal N; everything removed).
//! `hostsim live clean` ([`harness::clean`]) undoes the ledgers of runs that are gone, lists what
//! it removed and what it could not (exit code 1 then; the ledger keeps it for the next try),
//! and names namespaces and cgroups called `hsl-*` that no ledger records without touching them.
//!
//! Rules for an experiment: create the [`harness::LiveRun`] first (it is dropped last); drop
//! the experiment's agents and workers before [`harness::LiveRun::finish`] (an XDP program
//! still loaded by this process counts as not removed); bound every loop in packets and seconds;
//! make the side the mechanism acts on the bottleneck; compare mechanism off and on at the same
//! offered load; name metrics as the model does (`summary.rs`), so the model twin overlays.
//! The ledger's format and why it, not pids or names, decides what is ours: [`ledger`].
//!
//! ## `ozaki-pbq` on today's Linux
//!
//! Paper 000 drops low-priority packets at the first point the kernel sees them, so that a
//! high-priority server keeps receiving under a flood. On Linux 6.x that point is XDP. This
//! crate runs that mechanism for real and measures it with the model's metric names, so the
//! model twin (`scenarios/live-ozaki-pbq.toml`, `hostsim_host::mechanisms::ozaki_pbq::xdp`) can be checked against it.
//!
//! ```text
//!   src/bpf/pbq_xdp.bpf.c   the XDP program (C, libbpf; skeleton by libbpf-cargo in build.rs)
//!   src/bpf/pbq.h           the control block and counters, shared by the program and xdp.rs
//!   xdp.rs                  load/attach, control block, port → level map, counters, test run
//!   agent.rs                the port table's upkeep; high load from the run's own counters
//!   suppress.rs             §3.3's interrupt suppression, live: NAPI kthreads moved/lowered
//!   hooks.rs                bind()/close() hooks (cgroup/post_bind4/6, sock_release); renice rescan
//!   pbq_tool.rs             `hostsim live pbq --dev IFACE`: the agent on a server's interface
//!   gen.rs, src/bpf/gen.*   the live-frames generator (BPF_PROG_RUN, paced): the offered load
//!   worker.rs               the sink (counts its window's sequence numbers) and a sendmmsg sender
//!   ozaki.rs                the experiment: topology, sweep, points
//!   harness.rs              LiveRun: root check, out-dir probe, ledger, results, finish
//!   ledger.rs               what a run created, recorded before creation; undo; dead runs
//!   signals.rs              SIGINT/SIGTERM/SIGHUP/SIGQUIT → an interruptible stop
//!   netns.rs, cgroup.rs     `ip` for namespaces, veths and values in a namespace; cpu cgroups
//!   procfs.rs, sys.rs       /proc parsers; setns, affinity, nice, process identity
//! ```
//!
//! ## `tabata-speed` on today's Linux
//!
//! Paper 002 regulates a program's execution speed: n of every T = 1000 slots of 1 ms, the i-th
//! at ⌊T·(i−1)/n⌋, so that a sender's bandwidth follows its share of the CPU. Here a SCHED_FIFO
//! thread wakes on absolute slot boundaries and freezes or thaws the sender's cgroup
//! (`cgroup.freeze`), with the model's own slot arithmetic; the receiver's kernel timestamps
//! every frame. Both sides' accuracy is measured; see `tabata.rs` for the topology and what is
//! undone, and `docs/live-tabata-speed.md` for the measurements against the model.
//!
//! ```text
//!   regulator.rs             the slot regulator: a Gate (cgroup.freeze, SIGSTOP), lateness, runtime
//!   src/bpf/arrivals_tc.bpf.c  tcx ingress program: per-frame ktime into a ring buffer
//!   arrivals.rs              load/attach (a tcx bpf_link from inside the namespace), drain
//!   tcp_worker.rs            the 1 MB bulk sender (SO_SNDBUF, TCP_INFO chrono stats) and the sink
//!   tabata.rs                the experiment: namespaces, 100 Mbit/s tbf, offloads off, sweep
//! ```
//!
//! ## `kawai-interval` on today's Linux
//!
//! Paper 004's mechanism is user-level code (a poll() loop that sleeps between passes and does
//! its I/O at SCHED_FIFO), so here it is a real HTTP/1.1 accelerator with the paper's three
//! threads, loaded by the project's own open-loop clients, with an origin whose delay is made
//! in user space; see [`kawai`] (its module page maps the files). Its one change beyond
//! namespaces and the CPU group: the group's `cpu.rt_runtime_us` (cgroup v1 gives a child group
//! no real-time time, and SCHED_FIFO then fails with EPERM), sized to fit its parent
//! (`kawai::experiment::rt_budget`) and removed with the group.
//!
//! ## `takeuchi-symbiose` on today's Linux
//!
//! Paper 003 splits a router's protocol work by function over two CPUs (the driver on one, IP
//! on the other, buffers exchanged in bulk). Linux can do the split with XDP and a cpumap: the
//! input veth's program (the driver half, in its NAPI kthread on one CPU) redirects every frame
//! to the other CPU's cpumap kthread, which builds the skbs in bulk and forwards them. The
//! experiment forwards 64-byte UDP frames from the live-frames generator through a router
//! namespace to a sink program that checks every frame's checksums, and compares the split
//! with the kernel's own forwarding on one CPU and on two (RPS); see [`symbiose`]. The paper's
//! own design, a driver thread and an IP thread exchanging buffers in bulk every 5 ms, runs in
//! user space over AF_XDP (copy mode on veth): [`afxdp`] on the sockets of [`xsk`].
//!
//! ```text
//!   src/bpf/symb.bpf.c       the router's input program (pass / cpumap / XSKMAP redirect), the sink
//!                            (checksums, counts, window by sequence number), NET_RX softirq clock
//!   symbiose.rs              the experiment: three namespaces, kthreads, variants, sweep, points
//!   afxdp.rs                 split-afxdp: driver and IP threads, 5 ms bulk exchange, the IP half
//!   xsk.rs                   AF_XDP sockets by their system calls (UMEM, rings, bind)
//! ```
//!
//! ## `goda-rfs`: wake-ups measured, not changed
//!
//! Paper 001's mechanism needs a hook in wake-up placement that this kernel does not offer (no
//! sched_ext, no kprobes) and RFS, which a global sysctl switches on. What can run is the
//! measurement its Fig. 2 rests on: for every wake-up of the run's own readers, the waking CPU,
//! the CPU the reader last ran on and the CPU the kernel chose, from three `tp_btf`
//! tracepoints, classified by the model's own classifier; see [`goda_wakeups`].
//!
//! ```text
//!   src/bpf/wake_tp.bpf.c    tp_btf sched_waking / sched_wakeup / sched_migrate_task, tgid-filtered
//!   wake.rs                  load/attach (bpf_links), the tgid filter, pairing into Fig. 2 rows
//!   goda_wakeups.rs          the experiment: N paced TCP flows into N unpinned readers, a sweep
//! ```
//!
//! ## The mechanism, and where it differs from the PBQs of `crates/host/src/mechanisms/ozaki_pbq/pbq.rs`
//!
//! | paper 000 (PBQs in the 2.4 backlog)                         | here (XDP at veth's NAPI poll)                                   |
//! |-------------------------------------------------------------|------------------------------------------------------------------|
//! | priority from a port → priority hash kept by bind()/nice()  | the same table, a BPF array set by cgroup bind/release hooks; nice: a rescan of the binders |
//! | high load = the backlog's throttle flag, seen at enqueue    | a flag the agent sets from the kernel's counters, every 10 ms     |
//! | full PBQs: evict the tail of a random lower-priority queue  | admit or drop the arrival; lower levels are shed first, graded    |
//! | per-queue minimum length, smaller for lower priorities      | per-level minimum rate (packets per 10 ms window), smaller lower  |
//! | dequeue by priority (`find_first_bit`)                      | none: what passes goes FIFO through the backlog                   |
//! | costs the hard-IRQ handler driver + `netif_rx` per packet   | costs the driver's poll + the program run (tens of ns)            |
//!
//! Why: XDP sees one frame at a time and no queue, so there is nothing to evict or reorder; it
//! can only admit or drop, and it does so before RPS, the backlog, IP/UDP and the socket have
//! spent anything on the frame, which is the paper's point ("decide before CPU time is spent",
//! §3.2). Interrupt suppression (§3.3), the optional second half, is not built: on a veth the
//! receive work runs on the *sender's* CPU and RPS already keeps it off the server processes'
//! CPU except for the protocol work, so there is no NIC interrupt to steer.
//!
//! ## High load: only the run's own counters
//!
//! See [`agent`]: the arrival rate the program counts on the run's own veths against the
//! receiver's capacity measured with the mechanism off, and drops on the run's own
//! highest-priority sockets, start it; the arrival rate ends it. Never `/proc/net/softnet_stat`,
//! whose per-CPU rows every namespace and concurrent run shares. The state machine is
//! `hostsim_host::mechanisms::ozaki_pbq::xdp::Detector`, shared with the model.
//!
//! ## What a run changes on the machine, and how it is undone
//!
//! Two network namespaces `hsl-<pid>-<n>-{srv,cli}` with two veth pairs between them and a spare
//! pair in `cli` (the generator's parking place, [`gen`]), RPS masks and threaded NAPI on the
//! server's two veths (the NAPI kthreads' affinity and policy recorded), the XDP programs
//! attached through bpf_links, the bind hooks attached (bpf_links) to a cgroup2 group
//! `hsl-<pid>-<n>-hooks` the sinks join ([`hooks`]), the worker processes, and a CPU cgroup
//! `hsl-<pid>-<n>` holding them (see [`cgroup`]), each
//! recorded in the run's ledger. On a normal exit, an error, and SIGINT, SIGTERM, SIGHUP or
//! SIGQUIT (which every wait loop checks) the agent detaches the links and the harness undoes
//! the ledger: namespaces deleted (with their veths and RPS masks), cgroups removed. Workers die
//! with the run (PR_SET_PDEATHSIG) and stop by themselves after their time limit. After a
//! SIGKILL the ledger remains; the next run (or `hostsim live clean`) undoes it. Nothing in the
//! root namespace, no global sysctl and no pinned BPF object is touched.

pub mod afxdp;
pub mod agent;
pub mod arrivals;
pub mod cgroup;
pub mod gen;
pub mod goda_wakeups;
pub mod harness;
pub mod hooks;
pub mod kawai;
pub mod ledger;
pub mod netns;
pub mod ozaki;
pub mod pbq_tool;
pub mod procfs;
pub mod regulator;
pub mod signals;
pub mod suppress;
pub mod symbiose;
pub mod sys;
pub mod tabata;
pub mod tcp_worker;
pub mod testing;
pub mod wake;
pub mod worker;
pub mod xdp;
pub mod xsk;
