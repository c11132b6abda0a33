//! Networking (Linux `net/`): the device-independent receive and transmit paths, sockets, and
//! the protocols.
//!
//! - `core/`: `netif_rx`, NAPI, the NET_RX softirq, backlogs, RPS/RFS (`net/core/dev.c`), the
//!   device transmit layer, and socket state (`net/core/sock.c`).
//! - `ipv4/`: UDP and TCP input, TCP output, the event-driven servers' connections, forwarding.

pub mod core;
pub mod ipv4;

use crate::config::HostConfig;
use crate::kernel::task::{sock_level, Proc};
use crate::net::core::cpumap::Cpumap;
use crate::net::core::sock::{Endpoints, Sock};
use crate::net::ipv4::tcp_conn::Conn;
use crate::policies::Xdp;
use crate::types::NONE;
use hostsim_engine::RngStreams;

/// The network stack's state: sockets and the port table, RPS/RFS tables and the flow-hash key,
/// the sending TCP's connections, the event-driven programs' sockets, and which CPU hands frames
/// to the device now.
pub struct NetStack {
    pub socks: Vec<Sock>,
    /// Port → socket (`socks` index), NONE where nothing is bound.
    pub port_sock: Vec<u32>,
    /// RFS sock flow table (`rps_sock_flow_table`): the CPU of a flow's last recvmsg per bucket.
    pub sock_flow: Vec<u32>,
    pub rps_cpus: Vec<u32>,
    /// Key of the flow hash (RSS, RPS, RFS, flow limit): 0, or drawn per run (per boot).
    pub hash_key: u64,
    /// TCP connections of in-host senders (`net/ipv4/tcp_conn.rs`, `net/ipv4/tcp_output.rs`).
    pub conns: Vec<Conn>,
    /// Slots of closed connections, reused by `tcp_connect`.
    pub free_conns: Vec<u32>,
    /// Connected and listening sockets of event-driven programs, their poll sets
    /// (`net/ipv4/endpoint.rs`, `fs/select.rs`).
    pub eps: Endpoints,
    /// The CPU whose work hands frames to the device now (`smp_processor_id()` for the TX
    /// queue choice, `net/core/tx.rs`): set as each unit of work completes, and by timers to the
    /// CPU that armed them (Linux runs a timer on the CPU whose base holds it, `mod_timer`).
    pub xmit_cpu: u32,
    /// A GRO/RSC aggregate's segments are being delivered and this is not the last: the ACK
    /// waits for the last one (`net/ipv4/input.rs`, `protocol_deliver`).
    pub agg_defer_ack: bool,
    /// XDP `cpumap`: the CPU map entry the program redirects to (`net/core/cpumap.rs`).
    pub cpumap: Option<Cpumap>,
    /// The program at the drivers' entry point (`kernel.xdp`; a mechanism's: `Xdp::Mech`).
    pub xdp: Xdp,
}

impl NetStack {
    /// The stack with the sockets the tasks bound (`kernel::task::spawn_tasks`), each given the
    /// priority level of its highest-priority process.
    pub fn new(
        cfg: &HostConfig,
        mut socks: Vec<Sock>,
        port_sock: Vec<u32>,
        procs: &[Proc],
        streams: &RngStreams,
    ) -> NetStack {
        for (s, sock) in socks.iter_mut().enumerate() {
            sock.level = sock_level(procs, s as u32);
        }
        NetStack {
            socks,
            port_sock,
            sock_flow: if cfg.kernel.rfs { vec![NONE; cfg.kernel.rfs_entries as usize] } else { Vec::new() },
            rps_cpus: cfg.kernel.rps_cpus.clone(),
            hash_key: if cfg.kernel.rss_key_per_boot { streams.stream("rss-key").next_u64() } else { 0 },
            conns: Vec::new(),
            free_conns: Vec::new(),
            eps: Endpoints::default(),
            xmit_cpu: 0,
            agg_defer_ack: false,
            cpumap: cfg.kernel.xdp.is("cpumap").then(|| Cpumap::new(cfg.online_cpus(), cfg.kernel.cpumap_qsize)),
            xdp: Xdp::None,
        }
    }
}
