//! What batches the arrivals at the readers: the segment-train recorder
//! (`bpf/trains_tp.bpf.c`) and the per-flow summary of its records (issue 42, "trace first").
//!
//! Three kinds of record, all of the run's own flows only (the program filters on the run's two
//! devices, by ifindex and network-namespace inode, and on the readers' ports):
//! - **emission** (`net_dev_queue` at the senders' veth): one TCP skb as the senders' TCP hands
//!   it down, before GSO splits it into frames: its payload, its segments, the CPU and context
//!   that sent it (inside the socket's pacing timer, another softirq, or a system call) and the
//!   socket's pacing rate, RTT and GSO limits at that moment;
//! - **frame** (`netif_receive_skb` at the readers' veth): one segment entering the readers'
//!   stack, with its CPU;
//! - **pacing-timer expiry** (`hrtimer_expire_entry` of `tcp_pace_kick`): how late it ran.
//!
//! [`flow_summary`] turns a window's records of one flow, and its reader's wake-ups, into the
//! summary `trains.csv` holds: emission sizes against the kernel's own rule
//! ([`tso_autosize_segs`]), trains at the readers' veth (frames closer than a gap threshold),
//! gaps within and between them, and how many times the reader was woken per train.

use crate::bpf::Unsupported;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags};
use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::os::fd::AsFd;

#[allow(clippy::all, dead_code, unused_imports, non_camel_case_types)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/trains_tp.skel.rs"));
}
use skel::{TrainsTpSkel, TrainsTpSkelBuilder};

/// `TRAIN_EV_*` of trains.h.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Emit,
    Rx,
    Pace,
}

/// `ctx` of a record (`TRAIN_CTX_*`).
pub const CTX_TASK: u8 = 0;
pub const CTX_PACE: u8 = 1;
pub const CTX_SOFTIRQ: u8 = 16;
/// The softirq vectors of include/linux/interrupt.h that matter here.
pub const NET_RX_SOFTIRQ: u8 = 3;
/// `who` of a record (`TRAIN_WHO_*`).
pub const WHO_OTHER: u8 = 0;
pub const WHO_IDLE: u8 = 1;
pub const WHO_KTHREAD: u8 = 2;
pub const WHO_SENDER: u8 = 3;
pub const WHO_READER: u8 = 4;

/// One record (`struct train_event` in trains.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Event {
    pub ts_ns: u64,
    pub kind: Option<Kind>,
    pub cpu: u16,
    pub port: u16,
    pub seq: u32,
    /// Payload bytes (the whole skb's for an emission, the frame's for a frame).
    pub bytes: u32,
    pub segs: u16,
    pub ctx: u8,
    pub who: u8,
    /// Emission: `sk_pacing_rate` (bytes/s); pacing-timer expiry: how late it ran (ns).
    pub pacing_rate: u32,
    pub rtt_min_us: u32,
    pub srtt_us: u32,
    pub gso_max_size: u32,
    pub max_window: u32,
    pub mss: u16,
    pub gso_max_segs: u16,
    pub cwnd: u16,
    pub pacing_shift: u8,
}

impl Event {
    /// From a ring-buffer record (the layout of `struct train_event`, 56 bytes).
    pub fn parse(d: &[u8]) -> Option<Event> {
        if d.len() < 53 {
            return None;
        }
        let u16_at = |o: usize| u16::from_ne_bytes([d[o], d[o + 1]]);
        let u32_at = |o: usize| u32::from_ne_bytes(d[o..o + 4].try_into().expect("4 bytes"));
        let kind = match u16_at(36) {
            0 => Kind::Emit,
            1 => Kind::Rx,
            2 => Kind::Pace,
            _ => return None,
        };
        Some(Event {
            ts_ns: u64::from_ne_bytes(d[0..8].try_into().ok()?),
            seq: u32_at(8),
            bytes: u32_at(12),
            pacing_rate: u32_at(16),
            rtt_min_us: u32_at(20),
            srtt_us: u32_at(24),
            gso_max_size: u32_at(28),
            max_window: u32_at(32),
            kind: Some(kind),
            cpu: u16_at(38),
            port: u16_at(40),
            segs: u16_at(42),
            mss: u16_at(44),
            gso_max_segs: u16_at(46),
            cwnd: u16_at(48),
            ctx: d[50],
            who: d[51],
            pacing_shift: d[52],
        })
    }
}

/// The senders' namespace's TCP settings that size an emission (net.ipv4.*, per namespace).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TsoRule {
    /// `tcp_tso_rtt_log` (default 9: flows whose min RTT is under 512 us get 64 KB skbs).
    pub tso_rtt_log: u32,
    /// `tcp_min_tso_segs` (default 2).
    pub min_tso_segs: u32,
}

/// Segments per skb as the sending kernel sizes it: `tcp_tso_segs` / `tcp_tso_autosize` of
/// net/ipv4/tcp_output.c (Linux 5.18+, "tcp: adjust TSO packet sizes based on min_rtt"):
/// one pacing-shift's worth of the pacing rate (1 ms at the default shift of 10), plus the GSO
/// limit shifted right by `min_rtt_us >> tcp_tso_rtt_log`, capped at the GSO limit; at least
/// `tcp_min_tso_segs`, at most the device's `gso_max_segs`. (Reno, the senders' congestion
/// control here, has no `min_tso_segs` hook of its own.)
pub fn tso_autosize_segs(e: &Event, rule: &TsoRule) -> u32 {
    if e.mss == 0 {
        return 0;
    }
    let mut bytes = u64::from(e.pacing_rate) >> e.pacing_shift;
    let r = e.rtt_min_us.checked_shr(rule.tso_rtt_log).unwrap_or(0);
    if r < 32 {
        bytes += u64::from(e.gso_max_size >> r);
    }
    bytes = bytes.min(u64::from(e.gso_max_size));
    let segs = ((bytes / u64::from(e.mss)) as u32).max(rule.min_tso_segs);
    segs.min(u32::from(e.gso_max_segs).max(1))
}

/// Segments per skb as the sender's `sendmsg` builds it, by the rule of `tcp_xmit_size_goal`
/// (net/ipv4/tcp.c): the GSO limit, bounded to half the largest window the reader has offered
/// (`tcp_bound_to_half_wnd`, include/net/tcp.h), at most `gso_max_segs`. An skb leaves as
/// `min(this, tso_autosize_segs)` when cwnd and the window allow.
pub fn size_goal_segs(e: &Event) -> u32 {
    if e.mss == 0 {
        return 0;
    }
    let cutoff = if e.max_window > 536 { e.max_window >> 1 } else { e.max_window };
    let bytes = if cutoff > 0 && e.gso_max_size > cutoff { cutoff.max(68 - 32) } else { e.gso_max_size };
    (bytes / u32::from(e.mss)).min(u32::from(e.gso_max_segs)).max(1)
}

/// The segments the kernel's two rules allow one skb ([`tso_autosize_segs`] at emission and
/// [`size_goal_segs`] at sendmsg).
pub fn rule_segs(e: &Event, rule: &TsoRule) -> u32 {
    tso_autosize_segs(e, rule).min(size_goal_segs(e))
}

/// Nearest-rank quantile of sorted values (NaN for none).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

/// A train at the readers' veth: frames of one flow, each within the gap threshold of the one
/// before.
#[derive(Clone, Debug, PartialEq)]
pub struct Train {
    pub first_ns: u64,
    pub last_ns: u64,
    pub segs: u32,
    pub bytes: u64,
}

/// Split a flow's frames (in time order) into trains: a gap longer than `gap_ns` starts one.
pub fn trains(frames: &[&Event], gap_ns: u64) -> Vec<Train> {
    let mut out: Vec<Train> = Vec::new();
    for f in frames {
        match out.last_mut() {
            Some(t) if f.ts_ns.saturating_sub(t.last_ns) <= gap_ns => {
                t.last_ns = f.ts_ns;
                t.segs += 1;
                t.bytes += u64::from(f.bytes);
            }
            _ => out.push(Train { first_ns: f.ts_ns, last_ns: f.ts_ns, segs: 1, bytes: u64::from(f.bytes) }),
        }
    }
    out
}

/// What the reader of a flow did in the window: when it was woken (`sched_waking`) and when it
/// started to run (`sched_switch` to it), ns.
#[derive(Clone, Debug, Default)]
pub struct ReaderTimes {
    pub woken_ns: Vec<u64>,
    pub run_ns: Vec<u64>,
}

/// The summary of one flow over a window of `window_s` (the `trains.csv` columns; rates per
/// second of the window).
pub fn flow_summary(
    events: &[Event],
    reader: &ReaderTimes,
    rule: &TsoRule,
    gap_ns: u64,
    window_s: f64,
) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    let emits: Vec<&Event> = events.iter().filter(|e| e.kind == Some(Kind::Emit)).collect();
    let frames: Vec<&Event> = events.iter().filter(|e| e.kind == Some(Kind::Rx)).collect();
    let paces: Vec<&Event> = events.iter().filter(|e| e.kind == Some(Kind::Pace)).collect();
    let n = emits.len() as f64;
    let frac = |f: &dyn Fn(&Event) -> bool| {
        if emits.is_empty() {
            f64::NAN
        } else {
            emits.iter().filter(|e| f(e)).count() as f64 / n
        }
    };

    // Emissions: their size against the kernel's rule, and who sent them, where.
    let segs = sorted(emits.iter().map(|e| f64::from(e.segs)).collect());
    let auto: Vec<f64> = emits.iter().map(|e| f64::from(tso_autosize_segs(e, rule))).collect();
    let goal: Vec<f64> = emits.iter().map(|e| f64::from(size_goal_segs(e))).collect();
    m.insert("emits_per_s".into(), n / window_s);
    m.insert("emit_segs_mean".into(), mean(&segs));
    m.insert("emit_segs_p50".into(), quantile(&segs, 0.5));
    m.insert("emit_segs_max".into(), segs.last().copied().unwrap_or(f64::NAN));
    m.insert("emit_bytes_mean".into(), mean(&emits.iter().map(|e| f64::from(e.bytes)).collect::<Vec<_>>()));
    m.insert("emit_autosize_segs_mean".into(), mean(&auto));
    m.insert("emit_size_goal_segs_mean".into(), mean(&goal));
    m.insert("emit_at_rule_frac".into(), frac(&|e| u32::from(e.segs) == rule_segs(e, rule)));
    m.insert(
        "max_window_kb_p50".into(),
        quantile(&sorted(emits.iter().map(|e| f64::from(e.max_window) / 1024.0).collect()), 0.5),
    );
    m.insert("emit_from_pacing_timer_frac".into(), frac(&|e| e.ctx == CTX_PACE));
    m.insert("emit_from_net_rx_frac".into(), frac(&|e| e.ctx == CTX_SOFTIRQ + NET_RX_SOFTIRQ));
    m.insert("emit_from_syscall_frac".into(), frac(&|e| e.ctx == CTX_TASK));
    m.insert("emit_over_sender_frac".into(), frac(&|e| e.who == WHO_SENDER));
    m.insert("emit_over_other_task_frac".into(), frac(&|e| e.who == WHO_OTHER));
    m.insert("emit_over_idle_frac".into(), frac(&|e| e.who == WHO_IDLE));
    m.insert("emit_over_kthread_frac".into(), frac(&|e| e.who == WHO_KTHREAD));
    m.insert("emit_over_reader_frac".into(), frac(&|e| e.who == WHO_READER));
    m.insert("emit_cpu0_frac".into(), frac(&|e| e.cpu == 0));
    let gaps = sorted(emits.windows(2).map(|w| (w[1].ts_ns - w[0].ts_ns) as f64 / 1e3).collect());
    m.insert("emit_gap_us_p50".into(), quantile(&gaps, 0.5));
    m.insert("emit_gap_us_p90".into(), quantile(&gaps, 0.9));
    let rate = sorted(emits.iter().map(|e| f64::from(e.pacing_rate) * 8e-6).collect());
    m.insert("pacing_rate_mbps_p50".into(), quantile(&rate, 0.5));
    let rtt = sorted(emits.iter().map(|e| f64::from(e.rtt_min_us)).collect());
    m.insert("rtt_min_us_p50".into(), quantile(&rtt, 0.5));
    let late = sorted(paces.iter().map(|e| f64::from(e.pacing_rate) / 1e3).collect());
    m.insert("pacing_timer_per_s".into(), paces.len() as f64 / window_s);
    m.insert("pacing_timer_late_us_p50".into(), quantile(&late, 0.5));
    m.insert("pacing_timer_late_us_p90".into(), quantile(&late, 0.9));

    // Frames at the readers' veth: the CPU that received them, against the one that emitted
    // them (the emission whose sequence range holds the frame's first byte).
    let mut by_seq: Vec<&Event> = emits.clone();
    by_seq.sort_by_key(|e| e.seq);
    let emitter = |f: &Event| {
        let i = by_seq.partition_point(|e| e.seq <= f.seq);
        (i > 0).then(|| by_seq[i - 1]).filter(|e| f.seq.wrapping_sub(e.seq) < e.bytes)
    };
    let matched: Vec<(&Event, &Event)> = frames.iter().filter_map(|f| emitter(f).map(|e| (*f, e))).collect();
    m.insert("rx_frames_per_s".into(), frames.len() as f64 / window_s);
    m.insert(
        "rx_matched_frac".into(),
        if frames.is_empty() { f64::NAN } else { matched.len() as f64 / frames.len() as f64 },
    );
    let on_emit = matched.iter().filter(|(f, e)| f.cpu == e.cpu).count() as f64;
    m.insert("rx_on_emit_cpu_frac".into(), if matched.is_empty() { f64::NAN } else { on_emit / matched.len() as f64 });
    let delay = sorted(matched.iter().map(|(f, e)| f.ts_ns.saturating_sub(e.ts_ns) as f64 / 1e3).collect());
    m.insert("rx_delay_us_p50".into(), quantile(&delay, 0.5));
    m.insert("rx_delay_us_p90".into(), quantile(&delay, 0.9));

    // Trains at the readers' veth and the reader's wake-ups per train.
    let tr = trains(&frames, gap_ns);
    let within = sorted(
        frames
            .windows(2)
            .map(|w| w[1].ts_ns.saturating_sub(w[0].ts_ns))
            .filter(|&g| g <= gap_ns)
            .map(|g| g as f64 / 1e3)
            .collect(),
    );
    let between = sorted(tr.windows(2).map(|w| (w[1].first_ns - w[0].last_ns) as f64 / 1e3).collect());
    let tsegs = sorted(tr.iter().map(|t| f64::from(t.segs)).collect());
    m.insert("train_gap_threshold_us".into(), gap_ns as f64 / 1e3);
    m.insert("rx_trains_per_s".into(), tr.len() as f64 / window_s);
    m.insert("rx_train_segs_mean".into(), mean(&tsegs));
    m.insert("rx_train_segs_p50".into(), quantile(&tsegs, 0.5));
    m.insert("rx_train_segs_max".into(), tsegs.last().copied().unwrap_or(f64::NAN));
    m.insert("rx_train_bytes_mean".into(), mean(&tr.iter().map(|t| t.bytes as f64).collect::<Vec<_>>()));
    m.insert(
        "rx_train_us_mean".into(),
        mean(&tr.iter().map(|t| (t.last_ns - t.first_ns) as f64 / 1e3).collect::<Vec<_>>()),
    );
    m.insert("rx_within_gap_us_p50".into(), quantile(&within, 0.5));
    m.insert("rx_within_gap_us_p90".into(), quantile(&within, 0.9));
    m.insert("rx_between_gap_us_p50".into(), quantile(&between, 0.5));
    m.insert("rx_between_gap_us_p90".into(), quantile(&between, 0.9));
    // A train owns the wake-ups from its first frame to the next train's first frame; it was
    // read in parts when the reader started to run after its first frame and before its last.
    let (mut woken, mut none, mut several, mut partly) = (0usize, 0usize, 0usize, 0usize);
    for (i, t) in tr.iter().enumerate() {
        let end = tr.get(i + 1).map_or(u64::MAX, |n| n.first_ns);
        let w = reader.woken_ns.iter().filter(|&&x| x >= t.first_ns && x < end).count();
        woken += w;
        none += usize::from(w == 0);
        several += usize::from(w >= 2);
        partly += usize::from(reader.run_ns.iter().any(|&x| x > t.first_ns && x < t.last_ns));
    }
    let per_train = |x: usize| if tr.is_empty() { f64::NAN } else { x as f64 / tr.len() as f64 };
    m.insert("reader_wakeups_per_s".into(), reader.woken_ns.len() as f64 / window_s);
    m.insert("wakeups_per_train".into(), per_train(woken));
    m.insert("trains_without_wakeup_frac".into(), per_train(none));
    m.insert("trains_with_several_wakeups_frac".into(), per_train(several));
    m.insert("trains_read_in_parts_frac".into(), per_train(partly));
    m
}

/// The loaded programs and their links.
pub struct Recorder {
    skel: TrainsTpSkel<'static>,
    links: Vec<Link>,
}

/// The run's devices, as the program filters them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Devices {
    pub tx_netns: u32,
    pub tx_ifindex: u32,
    pub rx_netns: u32,
    pub rx_ifindex: u32,
    pub port_lo: u16,
    pub port_hi: u16,
}

impl Recorder {
    /// Load (verify) the programs for these devices and ports; nothing is attached yet.
    pub fn load(dev: &Devices) -> Result<Recorder, Unsupported> {
        // As in xdp.rs: the skeleton borrows its OpenObject for its life; one small leak per run.
        let obj: &'static mut MaybeUninit<libbpf_rs::OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
        let open = TrainsTpSkelBuilder::default()
            .open(obj)
            .map_err(|e| Unsupported(format!("opening the train recorder's object: {e}")))?;
        let mut skel = open.load().map_err(|e| {
            Unsupported(format!("loading the train recorder (needs root, BPF, tp_btf and kallsyms): {e}"))
        })?;
        let bss = skel.maps.bss_data.as_deref_mut().expect("the program has a .bss (ctl)");
        bss.ctl.tx_netns = dev.tx_netns;
        bss.ctl.tx_ifindex = dev.tx_ifindex;
        bss.ctl.rx_netns = dev.rx_netns;
        bss.ctl.rx_ifindex = dev.rx_ifindex;
        bss.ctl.port_lo = u32::from(dev.port_lo);
        bss.ctl.port_hi = u32::from(dev.port_hi);
        Ok(Recorder { skel, links: Vec::new() })
    }

    /// Attach the six tracepoints (bpf_links). Returns (tracepoint, program id, link id).
    pub fn attach(&mut self) -> Result<Vec<(String, u32, u32)>, Unsupported> {
        let mut out = Vec::new();
        let p = &self.skel.progs;
        let progs = [
            ("tp_btf/net_dev_queue", &p.trains_emit),
            ("tp_btf/netif_receive_skb", &p.trains_rx),
            ("tp_btf/hrtimer_expire_entry", &p.trains_pace),
            ("tp_btf/hrtimer_expire_exit", &p.trains_pace_exit),
            ("tp_btf/softirq_entry", &p.trains_softirq_entry),
            ("tp_btf/softirq_exit", &p.trains_softirq_exit),
        ];
        for (name, prog) in progs {
            let link = prog.attach().map_err(|e| Unsupported(format!("attaching {name}: {e}")))?;
            let link_id = libbpf_rs::query::LinkInfo::from_fd(link.as_fd())
                .map(|i| i.id)
                .map_err(|e| Unsupported(e.to_string()))?;
            let prog_id = libbpf_rs::Program::id_from_fd(prog.as_fd()).map_err(|e| Unsupported(e.to_string()))?;
            out.push((name.to_string(), prog_id, link_id));
            self.links.push(link);
        }
        Ok(out)
    }

    /// Mark thread group `tgid` as one of the run's senders (`WHO_SENDER`) or readers
    /// (`WHO_READER`); `None` forgets it.
    pub fn set_task(&self, tgid: u32, who: Option<u8>) -> Result<(), String> {
        match who {
            Some(w) => self
                .skel
                .maps
                .tasks
                .update(&tgid.to_ne_bytes(), &[w], MapFlags::ANY)
                .map_err(|e| format!("task map: {e}")),
            None => {
                let _ = self.skel.maps.tasks.delete(&tgid.to_ne_bytes());
                Ok(())
            }
        }
    }

    /// Records the ring buffer had no room for, since load.
    pub fn lost(&self) -> u64 {
        let bss = self.skel.maps.bss_data.as_deref().expect("the program has a .bss");
        // SAFETY: the mmapped .bss, valid while the skeleton lives; the program adds atomically.
        unsafe { std::ptr::read_volatile(&bss.lost) }
    }

    /// Every record waiting in the ring buffer, in the order the programs reserved them.
    pub fn drain(&self) -> Result<Vec<Event>, String> {
        crate::bpf::drain_ring(&self.skel.maps.events, Event::parse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: TsoRule = TsoRule { tso_rtt_log: 9, min_tso_segs: 2 };

    fn emit(ts_ns: u64, seq: u32, segs: u16, cpu: u16, ctx: u8) -> Event {
        Event {
            ts_ns,
            kind: Some(Kind::Emit),
            cpu,
            port: 5001,
            seq,
            bytes: u32::from(segs) * 1448,
            segs,
            ctx,
            who: WHO_OTHER,
            pacing_rate: 50_000_000,
            rtt_min_us: 40,
            srtt_us: 60,
            gso_max_size: 65_536 - 321,
            max_window: 1 << 20,
            mss: 1448,
            gso_max_segs: 65_535,
            cwnd: 100,
            pacing_shift: 10,
        }
    }

    fn rx(ts_ns: u64, seq: u32, cpu: u16) -> Event {
        Event { ts_ns, kind: Some(Kind::Rx), cpu, port: 5001, seq, bytes: 1448, segs: 1, ..Event::default() }
    }

    #[test]
    fn the_autosize_rule_gives_64_kb_under_512_us_of_min_rtt() {
        // 400 Mbit/s of pacing (50 MB/s), min RTT 40 us: 48,828 B + 65,215 B >> 0, capped at the
        // GSO limit: 45 segments of 1448 B, as the live trace showed.
        let e = emit(0, 0, 45, 0, CTX_PACE);
        assert_eq!(tso_autosize_segs(&e, &RULE), 45);
        // 25 Mbit/s, min RTT 1.1 ms (r = 2): 3,051 B + 16,303 B = 13 segments.
        let slow = Event { pacing_rate: 3_125_000, rtt_min_us: 1_100, ..e };
        assert_eq!(tso_autosize_segs(&slow, &RULE), 13);
        // tcp_tso_rtt_log 0: the RTT term only for a min RTT under 32 us; else 1 ms of the rate,
        // at least min_tso_segs.
        assert_eq!(tso_autosize_segs(&slow, &TsoRule { tso_rtt_log: 0, min_tso_segs: 2 }), 2);
        // A device gso_max_segs of 1 caps every skb at one segment.
        assert_eq!(tso_autosize_segs(&Event { gso_max_segs: 1, ..e }, &RULE), 1);
    }

    #[test]
    fn sendmsg_bounds_an_skb_to_half_the_readers_largest_window() {
        let e = emit(0, 0, 45, 0, CTX_PACE);
        // A window of 1 MB: the GSO limit (45 segments); of 54 KB: 27 KB, 18 segments.
        assert_eq!(
            (
                size_goal_segs(&Event { max_window: 1 << 20, ..e }),
                rule_segs(&Event { max_window: 1 << 20, ..e }, &RULE)
            ),
            (45, 45)
        );
        assert_eq!(size_goal_segs(&Event { max_window: 54 * 1024, ..e }), 19);
        assert_eq!(rule_segs(&Event { max_window: 54 * 1024, ..e }, &RULE), 19);
    }

    #[test]
    fn trains_split_at_gaps_over_the_threshold() {
        let f: Vec<Event> = [0u64, 1_000, 2_000, 50_000, 51_000, 200_000].iter().map(|&t| rx(t, 0, 0)).collect();
        let refs: Vec<&Event> = f.iter().collect();
        let t = trains(&refs, 10_000);
        assert_eq!(t.iter().map(|t| t.segs).collect::<Vec<_>>(), vec![3, 2, 1]);
        assert_eq!((t[0].first_ns, t[0].last_ns, t[0].bytes), (0, 2_000, 3 * 1448));
    }

    #[test]
    fn a_flow_summary_counts_trains_wakeups_and_where_frames_were_emitted() {
        // Two emissions of 3 segments from the pacing timer on CPU 0, 1 ms apart; their frames
        // received on CPU 0 (the first) and CPU 1 (the second) 1 us apart; the reader woken once
        // for the first train, twice for the second, and run in the middle of the second.
        let mut ev = vec![emit(0, 1_000, 3, 0, CTX_PACE), emit(1_000_000, 1_000 + 3 * 1448, 3, 0, CTX_SOFTIRQ + 3)];
        for k in 0..3u32 {
            ev.push(rx(10_000 + u64::from(k) * 1_000, 1_000 + k * 1448, 0));
            ev.push(rx(1_010_000 + u64::from(k) * 1_000, 1_000 + (3 + k) * 1448, 1));
        }
        ev.push(Event { ts_ns: 1, kind: Some(Kind::Pace), pacing_rate: 4_000, ..Event::default() });
        ev.sort_by_key(|e| e.ts_ns);
        let reader = ReaderTimes { woken_ns: vec![10_500, 1_010_500, 1_011_500], run_ns: vec![20_000, 1_011_200] };
        let m = flow_summary(&ev, &reader, &RULE, 15_000, 0.5);
        assert_eq!(m["emits_per_s"], 4.0);
        assert_eq!(m["emit_segs_mean"], 3.0);
        assert_eq!(m["emit_from_pacing_timer_frac"], 0.5);
        assert_eq!(m["emit_from_net_rx_frac"], 0.5);
        assert_eq!(m["emit_at_rule_frac"], 0.0); // 3 segments sent where the rules allow 45
        assert_eq!(m["rx_matched_frac"], 1.0);
        assert_eq!(m["rx_on_emit_cpu_frac"], 0.5);
        assert_eq!(m["rx_delay_us_p50"], 11.0); // 10, 11, 12 us after each skb: nearest rank of six
        assert_eq!((m["rx_trains_per_s"], m["rx_train_segs_mean"], m["rx_train_bytes_mean"]), (4.0, 3.0, 3.0 * 1448.0));
        assert_eq!((m["rx_within_gap_us_p50"], m["rx_between_gap_us_p50"]), (1.0, 998.0));
        assert_eq!(m["wakeups_per_train"], 1.5);
        assert_eq!((m["trains_without_wakeup_frac"], m["trains_with_several_wakeups_frac"]), (0.0, 0.5));
        assert_eq!(m["trains_read_in_parts_frac"], 0.5);
        assert_eq!(m["pacing_timer_late_us_p50"], 4.0);
    }

    #[test]
    fn records_parse_with_the_header_layout() {
        let mut d = vec![0u8; 56];
        d[0..8].copy_from_slice(&7u64.to_ne_bytes());
        d[8..12].copy_from_slice(&99u32.to_ne_bytes());
        d[12..16].copy_from_slice(&65_160u32.to_ne_bytes());
        d[32..36].copy_from_slice(&131_072u32.to_ne_bytes());
        d[36..38].copy_from_slice(&0u16.to_ne_bytes());
        d[40..42].copy_from_slice(&5001u16.to_ne_bytes());
        d[42..44].copy_from_slice(&45u16.to_ne_bytes());
        d[50] = CTX_PACE;
        d[51] = WHO_SENDER;
        d[52] = 10;
        let e = Event::parse(&d).unwrap();
        assert_eq!((e.ts_ns, e.seq, e.bytes, e.kind, e.port, e.segs), (7, 99, 65_160, Some(Kind::Emit), 5001, 45));
        assert_eq!((e.max_window, e.ctx, e.who, e.pacing_shift), (131_072, CTX_PACE, WHO_SENDER, 10));
        d[36] = 7;
        assert_eq!(Event::parse(&d), None);
        assert_eq!(Event::parse(&d[..40]), None);
    }
}
