// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* ozaki-pbq's priority drop at the driver's entry point (paper 000 §3.2, Fig. 3), as an XDP
 * program. The packet's destination port gives its priority level through the port -> level
 * table that the bind/release hooks at the end of this file keep (the paper's bind() hook; nice
 * changes: the agent's rescan, src/hooks.rs), or that the agent fills from /proc (the fallback). Under high load (a flag the agent sets from the kernel's own
 * counters), levels below `shed_below` are dropped here, before RPS, the backlog, IP/UDP and the
 * socket have spent anything on them, except for a minimum share per level and window that is
 * smaller for lower priorities (the PBQ's per-queue minimum, Fig. 3 line 17). An IP packet
 * whose port cannot be read (a later fragment, ESP, an unknown protocol) counts as the lowest
 * level, so that no shape of flood escapes; ARP and everything at low load pass. Where this
 * differs from the PBQs of crates/host/src/mechanisms/ozaki_pbq/pbq.rs
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

/* What dst_port() returns for a frame it cannot give a port to. */
#define PORT_NOT_IP -1   /* ARP: not ours to judge (PBQ_OTHER, passes) */
#define PORT_NONE -2     /* IP without a port we can read: a later fragment, ESP, an unknown
                          * protocol, too many extension headers. Treated as the lowest
                          * level, so that a flood in such a shape is shed first, not never. */

/* VLAN tags skipped (802.1Q, 802.1ad QinQ), and IPv6 extension headers walked, at most: */
#define VLAN_MAX 2
#define IPV6_EXT_MAX 6

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

/* Destination port of a UDP or TCP packet over IPv4 or IPv6, behind up to VLAN_MAX VLAN tags
 * and, for IPv6, IPV6_EXT_MAX extension headers (hop-by-hop, routing, destination options,
 * fragment, AH), as the kernel's own ipv6_skip_exthdr() walks them; or PORT_NOT_IP / PORT_NONE.
 * Only a first fragment (offset 0) carries the ports; later ones are PORT_NONE. */
static __always_inline int dst_port(void *data, void *end)
{
	struct ethhdr *eth = data;
	void *l3, *l4;
	__be16 h_proto;
	__u8 proto;
	int i;

	if ((void *)(eth + 1) > end)
		return PORT_NOT_IP;
	h_proto = eth->h_proto;
	l3 = eth + 1;
#pragma unroll
	for (i = 0; i < VLAN_MAX; i++) {
		struct vlan_hdr *v = l3;

		if (h_proto != bpf_htons(ETH_P_8021Q) && h_proto != bpf_htons(ETH_P_8021AD))
			break;
		if ((void *)(v + 1) > end)
			return PORT_NONE;
		h_proto = v->proto;
		l3 = v + 1;
	}
	if (h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = l3;

		if ((void *)(ip + 1) > end || ip->ihl < 5)
			return PORT_NONE;
		if (ip->frag_off & bpf_htons(0x1fff)) /* a later fragment carries no port */
			return PORT_NONE;
		l4 = (void *)ip + ip->ihl * 4;
		proto = ip->protocol;
	} else if (h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = l3;

		if ((void *)(ip6 + 1) > end)
			return PORT_NONE;
		l4 = ip6 + 1;
		proto = ip6->nexthdr;
#pragma unroll
		for (i = 0; i < IPV6_EXT_MAX; i++) {
			__u8 *h = l4;

			if (proto != IPPROTO_HOPOPTS && proto != IPPROTO_ROUTING && proto != IPPROTO_DSTOPTS &&
			    proto != IPPROTO_FRAGMENT && proto != IPPROTO_AH)
				break;
			if ((void *)(h + 8) > end)
				return PORT_NONE;
			if (proto == IPPROTO_FRAGMENT) {
				/* struct frag_hdr: nexthdr, reserved, frag_off (offset << 3 | flags), id */
				if (*(__be16 *)(h + 2) & bpf_htons(0xfff8))
					return PORT_NONE;
				l4 = h + 8;
			} else if (proto == IPPROTO_AH) {
				l4 = h + ((__u32)h[1] + 2) * 4;
			} else {
				l4 = h + ((__u32)h[1] + 1) * 8;
			}
			proto = h[0];
		}
	} else if (h_proto == bpf_htons(ETH_P_ARP)) {
		return PORT_NOT_IP;
	} else {
		return PORT_NONE; /* another protocol: nothing we could protect */
	}
	if (proto == IPPROTO_UDP) {
		struct udphdr *udp = l4;

		if ((void *)(udp + 1) > end)
			return PORT_NONE;
		return bpf_ntohs(udp->dest);
	}
	if (proto == IPPROTO_TCP) {
		struct tcphdr *tcp = l4;

		if ((void *)(tcp + 1) > end)
			return PORT_NONE;
		return bpf_ntohs(tcp->dest);
	}
	return PORT_NONE;
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
	} else if (port == PORT_NONE) {
		level = 0;
	}
	st = bpf_map_lookup_elem(&level_stats, &level);
	if (!st)
		return XDP_PASS;
	st->rx++;
	if (level == PBQ_OTHER)
		return XDP_PASS; /* ARP: never ours to drop (a host that cannot resolve is lost) */
	return decide(level, st);
}

/* ---- The bind()/close() hooks (paper 000 §3.4.1: priorities set where a server binds) ----
 *
 * cgroup/post_bind4 and cgroup/post_bind6 run after a UDP or TCP socket of a task in the
 * cgroup2 group they are attached to (the run's own, src/hooks.rs) got its local port; they
 * record the socket (by cookie) with its binder and raise the port's level to the binder's,
 * 19 - nice, read from the binding thread's static_prio (= 120 + nice, kernel/sched/sched.h
 * NICE_TO_PRIO, Linux 6.x). cgroup/sock_release runs when such a socket is released: it
 * forgets the socket and sets its port to the highest level among the sockets still bound to
 * it (0 if none). Nice changes after bind(): user space rescans the recorded holders
 * (src/hooks.rs). A socket takes its cgroup when it is created, so a server must be in the
 * group before it creates its sockets. */

/* Only the task fields the hooks read; CO-RE relocates them to this kernel's layout. */
struct task_struct {
	int pid;
	int tgid;
	int static_prio;
	__u64 start_boottime;
	struct task_struct *group_leader;
} __attribute__((preserve_access_index));

#define PBQ_BOUND_MAX 8192

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PBQ_BOUND_MAX);
	__type(key, __u64);              /* socket cookie */
	__type(value, struct pbq_bound);
} bound SEC(".maps");

/* 0: every bind in the group; else only binds in the network namespace of this cookie. */
volatile __u64 hook_netns;
struct pbq_hook_stats hook_stats;

/* nice -> level as level_of_nice (crates/host/src/types.rs): 19 - nice, nice in -20..19. */
static __always_inline __u8 level_of_static_prio(int static_prio)
{
	int nice = static_prio - 120;

	if (nice < -20)
		nice = -20;
	if (nice > 19)
		nice = 19;
	return 19 - nice;
}

static __always_inline int on_bind(struct bpf_sock *sk)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct pbq_bound b = {};
	__u64 cookie;
	__u32 key;
	__u8 *lv;

	if (sk->protocol != IPPROTO_UDP && sk->protocol != IPPROTO_TCP)
		return 1;
	if (hook_netns && bpf_get_netns_cookie(sk) != hook_netns) {
		__sync_fetch_and_add(&hook_stats.other_netns, 1);
		return 1;
	}
	b.port = sk->src_port; /* host byte order in struct bpf_sock */
	b.protocol = sk->protocol;
	b.level = level_of_static_prio(t->static_prio);
	b.tgid = t->tgid;
	b.tid = t->pid;
	b.leader_start_ns = t->group_leader->start_boottime;
	cookie = bpf_get_socket_cookie(sk);
	if (bpf_map_update_elem(&bound, &cookie, &b, BPF_ANY)) {
		__sync_fetch_and_add(&hook_stats.full, 1);
		return 1;
	}
	__sync_fetch_and_add(&hook_stats.binds, 1);
	key = b.port;
	lv = bpf_map_lookup_elem(&port_level, &key);
	/* "the highest priority among the processes sharing" the port (§3.4.1). */
	if (lv && *lv < b.level)
		*lv = b.level;
	return 1; /* never refuse a bind */
}

SEC("cgroup/post_bind4")
int pbq_post_bind4(struct bpf_sock *sk)
{
	return on_bind(sk);
}

SEC("cgroup/post_bind6")
int pbq_post_bind6(struct bpf_sock *sk)
{
	return on_bind(sk);
}

struct port_max {
	__u16 port;
	__u8 level;
};

static long max_of_port(void *map, __u64 *cookie, struct pbq_bound *b, struct port_max *m)
{
	if (b->port == m->port && b->level > m->level)
		m->level = b->level;
	return 0;
}

SEC("cgroup/sock_release")
int pbq_sock_release(struct bpf_sock *sk)
{
	__u64 cookie = bpf_get_socket_cookie(sk);
	struct pbq_bound *b = bpf_map_lookup_elem(&bound, &cookie);
	struct port_max m = {};
	__u32 key;

	if (!b)
		return 1;
	m.port = b->port;
	bpf_map_delete_elem(&bound, &cookie);
	__sync_fetch_and_add(&hook_stats.releases, 1);
	bpf_for_each_map_elem(&bound, max_of_port, &m, 0);
	key = m.port;
	bpf_map_update_elem(&port_level, &key, &m.level, BPF_ANY);
	return 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
