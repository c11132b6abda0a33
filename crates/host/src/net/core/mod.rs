//! The device-independent core (Linux `net/core/`).
//!
//! - `rx`: the receive path above the driver (`net/core/dev.c`: `netif_rx`, `napi_schedule`,
//!   `net_rx_action`, `process_backlog`, ksoftirqd hand-over, RPS/RFS steering).
//! - `cpumap`: XDP redirect into a CPU map (kernel/bpf/cpumap.c): bulk queues, the entry's ring
//!   and kthread (`cpumap_kthread`: the host's side of it).
//! - `napi_thread`: threaded NAPI (`napi_threaded_poll`): a NIC queue's poll in a kthread.
//! - `gro`: generic receive offload (`napi_gro_receive`): TCP segments merged in the NAPI poll.
//! - `backlog`: the per-CPU backlog's queueing policy hook (`enqueue`/`dequeue`) and Linux's FIFO.
//! - `tx`: the device layer of the transmit path (`dev_queue_xmit` and below).
//! - `sock`: socket state: receive queues and buffers, connected and listening sockets, poll sets.

pub mod backlog;
pub mod cpumap;
pub mod cpumap_kthread;
pub mod gro;
pub mod napi_thread;
pub mod rx;
pub mod skbuff;
pub mod sock;
pub mod tx;
