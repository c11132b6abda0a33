//! Wake-ups of the run's own tasks as this kernel places them: the recorder
//! (`bpf/wake_tp.bpf.c`: `tp_btf/sched_waking`, `sched_wakeup`, `sched_migrate_task`, each
//! attached through a bpf_link that goes with this process) and the pairing of its events into
//! paper 001's Fig. 2 rows (waking CPU, previous CPU, chosen CPU), which feed the model's own
//! classifier (`hostsim_host::MigrationClass`), so the live columns are the model's.
//!
//! Only tasks of the thread groups the experiment registers (`Recorder::watch`) are recorded:
//! the filter is in the program (a hash of tgids), never a machine-wide counter another run or
//! session could move.
//!
//! **Pairing** ([`Tracker`]). Per task, `sched_waking` (the waker's context: its CPU is the
//! waking CPU, `task_cpu(p)` the previous CPU) opens a wake-up; `sched_wakeup` closes it with
//! `task_cpu(p)` = the chosen CPU. A `sched_migrate_task` inside the pair is the wake-up's own
//! move (`set_task_cpu` in `try_to_wake_up`); one outside any pair is another migration (the
//! load balancer, periodic or new-idle, or an affinity change: the kernel's tracepoint does not
//! say which), and resets the task's Fig. 2 history as the model's balancer migrations do. A
//! `sched_wakeup` with no open pair (its `sched_waking` came before the task was watched) is
//! counted apart and not classified. A wake-up of a task that was still on its run queue
//! (`ttwu_runnable`) has prev = chosen: no migration, as in the model.

use crate::bpf::Unsupported;
use hostsim_host::{ClassCounts, MigrationClass};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags};
use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::os::fd::AsFd;

#[allow(clippy::all, dead_code, unused_imports, non_camel_case_types)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/wake_tp.skel.rs"));
}
use skel::{WakeTpSkel, WakeTpSkelBuilder};

/// `WAKE_EV_*` of wake.h.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Waking,
    Wakeup,
    Migrate,
    /// `sched_switch` to the task.
    SwitchIn,
}

/// One record (`struct wake_event` in wake.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub ts_ns: u64,
    pub pid: u32,
    pub kind: Kind,
    /// The CPU the program ran on (for `Waking`: the waking CPU).
    pub cpu: u16,
    /// `task_cpu(p)`: prev (`Waking`), chosen (`Wakeup`), from (`Migrate`).
    pub a: u16,
    /// `Migrate`: the destination CPU; `Waking`: `WAKE_F_*` (below).
    pub b: u16,
}

/// `b` of a `Waking` event: the task was still queued (`p->on_rq`), woken in place.
pub const WAKE_F_ON_RQ: u16 = 1;
/// `b` of a `Waking` event: EEVDF's delayed dequeue held it queued (`p->se.sched_delayed`).
pub const WAKE_F_DELAYED: u16 = 2;
/// `b` of a `Waking` event, who `current` was where the wake-up was made: the idle task (a
/// softirq on an idle CPU), a kernel thread (ksoftirqd), one of the run's senders.
pub const WAKE_F_BY_IDLE: u16 = 4;
pub const WAKE_F_BY_KTHREAD: u16 = 8;
pub const WAKE_F_BY_SENDER: u16 = 16;

impl Event {
    /// From a ring-buffer record (u64, u32, u16 kind, u16 cpu, u16 a, u16 b, u32 pad).
    pub fn parse(d: &[u8]) -> Option<Event> {
        if d.len() < 24 {
            return None;
        }
        let u16_at = |o: usize| u16::from_ne_bytes([d[o], d[o + 1]]);
        let kind = match u16_at(12) {
            0 => Kind::Waking,
            1 => Kind::Wakeup,
            2 => Kind::Migrate,
            3 => Kind::SwitchIn,
            _ => return None,
        };
        Some(Event {
            ts_ns: u64::from_ne_bytes(d[0..8].try_into().ok()?),
            pid: u32::from_ne_bytes(d[8..12].try_into().ok()?),
            kind,
            cpu: u16_at(14),
            a: u16_at(16),
            b: u16_at(18),
        })
    }
}

/// Counts over a window, besides the model's classes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WakeCounts {
    /// Wake-ups paired and classified.
    pub wakeups: u64,
    /// ... of which the waking CPU was not the previous CPU.
    pub wakeups_remote: u64,
    /// ... of which the reader was queued on the waking CPU (RFS's aim: the CPU that ran the
    /// flow's softirq and the CPU that runs its reader agree).
    pub wakeups_on_waker: u64,
    /// ... of which the task was still queued at `sched_waking` (woken in place by
    /// `ttwu_runnable`, no placement), and of those, held by EEVDF's delayed dequeue.
    pub wakeups_on_rq: u64,
    pub wakeups_delayed: u64,
    /// ... by `current` of the waking context (the rest: another user task).
    pub wakeups_by_idle: u64,
    pub wakeups_by_kthread: u64,
    pub wakeups_by_sender: u64,
    /// Wake-ups that moved the task (chosen != prev).
    pub migrations_wakeup: u64,
    /// Migrations outside a wake-up (load balancing, affinity).
    pub migrations_other: u64,
    /// `sched_wakeup` with no open `sched_waking` (not classified).
    pub unpaired: u64,
    /// A wake-up's own `sched_migrate_task` that disagreed with its pair (from != prev or
    /// to != chosen): should stay 0; reported.
    pub inconsistent: u64,
}

/// A tracked task: its dense index for `MigrationClass` and its open wake-up (waker CPU,
/// previous CPU, flags), if any.
type TaskSlot = (usize, Option<(usize, usize, u16)>);

/// Pairs events per task and classifies each wake-up with the model's [`MigrationClass`].
#[derive(Clone, Debug)]
pub struct Tracker {
    /// pid -> dense index for `MigrationClass` and the open wake-up (waker, prev, flags), if any.
    tasks: BTreeMap<u32, TaskSlot>,
    /// pid -> time of its last `sched_wakeup` not yet followed by a switch to it.
    woken_at: BTreeMap<u32, u64>,
    /// Waits from `sched_wakeup` to the switch to the task, ns (the window's).
    pub waits_ns: Vec<u64>,
    class: MigrationClass,
    pub counts: WakeCounts,
}

/// The most tasks one tracker follows (the tgid map holds 1,024).
pub const TASKS_MAX: usize = 1024;

impl Default for Tracker {
    fn default() -> Self {
        Tracker::new()
    }
}

impl Tracker {
    pub fn new() -> Tracker {
        Tracker {
            tasks: BTreeMap::new(),
            woken_at: BTreeMap::new(),
            waits_ns: Vec::new(),
            class: MigrationClass::new(TASKS_MAX),
            counts: WakeCounts::default(),
        }
    }

    /// Start counting afresh (end of the warm-up); every task's history is kept, as the model's.
    pub fn reset(&mut self) {
        self.class.reset();
        self.counts = WakeCounts::default();
        self.waits_ns.clear();
    }

    pub fn class_counts(&self) -> &ClassCounts {
        &self.class.counts
    }

    /// All migrations of the window, every cause (the model's `migrations_per_s` numerator).
    pub fn migrations(&self) -> u64 {
        self.counts.migrations_wakeup + self.counts.migrations_other
    }

    fn slot(&mut self, pid: u32) -> Option<&mut TaskSlot> {
        let n = self.tasks.len();
        if n >= TASKS_MAX && !self.tasks.contains_key(&pid) {
            return None;
        }
        Some(self.tasks.entry(pid).or_insert((n, None)))
    }

    pub fn feed(&mut self, e: &Event) {
        if e.kind == Kind::SwitchIn {
            if let Some(t) = self.woken_at.remove(&e.pid) {
                self.waits_ns.push(e.ts_ns.saturating_sub(t));
            }
            return;
        }
        let Some(&mut (idx, ref mut open)) = self.slot(e.pid) else { return };
        match e.kind {
            Kind::SwitchIn => {}
            Kind::Waking => *open = Some((usize::from(e.cpu), usize::from(e.a), e.b)),
            Kind::Migrate => match *open {
                Some((_, prev, _)) => {
                    // The wake-up's own set_task_cpu: counted at sched_wakeup, checked here.
                    if usize::from(e.a) != prev {
                        self.counts.inconsistent += 1;
                    }
                }
                None => {
                    self.counts.migrations_other += 1;
                    self.class.balanced(idx as u32);
                }
            },
            Kind::Wakeup => match open.take() {
                Some((waker, prev, flags)) => {
                    let target = usize::from(e.a);
                    self.counts.wakeups += 1;
                    if flags & WAKE_F_ON_RQ != 0 {
                        self.counts.wakeups_on_rq += 1;
                    }
                    if flags & WAKE_F_DELAYED != 0 {
                        self.counts.wakeups_delayed += 1;
                    }
                    if flags & WAKE_F_BY_IDLE != 0 {
                        self.counts.wakeups_by_idle += 1;
                    }
                    if flags & WAKE_F_BY_KTHREAD != 0 {
                        self.counts.wakeups_by_kthread += 1;
                    }
                    if flags & WAKE_F_BY_SENDER != 0 {
                        self.counts.wakeups_by_sender += 1;
                    }
                    if waker != prev {
                        self.counts.wakeups_remote += 1;
                    }
                    if waker == target {
                        self.counts.wakeups_on_waker += 1;
                    }
                    if target != prev {
                        self.counts.migrations_wakeup += 1;
                    }
                    self.class.wakeup(idx as u32, waker, prev, target);
                    self.woken_at.insert(e.pid, e.ts_ns);
                }
                None => self.counts.unpaired += 1,
            },
        }
    }

    /// The window's metrics, the model's names (`hostsim_host::insert_class_metrics`) and the
    /// recorder's own.
    pub fn metrics(&self, window_s: f64) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        let c = &self.counts;
        let r = |x: u64| x as f64 / window_s;
        m.insert("wakeups_per_s".into(), r(c.wakeups));
        m.insert("migrations_per_s".into(), r(self.migrations()));
        m.insert("migrations_wakeup_per_s".into(), r(c.migrations_wakeup));
        // The model's load_balance + idle_balance: the tracepoint cannot tell them apart.
        m.insert("migrations_balance_per_s".into(), r(c.migrations_other));
        hostsim_host::insert_class_metrics(&mut m, &self.class.counts, self.migrations(), window_s);
        m.insert(
            "wakeups_remote_frac".into(),
            if c.wakeups == 0 { f64::NAN } else { c.wakeups_remote as f64 / c.wakeups as f64 },
        );
        let frac = |x: u64| if c.wakeups == 0 { f64::NAN } else { x as f64 / c.wakeups as f64 };
        m.insert("wakeups_on_rq_frac".into(), frac(c.wakeups_on_rq));
        m.insert("wakeups_on_waker_frac".into(), frac(c.wakeups_on_waker));
        m.insert("wakeups_delayed_frac".into(), frac(c.wakeups_delayed));
        m.insert("wakeups_by_idle_frac".into(), frac(c.wakeups_by_idle));
        m.insert("wakeups_by_kthread_frac".into(), frac(c.wakeups_by_kthread));
        m.insert("wakeups_by_sender_frac".into(), frac(c.wakeups_by_sender));
        m.insert("wakeups_unpaired".into(), c.unpaired as f64);
        // From sched_wakeup to the switch to the task: how long a woken reader waited queued.
        let mut w = self.waits_ns.clone();
        w.sort_unstable();
        let q =
            |p: f64| if w.is_empty() { f64::NAN } else { w[((w.len() - 1) as f64 * p).round() as usize] as f64 / 1e3 };
        m.insert("wakeup_wait_us_p50".into(), q(0.5));
        m.insert("wakeup_wait_us_p90".into(), q(0.9));
        m.insert(
            "wakeup_wait_us_mean".into(),
            if w.is_empty() { f64::NAN } else { w.iter().sum::<u64>() as f64 / w.len() as f64 / 1e3 },
        );
        // Tasks with any event since the tracker was made: the filter's evidence.
        m.insert("tasks_seen".into(), self.tasks.len() as f64);
        m.insert("wakeups_inconsistent".into(), c.inconsistent as f64);
        m
    }
}

/// The loaded programs and their links.
pub struct Recorder {
    skel: WakeTpSkel<'static>,
    links: Vec<Link>,
}

impl Recorder {
    /// Load (verify) the three programs; nothing is attached yet.
    pub fn load() -> Result<Recorder, Unsupported> {
        // As in xdp.rs: the skeleton borrows its OpenObject for its life; one small leak per run.
        let obj: &'static mut MaybeUninit<libbpf_rs::OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
        let open = WakeTpSkelBuilder::default()
            .open(obj)
            .map_err(|e| Unsupported(format!("opening the tracepoint object: {e}")))?;
        let skel = open.load().map_err(|e| {
            Unsupported(format!("loading the sched tracepoint programs (needs root, BPF and tp_btf): {e}"))
        })?;
        Ok(Recorder { skel, links: Vec::new() })
    }

    /// Attach the four tracepoints (bpf_links). Returns (tracepoint, program id, link id).
    pub fn attach(&mut self) -> Result<Vec<(String, u32, u32)>, Unsupported> {
        let mut out = Vec::new();
        let progs = [
            ("tp_btf/sched_waking", &self.skel.progs.wake_waking),
            ("tp_btf/sched_wakeup", &self.skel.progs.wake_wakeup),
            ("tp_btf/sched_migrate_task", &self.skel.progs.wake_migrate),
            ("tp_btf/sched_switch", &self.skel.progs.wake_switch),
        ];
        for (name, p) in progs {
            let link = p.attach().map_err(|e| Unsupported(format!("attaching {name}: {e}")))?;
            let link_id = libbpf_rs::query::LinkInfo::from_fd(link.as_fd())
                .map(|i| i.id)
                .map_err(|e| Unsupported(e.to_string()))?;
            let prog_id = libbpf_rs::Program::id_from_fd(p.as_fd()).map_err(|e| Unsupported(e.to_string()))?;
            out.push((name.to_string(), prog_id, link_id));
            self.links.push(link);
        }
        Ok(out)
    }

    /// Detach (drop the links).
    pub fn detach(&mut self) {
        self.links.clear();
    }

    /// Record the tasks of thread group `tgid` from now on.
    pub fn watch(&self, tgid: u32) -> Result<(), String> {
        self.skel.maps.tgids.update(&tgid.to_ne_bytes(), &[1u8], MapFlags::ANY).map_err(|e| format!("tgid map: {e}"))
    }

    /// Stop recording thread group `tgid`.
    pub fn unwatch(&self, tgid: u32) {
        let _ = self.skel.maps.tgids.delete(&tgid.to_ne_bytes());
    }

    /// Flag wake-ups made in the context of thread group `tgid` (`WAKE_F_BY_SENDER`); `false`
    /// forgets it.
    pub fn set_sender(&self, tgid: u32, on: bool) -> Result<(), String> {
        if on {
            self.skel
                .maps
                .senders
                .update(&tgid.to_ne_bytes(), &[1u8], MapFlags::ANY)
                .map_err(|e| format!("sender map: {e}"))
        } else {
            let _ = self.skel.maps.senders.delete(&tgid.to_ne_bytes());
            Ok(())
        }
    }

    /// Records the ring buffer had no room for, since load.
    pub fn lost(&self) -> u64 {
        let bss = self.skel.maps.bss_data.as_deref().expect("the program has a .bss");
        // SAFETY: the mmapped .bss, valid while the skeleton lives; the program adds atomically.
        unsafe { std::ptr::read_volatile(&bss.lost) }
    }

    /// Every record waiting in the ring buffer, in the order the programs reserved them (one
    /// ring for all CPUs: a task's waking, migrate and wakeup come in the order they happened).
    pub fn drain(&self) -> Result<Vec<Event>, String> {
        crate::bpf::drain_ring(&self.skel.maps.events, Event::parse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(pid: u32, kind: Kind, cpu: u16, a: u16, b: u16) -> Event {
        Event { ts_ns: 0, pid, kind, cpu, a, b }
    }

    /// One wake-up as the kernel traces it: waking on the waker's CPU (prev = task_cpu), the
    /// wake-up's own migrate if it moves, wakeup with the chosen CPU.
    fn wake(t: &mut Tracker, pid: u32, waker: u16, prev: u16, target: u16) {
        t.feed(&ev(pid, Kind::Waking, waker, prev, 0));
        if target != prev {
            t.feed(&ev(pid, Kind::Migrate, waker, prev, target));
        }
        t.feed(&ev(pid, Kind::Wakeup, target, target, 0));
    }

    #[test]
    fn the_wait_runs_from_wakeup_to_the_switch_in() {
        let mut t = Tracker::new();
        t.feed(&Event { ts_ns: 1_000, pid: 5, kind: Kind::Waking, cpu: 0, a: 0, b: 0 });
        t.feed(&Event { ts_ns: 2_000, pid: 5, kind: Kind::Wakeup, cpu: 0, a: 0, b: 0 });
        t.feed(&Event { ts_ns: 52_000, pid: 5, kind: Kind::SwitchIn, cpu: 0, a: 0, b: 0 });
        t.feed(&Event { ts_ns: 90_000, pid: 5, kind: Kind::SwitchIn, cpu: 0, a: 0, b: 0 }); // a preempted task's return: no wake-up
        assert_eq!(t.waits_ns, vec![50_000]);
        assert_eq!(t.metrics(1.0)["wakeup_wait_us_p50"], 50.0);
    }

    #[test]
    fn paper_fig2_from_tracepoint_events_is_classified_as_the_model() {
        let mut t = Tracker::new();
        // Fig. 2 #1-#4 then a wake-up from the task's own CPU (settles in 3), for pid 4242.
        for (w, p, c) in [(0, 0, 1), (0, 1, 0), (1, 0, 1), (0, 1, 0), (0, 0, 0)] {
            wake(&mut t, 4242, w, p, c);
        }
        let c = t.class_counts();
        assert_eq!((c.wakeup_affine, c.wakeup_other, c.unintended), (3, 1, 3));
        assert_eq!((c.settle_episodes, c.settle_wakeups_sum, c.settle_wakeups_max), (1, 3, 3));
        assert_eq!((t.counts.wakeups, t.counts.wakeups_remote, t.counts.migrations_wakeup), (5, 3, 4));
        let m = t.metrics(2.0);
        assert_eq!(m["migrations_per_s"], 2.0);
        assert_eq!(m["migrations_unintended_per_s"], 1.5);
        assert_eq!(m["unintended_fraction"], 0.75);
        assert_eq!(m["settle_mean"], 3.0);
        assert_eq!(m["wakeups_remote_frac"], 0.6);
        // Run where woken: #1 (0 -> 1 woken by 0: no), #2 (0 by 0: yes), #3 (1 by 1: yes), #4, #5.
        assert_eq!(m["wakeups_on_waker_frac"], 0.8);
    }

    #[test]
    fn a_balancer_migration_breaks_the_sequence_and_interleaved_tasks_stay_apart() {
        let mut t = Tracker::new();
        wake(&mut t, 1, 0, 0, 1); // moved away from 0
        t.feed(&ev(2, Kind::Waking, 1, 1, 0)); // another task's wake-up opens meanwhile
        t.feed(&ev(1, Kind::Migrate, 1, 1, 0)); // the balancer pulls task 1 back to 0
        wake(&mut t, 1, 1, 0, 1); // back to 1: would be a swap without the balancer's move
        t.feed(&ev(2, Kind::Wakeup, 1, 1, 0)); // task 2's wake-up: prev 1 = chosen
        let c = t.class_counts();
        assert_eq!(c.unintended, 0);
        assert_eq!(t.counts.migrations_other, 1);
        assert_eq!(t.counts.migrations_wakeup, 2);
        assert_eq!(t.counts.wakeups, 3);
        assert_eq!(t.migrations(), 3);
    }

    #[test]
    fn unpaired_wakeups_are_not_classified_and_reset_keeps_history() {
        let mut t = Tracker::new();
        t.feed(&ev(7, Kind::Wakeup, 0, 1, 0));
        assert_eq!((t.counts.unpaired, t.counts.wakeups), (1, 0));
        wake(&mut t, 7, 0, 0, 1); // moved away from 0, in the warm-up
        t.reset();
        wake(&mut t, 7, 0, 1, 0); // pulled back: unintended, though its first half was before the reset
        assert_eq!(t.class_counts().unintended, 1);
        assert_eq!(t.counts.unpaired, 0);
    }

    #[test]
    fn wakeups_of_queued_tasks_are_counted_apart_and_never_move() {
        let mut t = Tracker::new();
        t.feed(&ev(3, Kind::Waking, 1, 0, WAKE_F_ON_RQ | WAKE_F_DELAYED | WAKE_F_BY_SENDER));
        t.feed(&ev(3, Kind::Wakeup, 1, 0, 0));
        t.feed(&ev(3, Kind::Waking, 1, 0, WAKE_F_ON_RQ));
        t.feed(&ev(3, Kind::Wakeup, 0, 0, 0));
        wake(&mut t, 3, 0, 0, 0);
        assert_eq!((t.counts.wakeups, t.counts.wakeups_on_rq, t.counts.wakeups_delayed, t.migrations()), (3, 2, 1, 0));
        let m = t.metrics(1.0);
        assert!((m["wakeups_on_rq_frac"] - 2.0 / 3.0).abs() < 1e-12);
        assert!((m["wakeups_delayed_frac"] - 1.0 / 3.0).abs() < 1e-12);
        assert!((m["wakeups_by_sender_frac"] - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(m["wakeups_by_kthread_frac"], 0.0);
    }

    #[test]
    fn records_parse_with_the_header_layout() {
        let mut d = vec![0u8; 24];
        d[0..8].copy_from_slice(&123u64.to_ne_bytes());
        d[8..12].copy_from_slice(&77u32.to_ne_bytes());
        d[12..14].copy_from_slice(&2u16.to_ne_bytes());
        d[14..16].copy_from_slice(&1u16.to_ne_bytes());
        d[16..18].copy_from_slice(&0u16.to_ne_bytes());
        d[18..20].copy_from_slice(&1u16.to_ne_bytes());
        assert_eq!(Event::parse(&d), Some(Event { ts_ns: 123, pid: 77, kind: Kind::Migrate, cpu: 1, a: 0, b: 1 }));
        d[12] = 9;
        assert_eq!(Event::parse(&d), None);
        assert_eq!(Event::parse(&d[..20]), None);
    }
}
