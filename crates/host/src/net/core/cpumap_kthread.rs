//! The host side of the XDP CPU map (the queues and the kernel sources they follow: `cpumap.rs`):
//! the redirect unit's `bq_enqueue` on the polling CPU, `__cpu_map_flush` at the end of a NAPI
//! poll, and the entry kthread's steps (`cpu_map_kthread_run`, Linux 6.x kernel/bpf/cpumap.c).

use crate::kernel::task::{Pending, ProcState};
use crate::sim::*;
use crate::types::*;

impl<M: Mechanisms> Host<M> {
    /// The frame's redirect unit completed on `cpu` (NAPI poll): `bq_enqueue`.
    pub fn cpumap_enqueue(&mut self, cpu: usize, pkt: PktId) {
        let cm = self.net.cpumap.as_mut().expect("xdp = cpumap");
        self.skb.pkts[pkt as usize].rx_cpu = cpu as u32;
        for d in cm.enqueue(cpu, pkt) {
            self.drop_pkt(d, DropPlace::Cpumap);
        }
    }

    /// `xdp_do_flush` → `__cpu_map_flush` at the end of a NAPI poll on `cpu`: the bulk queue to
    /// the ring, then wake the kthread (a no-op when it is running or runnable).
    pub fn cpumap_flush(&mut self, cpu: usize) {
        let Some(cm) = self.net.cpumap.as_mut() else { return };
        if cm.bulk_len(cpu) == 0 {
            return;
        }
        let kthread = cm.kthread;
        for d in cm.flush_bulk(cpu) {
            self.drop_pkt(d, DropPlace::Cpumap);
        }
        self.wake_up(kthread, cpu, true);
    }

    /// `cpu_map_kthread_run`: finish the frame just processed, take the next or sleep.
    pub fn cpumap_kthread_step(&mut self, cpu: usize, pid: Pid) {
        match self.procs[pid as usize].pending {
            Pending::CpumapFrame { pkt } => {
                self.skb.pkts[pkt as usize].rx_cpu = cpu as u32;
                if self.skb.pkts[pkt as usize].fwd != NONE {
                    self.ip_forward(cpu, pkt);
                } else {
                    self.protocol_deliver(cpu, pkt);
                }
            }
            Pending::Slept | Pending::Start => {}
            p => unreachable!("cpumap kthread in state {p:?}"),
        }
        let next = self.net.cpumap.as_mut().expect("xdp = cpumap").next_frame();
        let Some(pkt) = next else {
            let p = &mut self.procs[pid as usize];
            p.pending = Pending::Slept;
            p.state = ProcState::Sleeping;
            return self.schedule(cpu);
        };
        let remote = {
            let last = self.skb.pkts[pkt as usize].rx_cpu;
            if last != NONE && last as usize != cpu {
                self.cfg.profile.cache.remote_packet_ns
            } else {
                0
            }
        };
        let cost = self.cfg.profile.mechanisms.xdp_skb_build_ns + remote + self.proto_cost(pkt);
        self.kthread_unit(cpu, pid, Pending::CpumapFrame { pkt }, cost)
    }
}
