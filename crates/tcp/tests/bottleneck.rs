//! The sender against the textbook, over a bottleneck of its own: N flows through one drop-tail
//! queue of `buffer` packets served at `rate_pps`, with a fixed one-way delay each way and a
//! receiver that acknowledges every segment (duplicate ACKs for out-of-order ones). A small
//! discrete-event loop drives `TcpSnd` as the host and the external sources do (`on_ack`,
//! `next_tx`, `on_timeout`), so these tests see the sender's dynamics without the rest of the
//! model.
//!
//! - Reno saws between W/2 and W: every loss comes when the window reaches the pipe's capacity
//!   W = bandwidth × delay + buffer (+1 for the segment in service, ±2 for ACK timing), and
//!   halves it.
//! - N Reno flows of equal RTT share the link: Jain's fairness index of their goodputs ≥ 0.95
//!   over 60 s (AIMD converges to the fair share, Chiu & Jain 1989), and the link stays ≥ 90%
//!   busy (a buffer of half the bandwidth × delay).
//! - CUBIC after a loss keeps 717/1024 of its window and regains the link at least as fast as
//!   Reno, so it keeps the link at least as busy.

use hostsim_engine::Time;
use hostsim_tcp::{CcKind, Era, Segmentation, TcpSnd};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

const MSS: u32 = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The queue's head finishes service.
    Depart,
    /// Segment (flow, seq, len) reaches the receiver.
    Arrive(usize, u64, u32),
    /// An ACK reaches flow's sender.
    Ack(usize, u64),
    /// A flow's retransmission timer (generation).
    Rto(usize, u64),
}

struct Net {
    rate_pps: f64,
    buffer: usize,
    delay_ns: u64,
    queue: VecDeque<(usize, u64, u32)>,
    busy: bool,
    /// Service time given from `measure_from_ns` on.
    busy_ns: u64,
    measure_from_ns: u64,
    events: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    drops: u64,
}

impl Net {
    fn at(&mut self, t: u64, e: Ev) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, e)));
    }

    fn service_ns(&self) -> u64 {
        (1e9 / self.rate_pps) as u64
    }

    fn enqueue(&mut self, now: u64, seg: (usize, u64, u32)) {
        if self.queue.len() >= self.buffer + usize::from(self.busy) {
            self.drops += 1;
            return;
        }
        self.queue.push_back(seg);
        if !self.busy {
            self.busy = true;
            if now >= self.measure_from_ns {
                self.busy_ns += self.service_ns();
            }
            let s = self.service_ns();
            self.at(now + s, Ev::Depart);
        }
    }
}

struct Flow {
    snd: TcpSnd,
    rto_gen: u64,
    rto_armed: bool,
    /// Receiver: next expected byte and the segments held above a hole.
    rcv_nxt: u64,
    ooo: BTreeMap<u64, u64>,
    acked: u64,
    /// (cwnd just before each fast retransmit, ssthresh it set)
    losses: Vec<(u32, u32)>,
    /// Timeouts so far at each of those losses.
    timeouts_at_loss: Vec<u64>,
    /// Smallest cwnd between two losses, in congestion avoidance.
    min_between: Vec<u32>,
}

fn send(f: usize, flows: &mut [Flow], net: &mut Net, now: u64) {
    let fl = &mut flows[f];
    while fl.snd.write_seq - fl.snd.snd_nxt < 64 * u64::from(MSS) {
        fl.snd.append(64 * MSS, true);
    }
    let was = fl.snd.outstanding();
    while let Some(s) = fl.snd.next_tx(Time(now)) {
        net.enqueue(now, (f, s.seq, s.len));
    }
    if !was && fl.snd.outstanding() && !fl.rto_armed {
        fl.rto_gen += 1;
        fl.rto_armed = true;
        let (g, r) = (fl.rto_gen, fl.snd.rto_ns);
        net.at(now + r, Ev::Rto(f, g));
    }
}

/// Run `n` flows of `kind` for `secs`; returns the flows and the link's busy fraction over the
/// second half of the run (past the start-up transient).
fn run(n: usize, kind: CcKind, rate_pps: f64, buffer: usize, delay_ns: u64, secs: u64) -> (Vec<Flow>, f64) {
    let end = secs * 1_000_000_000;
    let mut net = Net {
        rate_pps,
        buffer,
        delay_ns,
        queue: VecDeque::new(),
        busy: false,
        busy_ns: 0,
        measure_from_ns: end / 2,
        events: BinaryHeap::new(),
        seq: 0,
        drops: 0,
    };
    let mut flows: Vec<Flow> = (0..n)
        .map(|_| Flow {
            snd: TcpSnd::new(MSS, u32::MAX, 0, Segmentation::Stream, true, u64::MAX).with_cc(
                kind,
                Era::Linux32,
                1000,
                Time(0),
            ),
            rto_gen: 0,
            rto_armed: false,
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            acked: 0,
            losses: Vec::new(),
            timeouts_at_loss: Vec::new(),
            min_between: Vec::new(),
        })
        .collect();
    for f in 0..n {
        // Staggered starts, so the flows do not move in lockstep.
        let start = f as u64 * 7_000_000;
        net.at(start, Ev::Ack(f, u64::MAX));
    }
    while let Some(Reverse((now, _, ev))) = net.events.pop() {
        if now > end {
            break;
        }
        match ev {
            Ev::Depart => {
                let (f, seq, len) = net.queue.pop_front().expect("a departure has a head");
                let d = net.delay_ns;
                net.at(now + d, Ev::Arrive(f, seq, len));
                if net.queue.is_empty() {
                    net.busy = false;
                } else {
                    if now >= net.measure_from_ns {
                        net.busy_ns += net.service_ns();
                    }
                    let s = net.service_ns();
                    net.at(now + s, Ev::Depart);
                }
            }
            Ev::Arrive(f, seq, len) => {
                let fl = &mut flows[f];
                let end_seq = seq + u64::from(len);
                if seq == fl.rcv_nxt {
                    fl.rcv_nxt = end_seq;
                    while let Some((&s, &e)) = fl.ooo.first_key_value() {
                        if s > fl.rcv_nxt {
                            break;
                        }
                        fl.rcv_nxt = fl.rcv_nxt.max(e);
                        fl.ooo.pop_first();
                    }
                } else if seq > fl.rcv_nxt {
                    fl.ooo.insert(seq, end_seq);
                }
                let (ack, d) = (fl.rcv_nxt, net.delay_ns);
                net.at(now + d, Ev::Ack(f, ack));
            }
            Ev::Ack(f, ack) => {
                if ack != u64::MAX {
                    let fl = &mut flows[f];
                    let before = fl.snd.w.cwnd;
                    let e = fl.snd.on_ack(Time(now), ack, u64::MAX);
                    if e.fast_retransmit {
                        fl.losses.push((before, fl.snd.w.ssthresh));
                        fl.timeouts_at_loss.push(fl.snd.timeouts);
                        fl.min_between.push(u32::MAX);
                    } else if let Some(m) = fl.min_between.last_mut() {
                        if fl.snd.w.cwnd > fl.snd.w.ssthresh {
                            *m = (*m).min(fl.snd.w.cwnd);
                        }
                    }
                    fl.acked += e.acked;
                    if e.acked > 0 {
                        fl.rto_gen += 1;
                        fl.rto_armed = fl.snd.outstanding();
                        if fl.rto_armed {
                            let (g, r) = (fl.rto_gen, fl.snd.rto_ns);
                            net.at(now + r, Ev::Rto(f, g));
                        }
                    }
                }
                send(f, &mut flows, &mut net, now);
            }
            Ev::Rto(f, g) => {
                if flows[f].rto_gen == g && flows[f].rto_armed {
                    flows[f].rto_armed = false;
                    flows[f].snd.on_timeout(Time(now));
                    send(f, &mut flows, &mut net, now);
                }
            }
        }
    }
    let busy = net.busy_ns as f64 / (end - end / 2) as f64;
    (flows, busy)
}

#[test]
fn reno_saws_between_half_and_the_pipe() {
    // 10,000 pkt/s (80 Mbit/s of 1000 B), 10 ms each way: bandwidth x delay = 200 segments;
    // a buffer of as much: W = 401, and the queue never drains as the window saws from 200.
    let (flows, busy) = run(1, CcKind::Reno, 10_000.0, 200, 10_000_000, 90);
    let fl = &flows[0];
    let w = 10_000.0 * 0.020 + 200.0 + 1.0;
    // Slow start overshoots the pipe and loses several segments of one window; without SACK,
    // NewReno then halves once per remaining hole. The steady state is the last ten losses.
    assert!(fl.losses.len() >= 13, "a loss every ~200 RTTs: {:?}", fl.losses);
    let steady = fl.losses.len() - 10;
    for &(cwnd, ssthresh) in &fl.losses[steady..] {
        assert!((f64::from(cwnd) - w).abs() <= 3.0, "a loss at cwnd {cwnd}, the pipe holds {w}: {:?}", fl.losses);
        assert_eq!(ssthresh, (cwnd / 2).max(2), "Reno halves the window");
    }
    // Between two steady losses the window never falls below half of W (no timeouts).
    for &m in &fl.min_between[steady..fl.min_between.len() - 1] {
        assert!(
            f64::from(m) >= w / 2.0 - 2.0 && m != u32::MAX,
            "the window fell to {m} between losses: {:?}",
            fl.min_between
        );
    }
    // No timeout in the steady state (the slow-start overshoot may have had one).
    assert_eq!(fl.timeouts_at_loss[steady], fl.snd.timeouts, "a timeout in the steady state");
    // A buffer of the bandwidth x delay keeps the link busy through the sawtooth.
    assert!(busy > 0.99, "link busy {busy}");
}

#[test]
fn reno_flows_share_the_link_fairly() {
    let (flows, busy) = run(4, CcKind::Reno, 10_000.0, 100, 10_000_000, 60);
    let x: Vec<f64> = flows.iter().map(|f| f.acked as f64).collect();
    let jain = x.iter().sum::<f64>().powi(2) / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>());
    assert!(jain >= 0.95, "Jain's index {jain} over goodputs {x:?}");
    assert!(busy > 0.9, "link busy {busy}");
}

#[test]
fn cubic_keeps_seven_tenths_and_the_link_at_least_as_busy() {
    let (reno, reno_busy) = run(1, CcKind::Reno, 10_000.0, 20, 10_000_000, 60);
    let (cubic, cubic_busy) = run(1, CcKind::Cubic, 10_000.0, 20, 10_000_000, 60);
    let fl = &cubic[0];
    assert!(fl.losses.len() >= 3, "{:?}", fl.losses);
    for &(cwnd, ssthresh) in &fl.losses[1..] {
        assert_eq!(ssthresh, (cwnd * 717 / 1024).max(2), "CUBIC's beta");
    }
    assert!(
        cubic_busy >= reno_busy - 0.005,
        "CUBIC {cubic_busy} vs Reno {reno_busy} ({} losses)",
        reno[0].losses.len()
    );
}
