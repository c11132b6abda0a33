//! takeuchi-symbiose's `split-afxdp` router: paper 003's functional split as the paper built it,
//! a **driver thread** and an **IP thread** on two CPUs exchanging buffers in bulk every 5 ms
//! (「各OSに5msごとに周期駆動する一括送信スレッド及びポーリングスレッドを配置する」), in user
//! space over AF_XDP (super::xsk) on this kernel's veths.
//!
//! ```text
//!  in0 (rtr) ─ XDP symb_rtr: redirect to the XSKMAP entry of queue 0
//!     │  (NAPI kthread, CPU 0: the kernel copies each frame into a UMEM chunk taken from
//!     │   the fill ring and posts its descriptor on the RX ring: XDP_COPY, no zero-copy on veth)
//!     ▼
//!  driver thread (CPU 0, SCHED_FIFO): every period (5 ms) takes the RX ring whole, splices it
//!     │  into the queue to the IP thread (one lock), takes back the free chunks the IP thread
//!     │  returned (one lock) and refills the fill ring with them
//!     ▼
//!  IP thread (CPU 1, SCHED_FIFO): every period takes the queue whole (one lock); per frame the
//!     │  IP half of ip_forward (TTL check and decrement, the header checksum updated
//!     │  incrementally, RFC 1624 eqn. 3, as ip_decrease_ttl does; the output route; MACs of
//!     │  out0 and the sink's neighbour entry); posts the frames on the TX ring of a socket on
//!     │  out0 sharing the UMEM, kicks sendto (copy mode: one skb per frame, built and sent
//!     │  in this thread, xsk_generic_xmit → veth_xmit); takes the completion ring, and
//!     │  returns those chunks and the dropped frames' to the driver thread (one lock)
//!     ▼
//!  out0 ═veth═ snk0 (the checksum-checking sink)
//! ```
//!
//! The frames' descriptors (UMEM offsets) are the buffers the threads exchange; nothing is
//! copied between them. No thread wakes the other: each discovers the other's work at its own
//! period, as the paper's polling threads do, so there is no per-packet (nor per-batch)
//! inter-CPU wake-up, and a frame waits up to about two periods inside the router.
//!
//! What it leaves on the machine: nothing beyond the run's namespaces and the input program
//! already in the ledger. The sockets, the UMEM and the threads are the process's own and die
//! with it; the XSKMAP entry is the socket's (removed when it closes).

use super::xsk::{Desc, RingSizes, Umem, Xsk};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The forwarder's sizes and placement.
#[derive(Clone, Debug)]
pub struct AfxdpConfig {
    /// The exchange period (paper: 5 ms).
    pub period: Duration,
    pub driver_cpu: usize,
    pub ip_cpu: usize,
    pub fifo_prio: i32,
    /// UMEM chunks (2 KiB each) and ring sizes (the experiment's `umem_frames`, `ring_entries`).
    pub frames: u32,
    pub ring: u32,
}

/// The router's output: frames to `net`/`prefix` leave with these MACs (out0's, the sink's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    pub net: [u8; 4],
    pub prefix: u8,
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
}

/// What the IP half did with a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Forward,
    /// TTL ≤ 1 (ip_forward would send ICMP time exceeded; here it is dropped and counted).
    TtlExpired,
    /// No route (not the output subnet).
    NoRoute,
    /// Not IPv4 without options, or too short.
    NotIpv4,
}

/// RFC 1624 eqn. 3: the header checksum `hc` after a 16-bit word of the header changes from
/// `old` to `new`: HC' = ~(~HC + ~m + m'), in one's-complement arithmetic (the kernel's
/// csum_replace2, used by ip_decrease_ttl in include/net/ip.h). Words are the big-endian
/// values read as numbers.
pub fn csum_replace(hc: u16, old: u16, new: u16) -> u16 {
    let mut s = u32::from(!hc) + u32::from(!old) + u32::from(new);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    !(s as u16)
}

/// The IPv4 header checksum computed whole (RFC 791/1071), the checksum field taken as zero.
pub fn ipv4_csum(hdr: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for (i, w) in hdr.chunks(2).enumerate() {
        if i != 5 {
            s += u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]));
        }
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// The IP half on one Ethernet frame, in place: checks, TTL decrement with the incremental
/// checksum, MAC rewrite (ip_forward → ip_forward_finish → ip_output → neigh_output's header).
pub fn ip_forward(frame: &mut [u8], route: &Route) -> Verdict {
    if frame.len() < 34 || frame[12..14] != [0x08, 0x00] || frame[14] != 0x45 {
        return Verdict::NotIpv4;
    }
    let dst = &frame[30..34];
    let mask = if route.prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(route.prefix.min(32))) };
    if u32::from_be_bytes(dst.try_into().expect("4 bytes")) & mask != u32::from_be_bytes(route.net) & mask {
        return Verdict::NoRoute;
    }
    let ttl = frame[22];
    if ttl <= 1 {
        return Verdict::TtlExpired;
    }
    let old = u16::from_be_bytes([ttl, frame[23]]);
    let new = u16::from_be_bytes([ttl - 1, frame[23]]);
    let hc = u16::from_be_bytes([frame[24], frame[25]]);
    frame[22] = ttl - 1;
    frame[24..26].copy_from_slice(&csum_replace(hc, old, new).to_be_bytes());
    frame[0..6].copy_from_slice(&route.dst_mac);
    frame[6..12].copy_from_slice(&route.src_mac);
    Verdict::Forward
}

/// The periodic rule. A thread that slept until boundary `target` (of `t0 + k·period`) and
/// woke at `now` next sleeps until the first boundary after `now`; the boundaries passed
/// meanwhile are skipped, not caught up (what accumulated moves in one bulk move). Returns
/// (next boundary, boundaries skipped), all in ns.
pub fn next_boundary(t0: u64, period: u64, target: u64, now: u64) -> (u64, u64) {
    let k_now = now.saturating_sub(t0) / period;
    let k_target = target.saturating_sub(t0) / period;
    (t0 + (k_now + 1) * period, k_now.saturating_sub(k_target))
}

/// A queue between the two threads, moved in bulk: every call is one lock and one splice
/// (the paper's global queue `g`, a spin-locked FIFO of buffer descriptors), counted.
pub struct BulkQueue<T> {
    q: Mutex<Vec<T>>,
    ops: AtomicU64,
    moved: AtomicU64,
}

impl<T> Default for BulkQueue<T> {
    fn default() -> BulkQueue<T> {
        BulkQueue { q: Mutex::new(Vec::new()), ops: AtomicU64::new(0), moved: AtomicU64::new(0) }
    }
}

impl<T> BulkQueue<T> {
    /// Append all of `local` (emptied).
    pub fn put(&self, local: &mut Vec<T>) {
        let n = local.len() as u64;
        self.q.lock().unwrap_or_else(|p| p.into_inner()).append(local);
        self.ops.fetch_add(1, Ordering::Relaxed);
        self.moved.fetch_add(n, Ordering::Relaxed);
    }

    /// Take everything into `local`.
    pub fn take(&self, local: &mut Vec<T>) {
        local.append(&mut self.q.lock().unwrap_or_else(|p| p.into_inner()));
        self.ops.fetch_add(1, Ordering::Relaxed);
    }

    /// (queue operations, items put).
    pub fn counts(&self) -> (u64, u64) {
        (self.ops.load(Ordering::Relaxed), self.moved.load(Ordering::Relaxed))
    }
}

/// The forwarder's counters (whole run of the forwarder).
#[derive(Default)]
pub struct Stats {
    /// Descriptors the driver thread took from the RX ring.
    pub rx: AtomicU64,
    /// Frames the IP thread forwarded (posted to the TX ring).
    pub forwarded: AtomicU64,
    pub ttl_expired: AtomicU64,
    pub no_route: AtomicU64,
    pub not_ipv4: AtomicU64,
    /// Frames that did not fit the TX ring (dropped, their chunk returned).
    pub tx_ring_full: AtomicU64,
    /// Completions taken (frames the kernel transmitted or dropped at the device).
    pub completed: AtomicU64,
    pub kicks: AtomicU64,
    pub kick_errors: AtomicU64,
    /// Periods whose boundary passed before the thread woke for it, by thread.
    pub driver_missed: AtomicU64,
    pub ip_missed: AtomicU64,
    pub driver_wakes: AtomicU64,
    pub ip_wakes: AtomicU64,
    /// Largest batch the IP thread took in one period.
    pub max_batch: AtomicU64,
}

/// A snapshot of [`Stats`] and of the sockets' XDP_STATISTICS.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub rx: u64,
    pub forwarded: u64,
    pub ttl_expired: u64,
    pub no_route: u64,
    pub not_ipv4: u64,
    pub tx_ring_full: u64,
    pub completed: u64,
    pub kicks: u64,
    pub kick_errors: u64,
    pub driver_missed: u64,
    pub ip_missed: u64,
    pub driver_wakes: u64,
    pub ip_wakes: u64,
    pub max_batch: u64,
    /// Queue operations over both queues, and frames handed from driver to IP thread.
    pub queue_ops: u64,
    pub handed: u64,
    /// The input socket's drops: no fill-ring chunk (rx_dropped) or RX ring full.
    pub xsk_rx_dropped: u64,
    pub xsk_rx_ring_full: u64,
    pub xsk_fill_empty: u64,
    pub xsk_tx_invalid: u64,
}

struct Shared {
    stop: AtomicBool,
    to_ip: BulkQueue<Desc>,
    to_driver: BulkQueue<u64>,
    stats: Stats,
    umem: Umem,
}

/// The running forwarder; dropping it stops and joins the threads, then closes the sockets.
pub struct Forwarder {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// The threads' ids: (driver, IP).
    pub tids: (u32, u32),
    rx_stats: Arc<Mutex<Option<Xsk>>>,
    tx_fd_stats: Arc<Mutex<Option<Xsk>>>,
}

use crate::sys::{monotonic_ns as now_ns, sleep_until_ns as sleep_until};

/// Pin the calling thread and give it SCHED_FIFO (the process's own thread: gone with it,
/// nothing to undo).
fn place_self(cpu: usize, prio: i32) -> io::Result<u32> {
    // SAFETY: plain system call.
    let tid = unsafe { libc::gettid() };
    crate::sys::set_affinity(0, &[cpu])?;
    crate::sys::set_fifo(0, prio)?;
    Ok(tid as u32)
}

impl Forwarder {
    /// Create the sockets (in the calling thread's network namespace: call it inside the
    /// router's), fill the fill ring, start both threads. `rx_ifindex`/`tx_ifindex`: in0, out0.
    /// Returns the forwarder and the input socket's fd, for the XSKMAP entry.
    pub fn start(cfg: &AfxdpConfig, rx_ifindex: u32, tx_ifindex: u32, route: Route) -> io::Result<(Forwarder, i32)> {
        let umem = Umem::new(cfg.frames, 2048)?;
        let rx = Xsk::bind(rx_ifindex, 0, &umem, None, RingSizes { fill: cfg.ring, comp: 64, rx: cfg.ring, tx: 0 })?;
        let tx =
            Xsk::bind(tx_ifindex, 0, &umem, Some(&rx), RingSizes { fill: 64, comp: cfg.ring, rx: 0, tx: cfg.ring })?;
        let rx_fd = std::os::fd::AsRawFd::as_raw_fd(&rx.fd);
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            to_ip: BulkQueue::default(),
            to_driver: BulkQueue::default(),
            stats: Stats::default(),
            umem,
        });
        let rx = Arc::new(Mutex::new(Some(rx)));
        let tx = Arc::new(Mutex::new(Some(tx)));
        let period = cfg.period.as_nanos() as u64;
        let t0 = now_ns();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel::<io::Result<(usize, u32)>>();
        let mut threads = Vec::new();
        {
            let (sh, rx, tid_tx, cpu, prio) =
                (shared.clone(), rx.clone(), tid_tx.clone(), cfg.driver_cpu, cfg.fifo_prio);
            threads.push(std::thread::Builder::new().name("hostsim-xsk-drv".into()).spawn(move || {
                let tid = match place_self(cpu, prio) {
                    Ok(t) => t,
                    Err(e) => return drop(tid_tx.send(Err(e))),
                };
                let _ = tid_tx.send(Ok((0, tid)));
                driver_loop(&sh, &rx, t0, period);
            })?);
        }
        {
            let (sh, tx, cpu, prio) = (shared.clone(), tx.clone(), cfg.ip_cpu, cfg.fifo_prio);
            threads.push(std::thread::Builder::new().name("hostsim-xsk-ip".into()).spawn(move || {
                let tid = match place_self(cpu, prio) {
                    Ok(t) => t,
                    Err(e) => return drop(tid_tx.send(Err(e))),
                };
                let _ = tid_tx.send(Ok((1, tid)));
                ip_loop(&sh, &tx, t0, period, &route);
            })?);
        }
        let mut fw = Forwarder { shared, threads, tids: (0, 0), rx_stats: rx, tx_fd_stats: tx };
        for _ in 0..2 {
            match tid_rx.recv_timeout(Duration::from_secs(2)) {
                Ok(Ok((0, t))) => fw.tids.0 = t,
                Ok(Ok((_, t))) => fw.tids.1 = t,
                Ok(Err(e)) => return Err(io::Error::new(e.kind(), format!("placing a forwarder thread: {e}"))),
                Err(_) => return Err(io::Error::other("a forwarder thread did not start")),
            }
        }
        Ok((fw, rx_fd))
    }

    pub fn counts(&self) -> Counts {
        let s = &self.shared.stats;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (o1, handed) = self.shared.to_ip.counts();
        let (o2, _) = self.shared.to_driver.counts();
        let mut c = Counts {
            rx: g(&s.rx),
            forwarded: g(&s.forwarded),
            ttl_expired: g(&s.ttl_expired),
            no_route: g(&s.no_route),
            not_ipv4: g(&s.not_ipv4),
            tx_ring_full: g(&s.tx_ring_full),
            completed: g(&s.completed),
            kicks: g(&s.kicks),
            kick_errors: g(&s.kick_errors),
            driver_missed: g(&s.driver_missed),
            ip_missed: g(&s.ip_missed),
            driver_wakes: g(&s.driver_wakes),
            ip_wakes: g(&s.ip_wakes),
            max_batch: g(&s.max_batch),
            queue_ops: o1 + o2,
            handed,
            ..Counts::default()
        };
        // XDP_STATISTICS is a getsockopt: safe while the owning thread uses the rings.
        if let Some(st) = self.rx_stats.lock().ok().and_then(|x| x.as_ref().and_then(|x| x.statistics().ok())) {
            c.xsk_rx_dropped = st.rx_dropped;
            c.xsk_rx_ring_full = st.rx_ring_full;
            c.xsk_fill_empty = st.rx_fill_ring_empty_descs;
        }
        if let Some(st) = self.tx_fd_stats.lock().ok().and_then(|x| x.as_ref().and_then(|x| x.statistics().ok())) {
            c.xsk_tx_invalid = st.tx_invalid_descs;
        }
        c
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // The sockets close here (the XSKMAP entry goes with the input one), before the UMEM.
        drop(self.tx_fd_stats.lock().map(|mut x| x.take()));
        drop(self.rx_stats.lock().map(|mut x| x.take()));
    }
}

fn bump_max(a: &AtomicU64, v: u64) {
    a.fetch_max(v, Ordering::Relaxed);
}

/// Wait for the next boundary; count the ones passed.
fn wait_period(t0: u64, period: u64, next: &mut u64, missed: &AtomicU64) {
    sleep_until(*next);
    let (n, m) = next_boundary(t0, period, *next, now_ns());
    // A boundary passed while the thread worked or waited to run: skipped, not caught up.
    missed.fetch_add(m, Ordering::Relaxed);
    *next = n;
}

/// The driver thread: the RX ring whole into the queue to the IP thread, free chunks back into
/// the fill ring, once per period.
fn driver_loop(sh: &Shared, sock: &Mutex<Option<Xsk>>, t0: u64, period: u64) {
    // Every chunk is free at first; the fill ring takes as many as it holds at the first
    // period. The socket is locked only while the thread works (XDP_STATISTICS is read
    // through the same lock).
    let mut free: Vec<u64> = (0..u64::from(sh.umem.frames)).rev().map(|i| i * u64::from(sh.umem.frame_size)).collect();
    let mut batch: Vec<Desc> = Vec::new();
    let mut next = t0;
    while !sh.stop.load(Ordering::Relaxed) {
        wait_period(t0, period, &mut next, &sh.stats.driver_missed);
        sh.stats.driver_wakes.fetch_add(1, Ordering::Relaxed);
        let mut guard = sock.lock().unwrap_or_else(|p| p.into_inner());
        let Some(x) = guard.as_mut() else { return };
        let n = x.rx.as_mut().expect("the input socket has an RX ring").consume(&mut batch);
        sh.stats.rx.fetch_add(n as u64, Ordering::Relaxed);
        sh.to_ip.put(&mut batch);
        sh.to_driver.take(&mut free);
        let fill = x.fill.as_mut().expect("the input socket has a fill ring");
        let k = fill.produce(&free[free.len().saturating_sub(fill.room())..]);
        free.truncate(free.len() - k);
    }
}

/// The IP thread: the queue whole, the IP half per frame, the TX ring and its kick, the
/// completion ring, free chunks back to the driver thread, once per period.
fn ip_loop(sh: &Shared, sock: &Mutex<Option<Xsk>>, t0: u64, period: u64, route: &Route) {
    let mut batch: Vec<Desc> = Vec::new();
    let mut out: Vec<Desc> = Vec::new();
    let mut free: Vec<u64> = Vec::new();
    let mut done: Vec<u64> = Vec::new();
    let mut next = t0 + period;
    while !sh.stop.load(Ordering::Relaxed) {
        wait_period(t0, period, &mut next, &sh.stats.ip_missed);
        sh.stats.ip_wakes.fetch_add(1, Ordering::Relaxed);
        let mut guard = sock.lock().unwrap_or_else(|p| p.into_inner());
        let Some(x) = guard.as_mut() else { return };
        sh.to_ip.take(&mut batch);
        bump_max(&sh.stats.max_batch, batch.len() as u64);
        for d in batch.drain(..) {
            // SAFETY: the descriptor came from the RX ring through the queue: this thread owns
            // the chunk until it posts it to the TX ring or returns it.
            let frame = unsafe { sh.umem.frame(d.addr, d.len) };
            match ip_forward(frame, route) {
                Verdict::Forward => out.push(Desc { addr: d.addr, len: d.len, options: 0 }),
                v => {
                    let c = match v {
                        Verdict::TtlExpired => &sh.stats.ttl_expired,
                        Verdict::NoRoute => &sh.stats.no_route,
                        _ => &sh.stats.not_ipv4,
                    };
                    c.fetch_add(1, Ordering::Relaxed);
                    free.push(sh.umem.chunk_of(d.addr));
                }
            }
        }
        let txr = x.tx.as_mut().expect("the output socket has a TX ring");
        let posted = txr.produce(&out);
        sh.stats.forwarded.fetch_add(posted as u64, Ordering::Relaxed);
        sh.stats.tx_ring_full.fetch_add((out.len() - posted) as u64, Ordering::Relaxed);
        free.extend(out.drain(posted..).map(|d| sh.umem.chunk_of(d.addr)));
        out.clear();
        // Kick until the kernel has taken the TX ring (copy mode sends ≤ 32 per call), taking
        // completions as they come (the kernel will not send without completion room). When
        // four calls in a row move nothing (the sink's veth ring is full: veth_xmit stops its
        // queue until the sink's NAPI kthread drains it), sleep 20 µs so that it can run; stop
        // 50 µs before the next boundary: what is left goes out in the next period.
        let mut idle = 0;
        while x.tx.as_ref().expect("TX ring").pending() > 0 && !sh.stop.load(Ordering::Relaxed) {
            let before = x.tx.as_ref().expect("TX ring").pending();
            sh.stats.kicks.fetch_add(1, Ordering::Relaxed);
            if x.kick().is_err() {
                sh.stats.kick_errors.fetch_add(1, Ordering::Relaxed);
                break;
            }
            let n = x.comp.as_mut().expect("the output socket has a completion ring").consume(&mut done);
            sh.stats.completed.fetch_add(n as u64, Ordering::Relaxed);
            idle = if x.tx.as_ref().expect("TX ring").pending() < before { 0 } else { idle + 1 };
            if idle >= 4 {
                let now = now_ns();
                if now + 50_000 >= next {
                    break;
                }
                sleep_until(now + 20_000);
                idle = 0;
            }
        }
        let n = x.comp.as_mut().expect("completion ring").consume(&mut done);
        sh.stats.completed.fetch_add(n as u64, Ordering::Relaxed);
        free.extend(done.drain(..).map(|a| sh.umem.chunk_of(a)));
        drop(guard);
        sh.to_driver.put(&mut free);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 20-byte IPv4 header (no options) from a seed, with its checksum right.
    fn header(seed: u64) -> [u8; 20] {
        let mut h = [0u8; 20];
        let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        for b in h.iter_mut() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            *b = (x >> 33) as u8;
        }
        h[0] = 0x45;
        let c = ipv4_csum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    }

    #[test]
    fn the_incremental_checksum_equals_a_full_recompute() {
        let mut edge = 0;
        for seed in 0..200_000u64 {
            let mut h = header(seed);
            if h[8] <= 1 {
                h[8] = 2 + (seed % 200) as u8;
                let c = ipv4_csum(&h);
                h[10..12].copy_from_slice(&c.to_be_bytes());
            }
            let old = u16::from_be_bytes([h[8], h[9]]);
            let new = u16::from_be_bytes([h[8] - 1, h[9]]);
            let inc = csum_replace(u16::from_be_bytes([h[10], h[11]]), old, new);
            h[8] -= 1;
            let full = ipv4_csum(&h);
            if full == 0 || full == 0xffff {
                edge += 1;
            }
            assert_eq!(inc, full, "seed {seed}: header {h:02x?}");
        }
        // The headers whose new checksum is 0x0000 (sum 0xffff), where an update by eqn. 2
        // (HC' = HC + m + ~m') would give -0 = 0xffff (RFC 1624 §3): they occur and agree.
        assert!(edge > 0, "no header hit the 0x0000 case");
    }

    #[test]
    fn a_header_whose_checksum_becomes_zero_is_updated_right() {
        // Build a header whose checksum after the decrement must be 0x0000.
        let mut h = [0x45, 0, 0, 0x2e, 0, 0, 0, 0, 64, 17, 0, 0, 198, 18, 0, 2, 198, 18, 1, 2];
        // Solve one free word (identification) so that the full sum after TTL-1 is 0xffff.
        for id in 0..=u16::MAX {
            h[4..6].copy_from_slice(&id.to_be_bytes());
            let mut after = h;
            after[8] -= 1;
            if ipv4_csum(&after) == 0 {
                let c = ipv4_csum(&h);
                h[10..12].copy_from_slice(&c.to_be_bytes());
                let inc = csum_replace(c, u16::from_be_bytes([64, 17]), u16::from_be_bytes([63, 17]));
                assert_eq!(inc, 0x0000);
                return;
            }
        }
        panic!("no identification gives a zero checksum");
    }

    fn route() -> Route {
        Route { net: [198, 18, 1, 0], prefix: 24, src_mac: [2, 0, 0, 0, 0, 1], dst_mac: [2, 0, 0, 0, 0, 2] }
    }

    fn frame(ttl: u8, dst: [u8; 4]) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12] = 0x08;
        let mut h = header(7);
        h[8] = ttl;
        h[9] = 17;
        h[16..20].copy_from_slice(&dst);
        h[10..12].copy_from_slice(&[0, 0]);
        let c = ipv4_csum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        f[14..34].copy_from_slice(&h);
        f
    }

    #[test]
    fn the_ip_half_decrements_the_ttl_keeps_the_checksum_right_and_rewrites_the_macs() {
        let mut f = frame(64, [198, 18, 1, 2]);
        let before = f.clone();
        assert_eq!(ip_forward(&mut f, &route()), Verdict::Forward);
        assert_eq!(f[22], 63);
        assert_eq!(u16::from_be_bytes([f[24], f[25]]), ipv4_csum(&f[14..34]));
        assert_eq!(&f[0..6], &route().dst_mac);
        assert_eq!(&f[6..12], &route().src_mac);
        assert_eq!(&f[34..], &before[34..], "the UDP part is untouched (TTL is not in its pseudo-header)");
        assert_eq!(ip_forward(&mut frame(1, [198, 18, 1, 2]), &route()), Verdict::TtlExpired);
        assert_eq!(ip_forward(&mut frame(64, [198, 18, 2, 2]), &route()), Verdict::NoRoute);
        let mut arp = frame(64, [198, 18, 1, 2]);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(ip_forward(&mut arp, &route()), Verdict::NotIpv4);
        assert_eq!(ip_forward(&mut [0u8; 20], &route()), Verdict::NotIpv4);
    }

    #[test]
    fn a_thread_wakes_on_the_period_boundaries_and_skips_missed_ones() {
        let (t0, p) = (1_000, 5_000_000);
        assert_eq!(next_boundary(t0, p, t0, t0), (t0 + p, 0), "woken at t0: the next boundary, none skipped");
        assert_eq!(
            next_boundary(t0, p, t0 + 2 * p, t0 + 2 * p + 20_000),
            (t0 + 3 * p, 0),
            "20 µs late: the next one, none skipped"
        );
        assert_eq!(
            next_boundary(t0, p, t0 + p, t0 + 3 * p + 1),
            (t0 + 4 * p, 2),
            "woken for boundary 1 after boundary 3 passed: 2 and 3 skipped"
        );
        assert_eq!(
            next_boundary(t0, p, t0 + p, t0 + 2 * p),
            (t0 + 3 * p, 1),
            "exactly on the next boundary: it counts as passed"
        );
        // Every wake-up lands on a boundary of the same grid: no drift however late a wake is.
        let mut next = t0 + p;
        for late in [0, 3_000_000, 7_000_000, 1, 12_345_678] {
            let (n, _) = next_boundary(t0, p, next, next + late);
            assert_eq!((n - t0) % p, 0);
            assert!(n > next + late && n <= next + late + p);
            next = n;
        }
    }

    #[test]
    fn the_threads_exchange_in_bulk_one_queue_operation_per_move() {
        let q: BulkQueue<u64> = BulkQueue::default();
        let mut drv: Vec<u64> = (0..6_000).collect();
        q.put(&mut drv);
        assert!(drv.is_empty());
        let mut ip = Vec::new();
        q.take(&mut ip);
        assert_eq!(ip.len(), 6_000, "one period's frames move whole");
        q.take(&mut ip);
        assert_eq!(ip.len(), 6_000, "an empty queue moves nothing");
        assert_eq!(q.counts(), (3, 6_000), "three calls, three queue operations, whatever the number of frames");
    }
}
