//! The trace of what every CPU ran, as nested slices, streamed to a [`TraceSink`] with bounded
//! memory.
//!
//! **What a slice is.** One slice per *unit run*: a unit of work (a hard-IRQ entry, one frame's
//! driver work, a NET_RX poll or protocol step, a context switch, a process's computation or
//! system call) from the moment it starts on a CPU until it completes or its process is switched
//! out. Slices nest like the CPU's contexts (`kernel/context.rs`): an interrupt that arrives during a unit
//! is a child slice of it, a softirq pass started at IRQ exit is a child of the unit the IRQ
//! interrupted. A CPU's track therefore shows at any instant the stack of contexts, the deepest
//! being what runs; idle time has no slice. The category of a slice is its CPU accounting state.
//!
//! **How it reaches a file.** The model knows no file format: the hooks in `kernel/context.rs`, `net/core/rx.rs`,
//! `kernel/sched/core.rs` and `kernel/process.rs` call [`Trace::begin`] / [`Trace::end`] with a label id (labels are
//! fixed when the host is built: one per interrupt source, NET_RX, and process), which appends a
//! small record to a buffer; the run loop hands the buffer to the caller's [`TraceSink`] every
//! [`FLUSH_RECORDS`] records (the CLI's sinks write Perfetto protobuf or Chrome JSON). Memory is
//! bounded by that buffer whatever the simulated length.
//!
//! **Time window.** Only slices overlapping `[from, to)` are kept, clipped to it: when simulated
//! time first reaches `from`, every open unit gets its begin at `from`; when it reaches `to`,
//! every open slice ends at `to` and nothing more is recorded. Records come out in
//! non-decreasing time, so a reader never needs to sort them.

use hostsim_engine::Time;

/// Records buffered before they are handed to the sink.
pub const FLUSH_RECORDS: usize = 1 << 16;

/// Where trace slices go. `start` is called once, before any slice; `begin`/`end` then come in
/// non-decreasing time, properly nested per CPU (an `end` closes that CPU's innermost open slice).
pub trait TraceSink {
    /// The tracks (CPUs `0..ncpu`), every label a slice can have (indexed by `label`), and the
    /// names of the CPU states (indexed by `state`, the slice's category).
    fn start(&mut self, ncpu: usize, labels: &[String], states: &[&str]);
    fn begin(&mut self, cpu: u32, ts_ns: u64, label: u32, state: u8);
    fn end(&mut self, cpu: u32, ts_ns: u64);
}

/// The part of a run to trace, in simulated ns: `[from_ns, to_ns)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceWindow {
    pub from_ns: u64,
    pub to_ns: u64,
}

impl TraceWindow {
    /// The whole run.
    pub const ALL: TraceWindow = TraceWindow { from_ns: 0, to_ns: u64::MAX };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceRec {
    Begin { cpu: u32, ts: u64, label: u32, state: u8 },
    End { cpu: u32, ts: u64 },
}

/// Window progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Before,
    Inside,
    After,
}

/// The model-side trace: open slices per CPU, the window, and the buffer of records.
pub struct Trace {
    window: TraceWindow,
    phase: Phase,
    /// Per CPU, the open units (label, state), outermost first; a unit is open from its begin
    /// whether or not the window has started (so that the window can begin them at `from`).
    open: Vec<Vec<(u32, u8)>>,
    buf: Vec<TraceRec>,
    /// Slices recorded (begins inside the window): the count a reader of the file must find.
    slices: u64,
}

impl Trace {
    pub fn new(ncpu: usize, window: TraceWindow) -> Trace {
        Trace {
            window,
            phase: Phase::Before,
            open: vec![Vec::with_capacity(8); ncpu],
            buf: Vec::with_capacity(1024),
            slices: 0,
        }
    }

    /// Slices recorded so far.
    pub fn slices(&self) -> u64 {
        self.slices
    }

    /// Move the window's phase up to `now`: begin every open unit at `from`, or end every open
    /// slice at `to`.
    #[inline]
    fn advance(&mut self, now: Time) {
        let t = now.ns();
        if self.phase == Phase::Before && t >= self.window.from_ns && t < self.window.to_ns {
            self.phase = Phase::Inside;
            let from = self.window.from_ns;
            for (cpu, stack) in self.open.iter().enumerate() {
                for &(label, state) in stack {
                    self.buf.push(TraceRec::Begin { cpu: cpu as u32, ts: from, label, state });
                    self.slices += 1;
                }
            }
        }
        if self.phase != Phase::After && t >= self.window.to_ns {
            self.close_all(self.window.to_ns);
        }
    }

    /// End every open slice at `ts` (innermost first) and stop recording.
    fn close_all(&mut self, ts: u64) {
        if self.phase == Phase::Inside {
            for (cpu, stack) in self.open.iter().enumerate() {
                for _ in stack {
                    self.buf.push(TraceRec::End { cpu: cpu as u32, ts });
                }
            }
        }
        self.phase = Phase::After;
    }

    /// A unit starts on `cpu` at `now`, nested at `depth` (1 = outermost: the stack's length with
    /// the unit's frame on it).
    #[inline]
    pub fn begin(&mut self, cpu: usize, depth: usize, now: Time, label: u32, state: u8) {
        self.advance(now);
        let stack = &mut self.open[cpu];
        debug_assert_eq!(stack.len() + 1, depth, "trace: unit begins at depth {depth} on cpu {cpu}");
        stack.push((label, state));
        if self.phase == Phase::Inside {
            self.buf.push(TraceRec::Begin { cpu: cpu as u32, ts: now.ns(), label, state });
            self.slices += 1;
        }
    }

    /// The unit at `depth` on `cpu` completes or leaves the CPU at `now`. A no-op if that unit
    /// was already ended (a process unit set up but switched out before it ran).
    #[inline]
    pub fn end(&mut self, cpu: usize, depth: usize, now: Time) {
        self.advance(now);
        let stack = &mut self.open[cpu];
        if stack.len() < depth {
            return;
        }
        debug_assert_eq!(stack.len(), depth, "trace: end at depth {depth} under open children on cpu {cpu}");
        stack.pop();
        if self.phase == Phase::Inside {
            self.buf.push(TraceRec::End { cpu: cpu as u32, ts: now.ns() });
        }
    }

    /// Is the buffer due for a flush?
    #[inline]
    pub fn full(&self) -> bool {
        self.buf.len() >= FLUSH_RECORDS
    }

    /// Hand the buffered records to `sink`.
    pub fn flush(&mut self, sink: &mut dyn TraceSink) {
        for r in self.buf.drain(..) {
            match r {
                TraceRec::Begin { cpu, ts, label, state } => sink.begin(cpu, ts, label, state),
                TraceRec::End { cpu, ts } => sink.end(cpu, ts),
            }
        }
    }

    /// The run ended at `now`: close what is open (at the window's end if earlier).
    pub fn finish(&mut self, now: Time) {
        self.advance(now);
        let ts = now.ns().min(self.window.to_ns);
        self.close_all(ts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Rec(Vec<TraceRec>);
    impl TraceSink for Rec {
        fn start(&mut self, _: usize, _: &[String], _: &[&str]) {}
        fn begin(&mut self, cpu: u32, ts: u64, label: u32, state: u8) {
            self.0.push(TraceRec::Begin { cpu, ts, label, state });
        }
        fn end(&mut self, cpu: u32, ts: u64) {
            self.0.push(TraceRec::End { cpu, ts });
        }
    }

    /// A unit spanning the window's start is begun at `from`; one spanning its end is ended at
    /// `to`; units outside are not recorded; nesting is kept.
    #[test]
    fn window_clips_and_keeps_nesting() {
        let mut t = Trace::new(1, TraceWindow { from_ns: 100, to_ns: 300 });
        t.begin(0, 1, Time(10), 0, 3); // process unit from 10 ...
        t.begin(0, 2, Time(50), 1, 0); // an IRQ before the window
        t.end(0, 2, Time(60));
        t.begin(0, 2, Time(150), 1, 0); // an IRQ inside
        t.end(0, 2, Time(160));
        t.end(0, 1, Time(200)); // ... to 200
        t.begin(0, 1, Time(250), 0, 3); // runs past the window's end
        t.begin(0, 2, Time(320), 1, 0); // after the window: not recorded
        t.end(0, 2, Time(330));
        t.finish(Time(400));
        let mut sink = Rec::default();
        t.flush(&mut sink);
        use TraceRec::*;
        assert_eq!(
            sink.0,
            [
                Begin { cpu: 0, ts: 100, label: 0, state: 3 },
                Begin { cpu: 0, ts: 150, label: 1, state: 0 },
                End { cpu: 0, ts: 160 },
                End { cpu: 0, ts: 200 },
                Begin { cpu: 0, ts: 250, label: 0, state: 3 },
                End { cpu: 0, ts: 300 },
            ]
        );
        assert_eq!(t.slices(), 3);
    }

    #[test]
    fn end_of_an_already_ended_unit_is_ignored() {
        let mut t = Trace::new(1, TraceWindow::ALL);
        t.begin(0, 1, Time(0), 0, 3);
        t.end(0, 1, Time(5));
        t.end(0, 1, Time(5)); // the frame is popped later without having run again
        t.finish(Time(9));
        let mut sink = Rec::default();
        t.flush(&mut sink);
        assert_eq!(sink.0.len(), 2);
    }
}
