//! A source's side of the wire: its wake-ups and the frames it learns of (feedback), each
//! emitted frame serialised on the source's link and then through the switch onto the NIC port
//! (dropped when the switch's buffer in front of the port is full).

use crate::net::core::skbuff::{Packet, PacketTcp};
use crate::sim::*;
use crate::types::*;
use crate::wire::FlowWire;
use hostsim_engine::Time;
use hostsim_workload::Feedback;

impl<M: Mechanisms> Host<M> {
    pub fn source_wake(&mut self, s: usize, gen: u32) {
        let now = self.now();
        if !self.wire.srcs[s].timer.fires(gen) {
            return;
        }
        let mut out = std::mem::take(&mut self.wire.emit_buf);
        out.clear();
        let src = &mut self.wire.srcs[s];
        let next = src.src.wake(now, &mut src.rng, &mut out);
        if let Some(t) = next {
            let gen = self.wire.srcs[s].timer.arm();
            self.post(t, Ev::SourceWake { src: s as u32, gen });
        }
        self.send_emits(s, &out);
        self.wire.emit_buf = out;
    }

    pub fn source_feedback(&mut self, s: usize, fb: Feedback) {
        let now = self.now();
        let mut out = std::mem::take(&mut self.wire.emit_buf);
        out.clear();
        if let Some(t) = self.wire.srcs[s].src.feedback(now, fb, &mut out) {
            let gen = self.wire.srcs[s].timer.arm();
            self.post(t, Ev::SourceWake { src: s as u32, gen });
        }
        self.send_emits(s, &out);
        self.wire.emit_buf = out;
    }

    /// Serialise emitted frames on the source's link, then through the switch onto the port.
    fn send_emits(&mut self, s: usize, out: &[hostsim_workload::Emit]) {
        let now = self.now();
        for e in out {
            self.stats.offered += 1;
            let src = &mut self.wire.srcs[s];
            let (link_ns, port_ns) = src.wire_ns(e.payload_bytes, e.tcp, &self.dev.nics);
            let nic_i = src.nic as usize;
            let nic = &self.dev.nics[nic_i];
            let FlowWire { client: c, dst_port, hash, queue } = src.flow_wire(s, e.flow, self.net.hash_key, nic);
            let start = now.max(src.link_free[c as usize]);
            let at_switch = start + Time(link_ns);
            src.link_free[c as usize] = at_switch;
            let delay = src.link_delay_ns;
            // IP forwarding: a packet no local socket takes follows the NIC's route, if any.
            let fwd = if self.net.port_sock[dst_port as usize] == NONE { nic.fwd_to } else { NONE };
            let pkt = self.skb.alloc(
                Packet {
                    src: s as u32,
                    flow: e.flow,
                    seq: e.seq,
                    bytes: e.payload_bytes,
                    tcp: e.tcp,
                    dst_port,
                    hash,
                    queue,
                    rx_cpu: NONE,
                    t_sock: Time::ZERO,
                    t_nic: Time::ZERO,
                    fwd,
                    live: true,
                },
                PacketTcp { ack: e.ack, tag: e.tag, win: e.win, tx_segs: 0, flags: e.flags },
            );
            if delay == 0 {
                self.switch_forward(pkt, nic_i, at_switch, port_ns);
            } else {
                // The frame is on a long link: it reaches the switch later, in time order with
                // everyone else's (the switch's output queue is kept in arrival order).
                self.post(at_switch + Time(delay), Ev::AtSwitch { pkt, nic: nic_i as u32 });
            }
        }
    }

    /// A frame reached the switch at `at_switch`: it queues for the port's wire (`port_ns` to
    /// cross it), or is dropped when the switch's buffer in front of the port is full.
    ///
    /// Always inlined (into `send_emits` and the `AtSwitch` event): as a call it cost the frame
    /// path a register save and restore around it (callgrind, livelock-400k).
    #[inline(always)]
    pub fn switch_forward(&mut self, pkt: PktId, nic_i: usize, at_switch: Time, port_ns: u64) {
        let nic = &self.dev.nics[nic_i];
        let ready = at_switch + Time(nic.cfg.switch_latency_ns);
        let begin = ready.max(nic.rx_wire_free);
        let waited = begin.since(ready).ns();
        // Bytes queued ahead in the switch (no division when nothing waits: 0 bytes).
        let over = waited > 0 && (waited as f64 / nic.ns_per_byte) as u64 > nic.cfg.switch_buffer_bytes;
        let arrive = begin + Time(port_ns);
        if over {
            self.drop_pkt(pkt, DropPlace::Switch);
            return;
        }
        let nic = &mut self.dev.nics[nic_i];
        nic.rx_wire_free = arrive;
        self.post(arrive, Ev::FrameArrive { pkt });
    }
}
