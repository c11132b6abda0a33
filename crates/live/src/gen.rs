//! # The live-frames generator: a kernel-side packet source for live experiments
//!
//! A live experiment must overload the side its mechanism acts on. On a machine of two CPUs a
//! sender in user space (`sendmmsg` through a socket, the route, the veth) costs about as much
//! per packet as the receiver, so it saturates its own CPU first and the receiver never becomes
//! the bottleneck; and when the mechanism frees CPU time the sender speeds up, so mechanism off
//! and on would be compared at different loads. This generator builds frames in the kernel and
//! is paced, so the offered rate is the one asked for, whatever the receiver does.
//!
//! **How.** `BPF_PROG_RUN` with `BPF_F_TEST_XDP_LIVE_FRAMES` (Linux ≥ 5.18) runs an XDP program
//! `repeat` times on frames initialised from a template (`data_in`) and *transmits* every frame
//! for which the program returns `XDP_TX`, out of the device named in the context's
//! `ingress_ifindex`. For a veth that means: into the peer's ring, whose NAPI then receives the
//! frame as from a wire. The program (`src/bpf/gen.bpf.c`) writes a per-stream sequence number
//! into each frame's payload and rotates one 16-bit field (a destination port) through a list, so
//! one stream can be several flows. A thread calls it with `repeat` = the frames owed by the
//! pacing clock (at most [`Pacing::call_frames_max`] per call, streams interleaved call by call).
//! No socket, route or qdisc is on the sending side, and the kernel's per-frame cost is a few
//! hundred ns (a page-pool frame and the veth's `ndo_xdp_xmit`).
//!
//! **The dispatcher pitfall.** Each `BPF_PROG_RUN` of an XDP program installs the program in
//! the XDP dispatcher (`bpf_prog_change_xdp`) and removes it at the end, and each of those
//! changes rewrites the dispatcher's trampoline image and waits for the machine to quiesce:
//! ~20 ms per call on the project's VMs, whatever `repeat` is, which caps a paced generator at a
//! few dozen calls per second. A program that is attached somewhere stays in the dispatcher, so
//! the changes become reference counts. [`Generator::load`] therefore attaches the program to a
//! spare veth pair of its own (both ends down, nothing ever arrives there), recorded in the run's
//! ledger like everything else. `tests/gen.rs` measures a call both ways.
//!
//! **The page-pool pitfall.** Each live-frames call creates a page pool for its frames and
//! registers it as an XDP memory model, taking an id from a machine-wide pool of 65,534
//! (`MEM_ID_MAX` in net/core/xdp.c, Linux 6.18: `xdp_reg_mem_model` → `ida_alloc_range`).
//! A pool whose frames are still in flight when the call returns (in the receiver's ring, a
//! backlog, a socket's queue) is released only when they come back, retried once a second
//! (`page_pool_release_retry`). Thousands of calls a second into a slow receiver exhaust the
//! ids, and every further call fails with ENOSPC until they return. (Our reading: on this VM,
//! 4,000-odd calls a second made every call fail with ENOSPC within seconds, with
//! `page_pool_release_retry() stalled pool shutdown` in the kernel log, and 1 ms quanta made the
//! failures stop; the id exhaustion itself was not traced in the kernel.) So the generator makes
//! few, large calls: a stream is served in quanta of [`Pacing::quantum_us`] of its frames (1 ms
//! by default: at most ~1,000 calls a second per stream), and a run reports failed calls with
//! the first error.
//!
//! **Spreading a call** ([`Stream::spread`]). A call's frames leave back to back: a quantum of
//! a fast stream reaches the receiver as one burst, which a NIC's receive path never sees (a
//! wire spaces frames evenly), and a receiver that drains its ring faster than the burst came
//! then sleeps until the next quantum. A spread stream's call sets the slots of its frames in
//! the program's stream entry (`gap_ps`, `call_t0_ns`, `call_seq0` in gen.h), and the program
//! spins on `bpf_ktime_get_ns` (CLOCK_MONOTONIC, as `Instant`) until each frame's slot before
//! returning `XDP_TX`; the kernel flushes each batch to the device as it is built, and the
//! batch is cut to [`SPREAD_BATCH_NS`] of slots. The number of calls does not change (the
//! page-pool pitfall); the generator's CPU pays the spin, so a spread is a fraction of the
//! quantum below 1 and that CPU's other tasks keep the rest (a SCHED_FIFO thread spinning the
//! whole time would leave them only the fair server's 50 ms a second, Linux ≥ 6.12).
//!
//! **What the receiver sees.** Frames arrive on the peer device exactly as if sent by another
//! host: the veth's NAPI poll (and any XDP program attached there) runs on the CPU that called
//! `BPF_PROG_RUN` (it schedules the peer's NAPI there), or in the peer's NAPI kthread when
//! threaded NAPI is on. A frame the peer's ring (256 frames, `VETH_RING_SIZE`) cannot take is
//! dropped there and counted in the peer device's `rx_dropped`: that is the receiver's loss, as
//! a NIC's full RX ring is, not the generator's.
//!
//! ## API
//!
//! ```no_run
//! # use hostsim_live::harness::{LiveRun, LiveError};
//! # use hostsim_live::gen::{Generator, Stream, Pacing, udp4_frame, Udp4};
//! # fn f(run: &LiveRun, cli: &hostsim_live::harness::Netns) -> Result<(), LiveError> {
//! // Load the program and park it on a spare veth in `cli` (both recorded in the run's ledger).
//! let gen = Generator::load(run, cli)?;
//! let frame = udp4_frame(&Udp4 { src_mac: [2, 0, 0, 0, 0, 0], dst_mac: [2, 0, 0, 0, 0, 1],
//!     src_ip: [198, 18, 0, 2], dst_ip: [198, 18, 0, 1], src_port: 40000, dst_port: 5000, payload: 18 });
//! // Stream 0: 34,000 frames/s out of `cli`'s eth0; the sequence number goes at the payload.
//! let bw = Stream::new("bw", "eth0", frame, 34_000.0).seq_at(42);
//! let pacing = Pacing { cpu: Some(1), fifo_prio: Some(60), secs: 5.0, ..Pacing::default() };
//! let running = gen.start(cli, vec![bw], &pacing)?;
//! let a = running.seq();                       // exact: frames built so far, per stream
//! run.sleep(std::time::Duration::from_secs(2))?;
//! let b = running.seq();                       // frames a..b of each stream form the window
//! let report = running.stop();                 // sent, skipped (behind schedule), errors
//! # Ok(()) }
//! ```
//!
//! A stream's achieved rate is `sent / elapsed`; a point whose generator fell behind its
//! schedule (skipped frames, a lower achieved rate) did not offer what it claims and must be
//! marked invalid by the experiment. The generator thread runs at `SCHED_FIFO` when asked, so
//! the offered load does not depend on the receiver's CPU use; it stops after `secs` or
//! `frames_max`, and on [`Running::stop`] or drop.

use crate::harness::{failed, LiveError, LiveRun, Netns};
use libbpf_rs::libbpf_sys;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[allow(clippy::all, dead_code, unused_imports, non_camel_case_types)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/gen.skel.rs"));
}
use skel::{GenSkel, GenSkelBuilder};

/// Streams one generator serves (`GEN_STREAMS_MAX` in gen.h).
pub const STREAMS_MAX: usize = 8;
/// Values a stream's rotated field takes in turn (`GEN_VALS_MAX`).
pub const VALS_MAX: usize = 64;
/// The spare veth pair's names (in the generator's namespace).
pub const SPARE: (&str, &str) = ("gspare0", "gspare1");

/// One stream: a template frame sent out of `dev` at `rate_pps`.
#[derive(Clone, Debug)]
pub struct Stream {
    pub name: String,
    /// Device in the generator's namespace (a veth: frames go to its peer).
    pub dev: String,
    /// The template. Its source MAC's last byte is overwritten with the stream's index.
    pub frame: Vec<u8>,
    pub rate_pps: f64,
    /// Byte offset of a 16-bit field and the values (host order) it takes in turn.
    pub rotate: Option<(usize, Vec<u16>)>,
    /// Byte offset of the 64-bit sequence number (little-endian) written into every frame.
    pub seq_off: Option<usize>,
    /// Keep the UDP checksum of an Ethernet + IPv4 (20-byte header) + UDP frame right, frame
    /// by frame, after the two fields above change ([`Stream::udp_csum`]).
    pub udp_csum: bool,
    /// This stream's quantum, µs (None: [`Pacing::quantum_us`]).
    pub quantum_us: Option<f64>,
    /// Spread each call's frames evenly over this fraction of the stream's quantum instead of
    /// sending them back to back ([`Stream::spread`]; None: back to back).
    pub spread: Option<f64>,
}

impl Stream {
    pub fn new(name: &str, dev: &str, frame: Vec<u8>, rate_pps: f64) -> Stream {
        Stream {
            name: name.into(),
            dev: dev.into(),
            frame,
            rate_pps,
            rotate: None,
            seq_off: None,
            udp_csum: false,
            quantum_us: None,
            spread: None,
        }
    }

    /// Serve this stream in quanta of `us` microseconds of its frames instead of the pacing's
    /// (a slow stream's calls can be spaced wider than a fast one's: the page-pool pitfall
    /// limits the calls of all streams together).
    pub fn quantum_us(mut self, us: f64) -> Stream {
        self.quantum_us = Some(us);
        self
    }

    /// Spread each call's frames evenly over `frac` (0 < frac ≤ 1) of the stream's quantum: the
    /// program spins on the clock until each frame's slot (`gen.bpf.c`), and the kernel hands
    /// the device batches of at most [`SPREAD_BATCH_NS`] of frames, so the receiver gets a
    /// train at `rate / frac` for that part of each quantum instead of the whole quantum at
    /// once. It costs the generator's CPU the spin (about `frac` of it at any rate); keep `frac`
    /// below 1 so that the thread (at SCHED_FIFO) leaves that CPU's other tasks some time.
    pub fn spread(mut self, frac: f64) -> Stream {
        self.spread = Some(frac);
        self
    }

    /// Rotate the 16-bit field at `off` through `vals` (e.g. destination ports), frame by frame.
    pub fn rotate(mut self, off: usize, vals: Vec<u16>) -> Stream {
        self.rotate = Some((off, vals));
        self
    }

    /// Write the frame's sequence number at byte `off` (8 bytes, little-endian).
    pub fn seq_at(mut self, off: usize) -> Stream {
        self.seq_off = Some(off);
        self
    }

    /// Give every frame a right UDP checksum (the frame: Ethernet, a 20-byte IPv4 header, UDP;
    /// the rotated field and the sequence number inside the UDP segment at even offsets). The
    /// program adds the two fields it wrote to the template's partial sum ([`udp4_partial_sum`])
    /// and writes the complement, as [`gen_udp_checksum`] does.
    pub fn udp_csum(mut self) -> Stream {
        self.udp_csum = true;
        self
    }
}

/// How the generator thread runs.
#[derive(Clone, Debug)]
pub struct Pacing {
    /// Pin the thread to this CPU.
    pub cpu: Option<usize>,
    /// Run it at SCHED_FIFO with this priority (1..=99): an offered load that does not depend on
    /// what else the CPU runs. Must not be inside a cgroup without an RT budget.
    pub fifo_prio: Option<i32>,
    /// Stop after this long.
    pub secs: f64,
    /// Stop after this many frames (all streams).
    pub frames_max: u64,
    /// Frames per `BPF_PROG_RUN` call at most (the interleaving of streams).
    pub call_frames_max: u32,
    /// A stream further behind its schedule than this skips frames instead of bursting.
    pub lag_ms_max: f64,
    /// A stream is sent to in calls of at least this many microseconds of its frames (or its
    /// last frames): each `BPF_PROG_RUN` call has a fixed cost (the syscall, a page pool
    /// created and filled for the call, a wake-up of the receiving NAPI), which calls of one
    /// frame each would pay per frame, and holds an XDP memory-model id while its frames are in
    /// flight (the page-pool pitfall above).
    pub quantum_us: f64,
    /// Frames per batch within a call (1..=256, the kernel's `TEST_XDP_MAX_BATCH`): the kernel
    /// transmits and flushes each batch before building the next (`xdp_test_run_batch`), so a
    /// smaller batch hands the receiver's ring (a veth's holds 256 frames) fewer frames at once,
    /// at the same number of calls.
    pub batch_max: u32,
}

impl Default for Pacing {
    fn default() -> Pacing {
        Pacing {
            cpu: None,
            fifo_prio: None,
            secs: 10.0,
            frames_max: 500_000_000,
            call_frames_max: 1024,
            lag_ms_max: 5.0,
            quantum_us: 1000.0,
            batch_max: GEN_BATCH_MAX,
        }
    }
}

/// Frames per page-pool batch of one call (the kernel's `TEST_XDP_MAX_BATCH` is 256).
const GEN_BATCH_MAX: u32 = 256;

/// A spread stream's batch spans at most this long (its frames' slots), so the kernel flushes
/// frames to the device at least this often and the spin never keeps bottom halves off the
/// generator's CPU for longer (`xdp_test_run_batch` runs a batch under `local_bh_disable`).
pub const SPREAD_BATCH_NS: f64 = 20_000.0;

/// The longest a generator may run, seconds.
pub const SECS_MAX: f64 = 600.0;
/// The fastest a stream may be asked to run (far above what a CPU can build).
pub const RATE_PPS_MAX: f64 = 5e7;

/// What one stream did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamReport {
    pub name: String,
    pub rate_pps: f64,
    /// Frames built and handed to the device (the program's runs).
    pub sent: u64,
    /// Frames the schedule owed that were never built (the generator fell behind).
    pub skipped: u64,
    pub calls: u64,
    /// Wall time spent inside this stream's calls, seconds (a spread stream's includes the spin).
    pub call_s: f64,
    /// Calls that failed (their frames count as skipped), and the first error.
    pub errors: u64,
    pub first_error: Option<String>,
}

/// What the generator thread did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub streams: Vec<StreamReport>,
    pub elapsed_s: f64,
    /// Why the thread could not start (setns, affinity, SCHED_FIFO), if it could not.
    pub setup_error: Option<String>,
}

/// The loaded generator program, parked on the spare veth.
pub struct Generator {
    skel: GenSkel<'static>,
    _spare: Option<libbpf_rs::Link>,
}

impl Generator {
    /// Load the program and attach it to a spare veth pair created in `ns` (recorded in `run`'s
    /// ledger): the dispatcher pitfall above.
    pub fn load(run: &LiveRun, ns: &Netns) -> Result<Generator, LiveError> {
        let mut g = Generator::load_detached()?;
        run.spare_veth(ns, SPARE.0, SPARE.1)?;
        let link = crate::sys::in_netns(&ns.file()?, || {
            let idx = crate::sys::ifindex(SPARE.0)?;
            g.skel.progs.gen_xdp.attach_xdp(idx as i32).map_err(io::Error::other)
        })
        .map_err(|e| LiveError::Unsupported(format!("attaching the generator to its spare veth: {e}")))?;
        let prog_id = g.prog_id();
        let link_id = link.info().ok().map(|i| i.id);
        run.record_xdp(Some(ns), SPARE.0, prog_id, link_id)?;
        g._spare = Some(link);
        Ok(g)
    }

    /// Load the program without parking it anywhere (every call then pays the dispatcher
    /// update: for tests and for measuring the pitfall).
    pub fn load_detached() -> Result<Generator, LiveError> {
        let obj: &'static mut MaybeUninit<libbpf_rs::OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
        let open = GenSkelBuilder::default()
            .open(obj)
            .map_err(|e| LiveError::Unsupported(format!("opening the generator object: {e}")))?;
        let skel = open
            .load()
            .map_err(|e| LiveError::Unsupported(format!("loading the generator program (needs root and BPF): {e}")))?;
        Ok(Generator { skel, _spare: None })
    }

    /// The kernel's id of the program.
    pub fn prog_id(&self) -> u32 {
        libbpf_rs::Program::id_from_fd(self.skel.progs.gen_xdp.as_fd()).unwrap_or(0)
    }

    fn streams_ptr(&self) -> *mut skel::types::gen_stream {
        let bss = self.skel.maps.bss_data.as_deref().expect("the generator has a .bss (streams)");
        bss.streams.as_ptr() as *mut skel::types::gen_stream
    }

    /// Start `streams` (devices in namespace `ns`) in a thread paced by `p`.
    pub fn start(&self, ns: &Netns, streams: Vec<Stream>, p: &Pacing) -> Result<Running<'_>, LiveError> {
        if streams.is_empty() || streams.len() > STREAMS_MAX {
            return Err(failed(format!("a generator takes 1..={STREAMS_MAX} streams, got {}", streams.len())));
        }
        if !(p.secs.is_finite() && p.secs > 0.0 && p.secs <= SECS_MAX) {
            return Err(failed(format!("generator: secs must be in (0, {SECS_MAX}], got {}", p.secs)));
        }
        if !((1..=4096).contains(&p.call_frames_max) && p.lag_ms_max.is_finite() && p.lag_ms_max > 0.0) {
            return Err(failed("generator: call_frames_max must be in 1..=4096 and lag_ms_max > 0".to_string()));
        }
        if !(1..=GEN_BATCH_MAX).contains(&p.batch_max) {
            return Err(failed(format!("generator: batch_max must be in 1..={GEN_BATCH_MAX}")));
        }
        if !(p.quantum_us.is_finite() && (0.0..=p.lag_ms_max * 1e3).contains(&p.quantum_us)) {
            return Err(failed("generator: quantum_us must be in 0..=lag_ms_max".to_string()));
        }
        if let Some(s) = streams
            .iter()
            .find(|s| s.quantum_us.is_some_and(|q| !(q.is_finite() && (0.0..=p.lag_ms_max * 1e3).contains(&q))))
        {
            return Err(failed(format!("generator: stream {}: quantum_us must be in 0..=lag_ms_max", s.name)));
        }
        if let Some(s) = streams.iter().find(|s| s.spread.is_some_and(|f| !(f.is_finite() && f > 0.0 && f <= 1.0))) {
            return Err(failed(format!("generator: stream {}: spread must be in (0, 1]", s.name)));
        }
        let netns = ns.file()?;
        let base = self.streams_ptr();
        let mut prepared = Vec::new();
        for (i, s) in streams.iter().enumerate() {
            if !(s.rate_pps.is_finite() && s.rate_pps >= 0.0 && s.rate_pps <= RATE_PPS_MAX) {
                return Err(failed(format!(
                    "stream {}: rate {} pkt/s out of 0..={RATE_PPS_MAX:e}",
                    s.name, s.rate_pps
                )));
            }
            if s.frame.len() < 14 || s.frame.len() > 1514 {
                return Err(failed(format!("stream {}: a frame of {} bytes (14..=1514)", s.name, s.frame.len())));
            }
            let mut frame = s.frame.clone();
            frame[11] = i as u8; // the stream's index: the source MAC's last byte
            let mut cfg: skel::types::gen_stream = unsafe { std::mem::zeroed() };
            if let Some((off, vals)) = &s.rotate {
                if vals.is_empty() || vals.len() > VALS_MAX || *off < 12 || off + 2 > frame.len() {
                    return Err(failed(format!(
                        "stream {}: rotate 1..={VALS_MAX} values of a field inside the frame",
                        s.name
                    )));
                }
                cfg.rot_off = *off as u32;
                cfg.nvals = vals.len() as u32;
                for (j, v) in vals.iter().enumerate() {
                    cfg.vals[j] = v.to_be();
                }
            }
            if let Some(off) = s.seq_off {
                if off < 12 || off + 8 > frame.len() {
                    return Err(failed(format!("stream {}: the sequence number must lie inside the frame", s.name)));
                }
                cfg.seq_off = off as u32;
            }
            if s.udp_csum {
                let fields: Vec<(usize, usize)> =
                    s.rotate.iter().map(|(o, _)| (*o, 2)).chain(s.seq_off.map(|o| (o, 8))).collect();
                let inside = |(o, n): (usize, usize)| o >= UDP4_HDR_OFF && o % 2 == 0 && o + n <= frame.len();
                if frame.len() < UDP4_PAYLOAD_OFF
                    || frame[14] != 0x45
                    || frame[23] != 17
                    || !fields.iter().all(|f| inside(*f))
                {
                    return Err(failed(format!(
                        "stream {}: a UDP checksum needs an IPv4 (20-byte header) UDP frame, its rotated field and sequence number in the UDP segment at even offsets",
                        s.name
                    )));
                }
                let mut zeroed = fields;
                zeroed.push((UDP4_CSUM_OFF, 2));
                cfg.csum_off = UDP4_CSUM_OFF as u16;
                cfg.csum_base = udp4_partial_sum(&frame, &zeroed);
            }
            // SAFETY: `base` points at the mmapped .bss array of STREAMS_MAX entries, valid while
            // `self` lives; the program only reads these fields (and writes `next`).
            unsafe { std::ptr::write_volatile(base.add(i), cfg) };
            prepared.push(Prepared {
                frame,
                dev: s.dev.clone(),
                rate_pps: s.rate_pps,
                name: s.name.clone(),
                quantum_us: s.quantum_us.unwrap_or(p.quantum_us),
                spread: s.spread,
            });
        }
        let prog = self
            .skel
            .progs
            .gen_xdp
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| failed(format!("dup of the program fd: {e}")))?;
        let stop = Arc::new(AtomicBool::new(false));
        let p = p.clone();
        let stop2 = Arc::clone(&stop);
        // The thread writes spread streams' call fields in the program's .bss; `Running` joins
        // it before `self` (which owns the mapping) can go.
        let bss = Bss(base);
        let handle = std::thread::Builder::new()
            .name("hostsim-gen".into())
            .spawn(move || pace(prog, netns, prepared, p, stop2, bss))
            .map_err(|e| failed(format!("starting the generator thread: {e}")))?;
        Ok(Running { gen: self, n: streams.len(), stop, handle: Some(handle) })
    }
}

struct Prepared {
    name: String,
    dev: String,
    frame: Vec<u8>,
    rate_pps: f64,
    quantum_us: f64,
    spread: Option<f64>,
}

/// The program's stream array, handed to the pacing thread.
struct Bss(*mut skel::types::gen_stream);
// SAFETY: the mapping outlives the thread (`Running` joins it on stop and on drop), and only
// that thread writes the call fields while it runs.
unsafe impl Send for Bss {}

impl Bss {
    /// Set stream `i`'s spreading for the call about to start (`gap_ps` 0: none).
    fn set_call(&self, i: usize, gap_ps: u64) {
        // SAFETY: as for `Bss`; `next` is read with a volatile load (the program writes it only
        // during calls, and this thread makes the calls).
        unsafe {
            let s = self.0.add(i);
            let next = std::ptr::read_volatile(std::ptr::addr_of!((*s).next));
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*s).call_seq0), next);
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*s).call_t0_ns), crate::sys::monotonic_ns());
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*s).gap_ps), gap_ps);
        }
    }
}

/// A spread call's slot spacing (ps) and its batch (frames): `frac / rate` apart, batches of at
/// most [`SPREAD_BATCH_NS`] of slots (at least 1 frame, at most `batch_max`).
fn spread_plan(rate_pps: f64, frac: f64, batch_max: u32) -> (u64, u32) {
    let gap_ps = (frac * 1e12 / rate_pps).round().max(1.0);
    let batch = ((SPREAD_BATCH_NS * 1e3 / gap_ps) as u32).clamp(1, batch_max);
    (gap_ps as u64, batch)
}

/// A running generator thread.
pub struct Running<'a> {
    gen: &'a Generator,
    n: usize,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Report>>,
}

impl Running<'_> {
    /// Frames built so far per stream: the sequence number the next frame will carry. Exact at
    /// the instant of the call (read from the program's own counter).
    pub fn seq(&self) -> Vec<u64> {
        let base = self.gen.streams_ptr();
        // SAFETY: as in `start`; an aligned 64-bit read of a counter only the program writes.
        (0..self.n).map(|i| unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*base.add(i)).next)) }).collect()
    }

    /// Has the thread finished (time or frame limit reached, or it could not start)?
    pub fn finished(&self) -> bool {
        self.handle.as_ref().is_none_or(|h| h.is_finished())
    }

    /// Stop the thread and return what it did.
    pub fn stop(mut self) -> Report {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Report {
        self.stop.store(true, Ordering::SeqCst);
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Report { setup_error: Some("the generator thread panicked".into()), ..Report::default() },
            None => Report::default(),
        }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if self.handle.is_some() {
            self.stop_inner();
        }
    }
}

/// `BPF_PROG_RUN` in live-frames mode: `repeat` frames from `frame` out of `ifindex`.
fn run_live(prog: i32, frame: &[u8], ifindex: u32, repeat: u32, batch: u32) -> io::Result<()> {
    let ctx = libbpf_sys::xdp_md {
        data: 0,
        data_end: frame.len() as u32,
        data_meta: 0,
        ingress_ifindex: ifindex,
        rx_queue_index: 0,
        egress_ifindex: 0,
    };
    // SAFETY: zeroed options are libbpf's documented starting point; pointers stay valid for the call.
    let mut o: libbpf_sys::bpf_test_run_opts = unsafe { std::mem::zeroed() };
    o.sz = std::mem::size_of::<libbpf_sys::bpf_test_run_opts>() as _;
    o.data_in = frame.as_ptr().cast();
    o.data_size_in = frame.len() as u32;
    o.ctx_in = (&ctx as *const libbpf_sys::xdp_md).cast();
    o.ctx_size_in = std::mem::size_of::<libbpf_sys::xdp_md>() as u32;
    o.repeat = repeat as i32;
    o.flags = libbpf_sys::BPF_F_TEST_XDP_LIVE_FRAMES;
    o.batch_size = batch;
    // SAFETY: a plain BPF syscall wrapper on a program fd we own.
    let r = unsafe { libbpf_sys::bpf_prog_test_run_opts(prog, &mut o) };
    if r < 0 {
        return Err(io::Error::from_raw_os_error(-r));
    }
    Ok(())
}

/// The stream index a timed call's frames carry: none of the program's streams
/// (≥ `GEN_STREAMS_MAX`), so the program drops every one of them.
pub const NO_STREAM: u8 = 0xff;

/// Time one `BPF_PROG_RUN` call of `frames` frames of `frame` out of `dev` of the calling
/// thread's namespace (for the dispatcher pitfall's test). The frames are marked as no stream's
/// ([`NO_STREAM`] in the source MAC's last byte), so the program drops them all and the call's
/// cost is the same whatever `frame`'s source MAC: a template carrying a real device's MAC
/// names the stream of that MAC's last byte, which is one of the program's 8 streams for 1
/// device in 32, and then its frames left with that stream's sequence numbers and reached the
/// receiver's sockets ahead of the test's own stream (`tests/gen.rs` failed 6 runs in 180,
/// each time with a MAC ending in 0x00–0x07).
pub fn time_call(gen: &Generator, dev: &str, frame: &[u8], frames: u32) -> io::Result<Duration> {
    let idx = crate::sys::ifindex(dev)?;
    let mut frame = frame.to_vec();
    if let Some(id) = frame.get_mut(11) {
        *id = NO_STREAM;
    }
    let t = Instant::now();
    run_live(gen.skel.progs.gen_xdp.as_fd().as_raw_fd(), &frame, idx, frames, frames.min(256))?;
    Ok(t.elapsed())
}

fn setup_thread(netns: &File, p: &Pacing) -> io::Result<()> {
    crate::sys::enter_netns(netns)?;
    if let Some(c) = p.cpu {
        crate::sys::pin_to_cpu(0, c)?;
    }
    if let Some(prio) = p.fifo_prio {
        crate::sys::set_fifo(0, prio)?;
    }
    // SAFETY: timer slack of 1 ns makes short sleeps wake on time (default 50 us).
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0);
    }
    Ok(())
}

/// The pacing loop: every stream owes `rate × elapsed` frames; each turn sends what a stream
/// owes (at most `call_frames_max` per call, streams in turn), sleeps until the next frame is
/// due when none is owed, and skips what a stream owes beyond `lag_ms_max` of its frames.
fn pace(prog: OwnedFd, netns: File, streams: Vec<Prepared>, p: Pacing, stop: Arc<AtomicBool>, bss: Bss) -> Report {
    let mut rep = Report {
        streams: streams
            .iter()
            .map(|s| StreamReport { name: s.name.clone(), rate_pps: s.rate_pps, ..StreamReport::default() })
            .collect(),
        ..Report::default()
    };
    if let Err(e) = setup_thread(&netns, &p) {
        rep.setup_error = Some(e.to_string());
        return rep;
    }
    let mut idx = Vec::new();
    for s in &streams {
        match crate::sys::ifindex(&s.dev) {
            Ok(i) => idx.push(i),
            Err(e) => {
                rep.setup_error = Some(format!("stream {}: {e}", s.name));
                return rep;
            }
        }
    }
    let fd = prog.as_raw_fd();
    let lag: Vec<u64> =
        streams.iter().map(|s| ((s.rate_pps * p.lag_ms_max * 1e-3) as u64).max(u64::from(p.call_frames_max))).collect();
    // Frames per call at least (the quantum), at most call_frames_max.
    let quantum: Vec<u64> = streams
        .iter()
        .map(|s| ((s.rate_pps * s.quantum_us * 1e-6) as u64).clamp(1, u64::from(p.call_frames_max)))
        .collect();
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs_f64(p.secs);
    let mut total = 0u64;
    'outer: while !stop.load(Ordering::Relaxed) && total < p.frames_max {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        let el = now.duration_since(t0).as_secs_f64();
        let mut any = false;
        for (i, s) in streams.iter().enumerate() {
            let r = &mut rep.streams[i];
            let due = (el * s.rate_pps) as u64;
            let mut owed = due.saturating_sub(r.sent + r.skipped);
            if owed > lag[i] {
                r.skipped += owed - lag[i];
                owed = lag[i];
            }
            let n = owed.min(u64::from(p.call_frames_max)).min(p.frames_max - total) as u32;
            if n == 0 || (u64::from(n) < quantum[i] && now + Duration::from_secs_f64(s.quantum_us * 1e-6) < deadline) {
                continue;
            }
            any = true;
            r.calls += 1;
            let batch = match s.spread {
                Some(frac) => {
                    let (gap_ps, batch) = spread_plan(s.rate_pps, frac, p.batch_max);
                    bss.set_call(i, gap_ps);
                    batch
                }
                None => p.batch_max,
            };
            let t_call = Instant::now();
            let res = run_live(fd, &s.frame, idx[i], n, n.min(batch));
            r.call_s += t_call.elapsed().as_secs_f64();
            match res {
                Ok(()) => {
                    r.sent += u64::from(n);
                    total += u64::from(n);
                }
                Err(e) => {
                    r.errors += 1;
                    r.skipped += u64::from(n);
                    r.first_error.get_or_insert_with(|| e.to_string());
                    if r.errors > 1000 {
                        break 'outer; // a device gone: no point going on
                    }
                }
            }
        }
        if !any {
            // Until the earliest stream owes its quantum.
            let next_s = streams
                .iter()
                .zip(&rep.streams)
                .zip(&quantum)
                .filter(|((s, _), _)| s.rate_pps > 0.0)
                .map(|((s, r), q)| (r.sent + r.skipped + q) as f64 / s.rate_pps)
                .fold(f64::INFINITY, f64::min);
            let wait = if next_s.is_finite() {
                (t0 + Duration::from_secs_f64(next_s)).saturating_duration_since(Instant::now())
            } else {
                Duration::from_millis(1)
            };
            std::thread::sleep(wait.clamp(Duration::from_micros(5), Duration::from_millis(1)));
        }
    }
    rep.elapsed_s = t0.elapsed().as_secs_f64();
    rep
}

/// An Ethernet + IPv4 + UDP frame's fields.
#[derive(Clone, Debug)]
pub struct Udp4 {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub src_port: u16,
    pub dst_port: u16,
    /// UDP payload bytes (at least 8 to carry a sequence number).
    pub payload: usize,
}

/// Offsets in a [`udp4_frame`]: the UDP header, its source and destination ports, its
/// checksum, and the payload.
pub const UDP4_HDR_OFF: usize = 14 + 20;
pub const UDP4_SRC_PORT_OFF: usize = 14 + 20;
pub const UDP4_DST_PORT_OFF: usize = 14 + 20 + 2;
pub const UDP4_CSUM_OFF: usize = 14 + 20 + 6;
pub const UDP4_PAYLOAD_OFF: usize = 14 + 20 + 8;

/// The frame: IPv4 header checksummed, UDP checksum 0 (none, allowed over IPv4; see
/// [`udp4_set_checksum`]), payload zero.
pub fn udp4_frame(u: &Udp4) -> Vec<u8> {
    let mut f = vec![0u8; UDP4_PAYLOAD_OFF + u.payload];
    f[0..6].copy_from_slice(&u.dst_mac);
    f[6..12].copy_from_slice(&u.src_mac);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip_len = (20 + 8 + u.payload) as u16;
    {
        let ip = &mut f[14..34];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
        ip[6] = 0x40; // DF
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&u.src_ip);
        ip[16..20].copy_from_slice(&u.dst_ip);
        let sum = ipv4_checksum(ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
    }
    f[34..36].copy_from_slice(&u.src_port.to_be_bytes());
    f[36..38].copy_from_slice(&u.dst_port.to_be_bytes());
    f[38..40].copy_from_slice(&((8 + u.payload) as u16).to_be_bytes());
    f
}

/// The IPv4 header checksum (RFC 791) of `hdr` with its checksum field zero.
pub fn ipv4_checksum(hdr: &[u8]) -> u16 {
    let mut s: u32 = hdr.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))).sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// One's-complement sum of `bytes` as host-order 16-bit words (an odd last byte padded with a
/// zero), folded to 16 bits. The sum is byte-order independent (RFC 1071 §2(B)): the complement
/// of a host-order sum, stored in host order, is the right checksum.
pub fn ones_sum_ne(bytes: &[u8], start: u32) -> u16 {
    let mut s: u64 = u64::from(start)
        + bytes.chunks(2).map(|c| u64::from(u16::from_ne_bytes([c[0], *c.get(1).unwrap_or(&0)]))).sum::<u64>();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The UDP checksum's sum over an Ethernet + IPv4 (20-byte header) + UDP frame: the
/// pseudo-header (addresses, protocol, UDP length: RFC 768) and the UDP segment, with the byte
/// ranges `zeroed` (offset, length) taken as zero; host-order words, folded.
pub fn udp4_partial_sum(frame: &[u8], zeroed: &[(usize, usize)]) -> u16 {
    let mut f = frame.to_vec();
    for &(o, n) in zeroed {
        f[o..o + n].fill(0);
    }
    let ulen = usize::from(u16::from_be_bytes([f[UDP4_HDR_OFF + 4], f[UDP4_HDR_OFF + 5]])).min(f.len() - UDP4_HDR_OFF);
    let mut pseudo = [0u8; 12];
    pseudo[0..8].copy_from_slice(&f[26..34]);
    pseudo[9] = 17;
    pseudo[10..12].copy_from_slice(&f[UDP4_HDR_OFF + 4..UDP4_HDR_OFF + 6]);
    ones_sum_ne(&f[UDP4_HDR_OFF..UDP4_HDR_OFF + ulen], u32::from(ones_sum_ne(&pseudo, 0)))
}

/// What the generator program writes as a frame's UDP checksum: `base` ([`udp4_partial_sum`]
/// of the template) plus the sequence number's four words and the rotated field (host order,
/// as they lie in the frame), complemented; 0 becomes 0xffff (0 means "none", RFC 768).
pub fn gen_udp_checksum(base: u16, seq: Option<u64>, rot: Option<u16>) -> u16 {
    let mut b = Vec::new();
    if let Some(q) = seq {
        b.extend_from_slice(&q.to_le_bytes());
    }
    if let Some(v) = rot {
        b.extend_from_slice(&v.to_ne_bytes());
    }
    let c = !ones_sum_ne(&b, u32::from(base));
    if c == 0 {
        0xffff
    } else {
        c
    }
}

/// Write the right UDP checksum into a [`udp4_frame`].
pub fn udp4_set_checksum(frame: &mut [u8]) {
    let c = !udp4_partial_sum(frame, &[(UDP4_CSUM_OFF, 2)]);
    frame[UDP4_CSUM_OFF..UDP4_CSUM_OFF + 2].copy_from_slice(&(if c == 0 { 0xffff } else { c }).to_ne_bytes());
}

/// Is a [`udp4_frame`]'s UDP checksum present and right (the receiver's check: the sum over
/// pseudo-header and segment, checksum included, is all ones)?
pub fn udp4_checksum_ok(frame: &[u8]) -> bool {
    frame[UDP4_CSUM_OFF..UDP4_CSUM_OFF + 2] != [0, 0] && udp4_partial_sum(frame, &[]) == 0xffff
}

/// A device's MAC address in namespace `ns` (`/sys/class/net/DEV/address`).
pub fn mac_of(ns: &Netns, dev: &str) -> Result<[u8; 6], LiveError> {
    let t = crate::netns::read_in(Some(&ns.name), &format!("/sys/class/net/{dev}/address")).map_err(failed)?;
    parse_mac(t.trim()).ok_or_else(|| failed(format!("{dev} in {}: not a MAC address: {t:?}", ns.name)))
}

pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let v: Vec<u8> = s.split(':').map(|h| u8::from_str_radix(h, 16)).collect::<Result<_, _>>().ok()?;
    v.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_calls_slots_and_batches() {
        // 2 Mpkt/s over 3/4 of each quantum: slots 375 ns apart, batches of 53 capped at 32.
        assert_eq!(spread_plan(2e6, 0.75, 32), (375_000, 32));
        // 34,000/s spread whole: ~29.4 us apart, longer than a batch may span: one frame each.
        assert_eq!(spread_plan(34_000.0, 1.0, 32), (29_411_765, 1));
        // 1 Mpkt/s whole: 1 us apart, 20 frames per batch (20 us).
        assert_eq!(spread_plan(1e6, 1.0, 256), (1_000_000, 20));
    }

    #[test]
    fn the_ipv4_checksum_of_a_known_header() {
        // RFC 1071's worked example style: a header whose checksum is known (Wikipedia's).
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0, 0, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00,
            0xc7,
        ];
        assert_eq!(ipv4_checksum(&h), 0xb861);
        let f = udp4_frame(&Udp4 {
            src_mac: [2; 6],
            dst_mac: [4; 6],
            src_ip: [198, 18, 0, 2],
            dst_ip: [198, 18, 0, 1],
            src_port: 1,
            dst_port: 5000,
            payload: 18,
        });
        assert_eq!(ipv4_checksum(&f[14..34]), 0, "a checksummed header sums to zero");
        assert_eq!(u16::from_be_bytes([f[UDP4_DST_PORT_OFF], f[UDP4_DST_PORT_OFF + 1]]), 5000);
        assert_eq!(f.len(), UDP4_PAYLOAD_OFF + 18);
    }

    #[test]
    fn the_generators_udp_checksum_is_right_for_every_sequence_number_and_port() {
        let mut f = udp4_frame(&Udp4 {
            src_mac: [2; 6],
            dst_mac: [4; 6],
            src_ip: [198, 18, 0, 2],
            dst_ip: [198, 18, 1, 2],
            src_port: 0,
            dst_port: 9,
            payload: 18,
        });
        // A known UDP checksum (computed by hand-independent code: the RFC 1071 big-endian sum).
        let be_sum = |b: &[u8]| -> u16 {
            let mut s: u32 = b.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))).sum();
            while s > 0xffff {
                s = (s & 0xffff) + (s >> 16);
            }
            s as u16
        };
        let zeroed = [(UDP4_SRC_PORT_OFF, 2), (UDP4_PAYLOAD_OFF, 8), (UDP4_CSUM_OFF, 2)];
        let base = udp4_partial_sum(&f, &zeroed);
        for (seq, port) in [(0u64, 40000u16), (1, 40001), (0xffff_ffff, 40015), (123_456_789_012, 1), (u64::MAX, 65535)]
        {
            f[UDP4_SRC_PORT_OFF..UDP4_SRC_PORT_OFF + 2].copy_from_slice(&port.to_be_bytes());
            f[UDP4_PAYLOAD_OFF..UDP4_PAYLOAD_OFF + 8].copy_from_slice(&seq.to_le_bytes());
            let rot = u16::from_ne_bytes(port.to_be_bytes());
            let c = gen_udp_checksum(base, Some(seq), Some(rot));
            f[UDP4_CSUM_OFF..UDP4_CSUM_OFF + 2].copy_from_slice(&c.to_ne_bytes());
            assert!(udp4_checksum_ok(&f), "seq {seq} port {port}");
            // The same check written the RFC's way: big-endian words, pseudo-header first.
            let mut pseudo = f[26..34].to_vec();
            pseudo.extend_from_slice(&[0, 17]);
            pseudo.extend_from_slice(&f[38..40]);
            pseudo.extend_from_slice(&f[UDP4_HDR_OFF..]);
            assert_eq!(be_sum(&pseudo), 0xffff, "seq {seq} port {port}");
            let mut g = f.clone();
            udp4_set_checksum(&mut g);
            assert_eq!(g, f, "the full computation agrees with the incremental one");
            // One flipped payload bit is caught.
            let mut bad = f.clone();
            bad[UDP4_PAYLOAD_OFF + 9] ^= 0x10;
            assert!(!udp4_checksum_ok(&bad));
        }
        f[UDP4_CSUM_OFF..UDP4_CSUM_OFF + 2].fill(0);
        assert!(!udp4_checksum_ok(&f), "no checksum is not a right one");
    }

    #[test]
    fn macs_parse() {
        assert_eq!(parse_mac("02:ab:00:00:00:01"), Some([2, 0xab, 0, 0, 0, 1]));
        assert_eq!(parse_mac("02:ab:00"), None);
    }
}
