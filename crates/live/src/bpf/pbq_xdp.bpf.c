// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* ozaki-pbq's priority drop at the driver's entry point (paper 000 §3.2, Fig. 3), as an XDP
 * program. The packet's destination port gives its priority level through the port -> level
 * table that the agent fills from the processes bound to each port and their nice values (the
 * paper's bind()/nice() hooks). Under high load (a flag the agent sets from the kernel's own
 * counters), levels below `shed_below` are dropped here, before RPS, the backlog, IP/UDP and the
 * socket have spent anything on them, except for a minimum share per level and window that is
 * smaller for lower priorities (the PBQ's per-queue minimum, Fig. 3 line 17). Everything else,
 * and everything at low load, passes. Where this differs from the PBQs of crates/host/src/mechanisms/ozaki_pbq/pbq.rs
 * and why: see src/lib.rs of this crate. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "pbq.h"

/* Port -> priority level; 0 (the lowest) for a port nobody has bound, as in the model. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} port_level SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PBQ_LEVELS + 1);
	__type(key, __u32);
	__type(value, struct pbq_level_stats);
} level_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PBQ_LEVELS);
	__type(key, __u32);
	__type(value, struct pbq_share);
} shares SEC(".maps");

/* In .bss: mmapped by the skeleton, so the agent writes it without a system call. */
volatile struct pbq_ctl ctl;

/* Destination port of a UDP or TCP packet over IPv4 or IPv6 (no extension headers), or -1. */
static __always_inline int dst_port(void *data, void *end)
{
	struct ethhdr *eth = data;
	void *l4;
	__u8 proto;

	if ((void *)(eth + 1) > end)
		return -1;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > end || ip->ihl < 5)
			return -1;
		if (ip->frag_off & bpf_htons(0x1fff)) /* a later fragment carries no port */
			return -1;
		l4 = (void *)ip + ip->ihl * 4;
		proto = ip->protocol;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end)
			return -1;
		l4 = ip6 + 1;
		proto = ip6->nexthdr;
	} else {
		return -1;
	}
	if (proto == IPPROTO_UDP) {
		struct udphdr *udp = l4;

		if ((void *)(udp + 1) > end)
			return -1;
		return bpf_ntohs(udp->dest);
	}
	if (proto == IPPROTO_TCP) {
		struct tcphdr *tcp = l4;

		if ((void *)(tcp + 1) > end)
			return -1;
		return bpf_ntohs(tcp->dest);
	}
	return -1;
}

/* Fig. 3 at the driver: pass, or drop with the level's minimum share respected. */
static __always_inline int decide(__u32 level, struct pbq_level_stats *st)
{
	struct pbq_share *sh;
	__u64 now, min;

	if (!ctl.enabled || !ctl.high_load || level >= ctl.shed_below)
		return XDP_PASS;
	sh = bpf_map_lookup_elem(&shares, &level);
	if (!sh)
		return XDP_PASS;
	now = bpf_ktime_get_ns();
	/* Two CPUs may both restart the window; that lets a few extra packets through, no more. */
	if (now - sh->start_ns >= ctl.window_ns) {
		sh->start_ns = now;
		sh->passed = 0;
	}
	min = (__u64)ctl.min_share_top * (level + 1) / PBQ_LEVELS;
	if (__sync_fetch_and_add(&sh->passed, 1) < min) {
		st->share_pass++;
		return XDP_PASS;
	}
	st->drop++;
	return XDP_DROP;
}

SEC("xdp")
int pbq_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct pbq_level_stats *st;
	__u32 key, level = PBQ_OTHER;
	int port = dst_port(data, end);

	if (port >= 0) {
		__u8 *lv;

		key = port;
		lv = bpf_map_lookup_elem(&port_level, &key);
		level = lv && *lv < PBQ_LEVELS ? *lv : 0;
	}
	st = bpf_map_lookup_elem(&level_stats, &level);
	if (!st)
		return XDP_PASS;
	st->rx++;
	if (level == PBQ_OTHER)
		return XDP_PASS; /* ARP, ICMP, fragments: never ours to drop */
	return decide(level, st);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
