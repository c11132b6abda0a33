//! # hostsim-live: the papers' mechanisms on today's Linux, and the harness every live run uses
//!
//! The crate is arranged by paper id, as the model's `crates/host/src/mechanisms/` is; what the
//! experiments share sits at the top, for the next experiment to use as they do:
//!
//! ```text
//!   command.rs     an experiment's options struct (clap) is its configuration; `run` starts the
//!                  harness, records the options in run.json and runs the sweep
//!   harness.rs     LiveRun: root check, out-dir probe, ledger, results.csv point by point, finish
//!   ledger.rs      what a run created, recorded before creation; undo; the runs that are gone
//!   signals.rs     SIGINT/SIGTERM/SIGHUP/SIGQUIT → an interruptible stop
//!   netns.rs       `ip` for namespaces, veths and values in a namespace
//!   cgroup.rs      cpu cgroups (v1) and the cgroup2 root
//!   gen.rs         the live-frames generator (BPF_PROG_RUN, paced; bpf/gen.bpf.c): offered load
//!                  that does not depend on the receiver
//!   worker.rs      worker processes (spawned, placed, dying with the run), the UDP sink and sender
//!   tcp_worker.rs  the bulk TCP sender and its sink (tabata-speed, goda-rfs)
//!   bpf.rs         what every BPF loader shares: the "unsupported" error, XDP queries, netns cookie
//!   procfs.rs      /proc parsers          sys.rs   setns, affinity, nice, scheduling, clocks
//!   testing.rs     for the live tests: one live test at a time on the machine
//!   build.rs       (the crate's) compiles every src/**/bpf/*.bpf.c and generates its skeleton
//!
//!   ozaki_pbq/          paper 000: XDP priority drop, its agent, bind hooks, interrupt
//!                       suppression; `hostsim live ozaki-pbq` and the tool `hostsim live pbq`
//!   goda_rfs/           paper 001: wake-ups recorded from the scheduler's tracepoints
//!                       (`hostsim live goda-wakeups`; the mechanism itself needs sched_ext)
//!   tabata_speed/       paper 002: the slot regulator and the receiver's clock
//!   takeuchi_symbiose/  paper 003: the functional split as XDP + cpumap, and over AF_XDP
//!   kawai_interval/     paper 004: an HTTP accelerator with the interval-controlled loop
//! ```
//!
//! Each paper folder's `mod.rs` is its page: what runs, what is measured, what a run changes on
//! the machine and how it is undone, and its `Options` (the command's flags and the fixed
//! parameters, one struct). The docs book's live pages (`docs/src/live/`) hold the measurements.
//!
//! ## Writing a live experiment: the harness on one page
//!
//! An experiment is an options struct that implements [`command::Experiment`]; `hostsim live
//! <name>` parses it with clap and calls [`command::run`], which starts a [`harness::LiveRun`]
//! around the experiment's `run`. The harness does what a run on a real machine must do around
//! its measurements, so that an experiment only measures:
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
//!             let mut metrics = std::collections::BTreeMap::new();
//!             metrics.insert("delivered_pps".into(), 0.0);   // the model's metric names
//!             let p = Point::new(&[("variant", "on".into()), ("traffic.load.rate_pps", rate.to_string())], metrics);
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
//! A new experiment: a folder `src/<paper id>/` with its `mod.rs` (the page and its `Options`),
//! its experiment and its BPF programs under `bpf/` (listed in `build.rs`), one variant in the
//! CLI's `LiveCmd` (`crates/cli/src/main.rs`), a test in `crates/cli/tests/live_<name>.rs`, and
//! a page in the docs book.

pub mod bpf;
pub mod cgroup;
pub mod command;
pub mod gen;
pub mod harness;
pub mod ledger;
pub mod netns;
pub mod procfs;
pub mod signals;
pub mod sys;
pub mod tcp_worker;
pub mod testing;
pub mod worker;

pub mod goda_rfs;
pub mod kawai_interval;
pub mod ozaki_pbq;
pub mod tabata_speed;
pub mod takeuchi_symbiose;
