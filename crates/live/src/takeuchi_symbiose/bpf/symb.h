/* Shared between takeuchi-symbiose's BPF programs (symb.bpf.c) and their user space
 * (src/takeuchi_symbiose/experiment.rs): control blocks and counters. Rust sees them through the skeleton's
 * BTF-generated types. */
#ifndef HOSTSIM_SYMB_H
#define HOSTSIM_SYMB_H

/* CPUs the cpumap can name. */
#define SYMB_CPUS_MAX 64
/* Router kthreads whose in-context softirq time is told apart (the driver half's NAPI kthread,
 * the IP half's cpumap kthread). */
#define SYMB_KTIDS_MAX 4
/* NET_RX_SOFTIRQ in include/linux/interrupt.h. */
#define SYMB_NET_RX_SOFTIRQ 3

/* The router's input program: pass every frame to the kernel's stack on this CPU (`redirect`
 * SYMB_PASS: the kernel's own forwarding), redirect it to the cpumap entry of CPU `cpu`
 * (SYMB_CPUMAP, the functional split: the IP half in that CPU's cpumap kthread), or to the
 * AF_XDP socket of its RX queue (SYMB_XSK, split-afxdp: the driver and IP threads in user
 * space; dropped when the queue has no socket). */
#define SYMB_PASS 0
#define SYMB_CPUMAP 1
#define SYMB_XSK 2
/* Queues of the input veth the XSKMAP can name. */
#define SYMB_QUEUES_MAX 4
struct symb_ctl {
	__u32 redirect;
	__u32 cpu;
};

/* Per CPU, at the router's input (the driver half). */
struct symb_rtr_stats {
	__u64 rx;
	__u64 redirected;
	__u64 redirect_failed; /* no cpumap entry: passed instead; no socket: dropped */
};

/* The sink: where the sequence number is, and the window whose frames are counted apart. */
struct symb_sink_ctl {
	__u32 seq_off;
	__u32 pad;
	__u64 seq_lo;
	__u64 seq_hi;
};

/* Per CPU, at the sink. */
struct symb_sink_stats {
	__u64 frames;
	__u64 valid;       /* IPv4 header and UDP checksums both right */
	__u64 bad_ip;      /* IPv4 header checksum wrong (or a bad header length) */
	__u64 bad_udp;     /* UDP checksum wrong (or a length beyond the frame) */
	__u64 no_csum;     /* UDP checksum field 0: the sender gave none */
	__u64 other;       /* not IPv4/UDP (nothing else should arrive) */
	__u64 in_window;   /* valid frames whose sequence number is in [seq_lo, seq_hi) */
};

/* Per CPU: NET_RX softirq time, all of it and the part run while a router kthread was current
 * (its local_bh_enable running pending softirqs), in ns. */
struct symb_softirq {
	__u64 start;
	__u64 net_rx_ns;
	__u64 net_rx_in_kthread_ns;
	__u64 net_rx_count;
};

#endif
