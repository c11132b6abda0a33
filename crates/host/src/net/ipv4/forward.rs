//! IP forwarding: a packet that arrives on a NIC with a route (`[[route]]`) and that no local
//! socket takes is forwarded by the kernel, with no socket and no process, to the external sink
//! on the route's output NIC. On the Linux paths (`smp`, `up`, `bkl`) the whole of it runs in
//! the NET_RX softirq unit that takes the packet (Linux 2.4 `ip_rcv` → `ip_route_input` →
//! `ip_forward` → `ip_output` → `dev_queue_xmit` → the driver's `hard_start_xmit`), costing
//! `ip_forward_ns` plus the driver's transmit; under `functional` it is split into an IP stage
//! and a transmit stage on different CPUs (`mechanisms/takeuchi_symbiose/threads.rs`).

use crate::drivers::net::txring::TxFrame;
use crate::sim::*;
use crate::types::*;
use hostsim_workload::{Feedback, SourceKind};

impl<M: Mechanisms> Host<M> {
    /// Each NIC's forwarding target from the `[[route]]` table: the first route whose `from` is
    /// the NIC (or absent) sends to the sink on its `to` NIC. Validation guarantees both exist.
    pub fn set_routes(&mut self) {
        for i in 0..self.dev.nics.len() {
            let name = self.dev.nics[i].cfg.name.clone();
            let route = self.cfg.routes.iter().find(|r| r.from.as_ref().is_none_or(|f| *f == name));
            let Some(route) = route else { continue };
            let sink = self.cfg.traffic.iter().position(|t| t.kind == SourceKind::Sink && t.nic == route.to);
            self.dev.nics[i].fwd_to = sink.map_or(NONE, |s| s as u32);
        }
    }

    /// The driver's transmit of one frame (`hard_start_xmit`: descriptor, doorbell), charged
    /// by whoever hands the frame to the device (`net/core/tx.rs`).
    pub fn xmit_cost(&self) -> u64 {
        self.cfg.profile.costs.driver_tx_frame_ns
    }

    /// Softirq cost of forwarding one packet on the Linux paths: IP forwarding and transmit.
    pub fn forward_cost(&self) -> u64 {
        self.cfg.profile.costs.ip_forward_ns + self.xmit_cost()
    }

    /// The Linux paths' protocol unit for a forwarded packet has run on `cpu`.
    pub fn ip_forward(&mut self, _cpu: usize, pkt: PktId) {
        self.forward_xmit(pkt);
    }

    /// The frame goes to the output device (`dev_queue_xmit`: TX ring, device queue, TX
    /// completion interrupts, `net/core/tx.rs`), towards its sink; the packet leaves the host's receive
    /// side (counted as `forwarded`, and from here on as a transmitted frame).
    pub fn forward_xmit(&mut self, pkt: PktId) {
        let p = &self.skb.pkts[pkt as usize];
        let (dst, flow, seq, bytes) = (p.fwd, p.flow, p.seq, p.bytes);
        // `ixgbe_select_queue`: a forwarded skb keeps the RX queue it came in on (`net/core/tx.rs`).
        let rxq = p.queue;
        let sel = rxq - self.dev.nics[self.dev.queues[rxq as usize].nic as usize].first_queue;
        let latency = self.now().since(p.t_nic).ns();
        self.stats.forwarded += 1;
        if self.now().ns() >= self.cfg.warmup_ns {
            self.stats.forward_latency.record(latency);
        }
        self.skb.free(pkt);
        self.dev_queue_xmit_sel(
            TxFrame { dst, payload: bytes, tcp: false, fb: Feedback::Forwarded { flow, seq } },
            sel,
        );
    }
}
