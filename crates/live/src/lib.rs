//! # hostsim-live: `ozaki-pbq` on today's Linux
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
//!   agent.rs                port → priority from /proc; high load from the kernel's counters
//!   netns.rs                namespaces and veths named hsl-<pid>-<n>-<role>; removal; leftovers
//!   worker.rs               the sink and the sendmmsg sender, as processes
//!   ozaki.rs                the experiment: topology, sweep, results.csv
//!   procfs.rs, sys.rs       /proc parsers; setns, affinity, nice, signals
//! ```
//!
//! ## The mechanism, and where it differs from the PBQs of `crates/host/src/mechanisms/ozaki_pbq/pbq.rs`
//!
//! | paper 000 (PBQs in the 2.4 backlog)                         | here (XDP at veth's NAPI poll)                                   |
//! |-------------------------------------------------------------|------------------------------------------------------------------|
//! | priority from a port → priority hash kept by bind()/nice()  | the same table, a BPF array the agent fills from `/proc`          |
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
//! ## High load: the kernel's counters, released by the program's rate
//!
//! See [`agent`]: backlog overflow or length (`/proc/net/softnet_stat`) and drops on the
//! highest-priority sockets (`/proc/net/udp`) start it; the arrival rate the program counts
//! before dropping ends it. A rate alone cannot tell whether this machine is overloaded; the
//! counters alone go quiet once the program sheds. The state machine is
//! `hostsim_host::mechanisms::ozaki_pbq::xdp::Detector`, shared with the model.
//!
//! ## What a run changes on the machine, and how it is undone
//!
//! Three network namespaces `hsl-<pid>-<n>-{srv,bwc,fld}` with two veth pairs between them, an
//! RPS mask on the server's two veths, one XDP program attached to them through bpf_links, the
//! worker processes, and a CPU cgroup `hsl-<pid>-<n>` holding them (see [`cgroup`]). Dropping the [`ozaki::Setup`] (normal exit, error, SIGINT/SIGTERM,
//! which every wait loop checks) detaches the links and deletes the namespaces, which removes
//! the veths and their RPS masks, and removes the cgroup; workers die with the run (PR_SET_PDEATHSIG) and stop by
//! themselves after their time limit. After a SIGKILL only the namespaces and the (empty) cgroup
//! remain; the next run (or `hostsim live clean`) deletes those whose `<pid>` is gone. Nothing in the root
//! namespace, no global sysctl and no pinned BPF object is touched.

pub mod agent;
pub mod cgroup;
pub mod netns;
pub mod ozaki;
pub mod procfs;
pub mod sys;
pub mod worker;
pub mod xdp;
