/* Shared between the tc program (arrivals_tc.bpf.c) and its user space (src/arrivals.rs): one
 * record per TCP frame seen at the sink's ingress, and the program's settings. Rust sees these
 * through the skeleton's BTF-generated types; change only this file. */
#ifndef HOSTSIM_ARRIVALS_H
#define HOSTSIM_ARRIVALS_H

/* One frame, as it reached the sink's veth (tcx ingress, before IP). */
struct arrival {
	__u64 ts_ns;      /* bpf_ktime_get_ns(): CLOCK_MONOTONIC, the clock the regulator uses */
	__u32 seq;        /* TCP sequence number (host order) */
	__u16 len;        /* skb->len: the Ethernet frame without FCS */
	__u16 payload;    /* TCP payload bytes */
};

/* Written by user space before traffic starts. */
struct arrivals_ctl {
	__u32 port;       /* TCP destination port to record (the sink's); others pass unseen */
	__u32 pad;
};

#endif
