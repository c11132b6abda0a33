// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* takeuchi-symbiose (paper 003) on Linux: the programs of the live router (src/takeuchi_symbiose/experiment.rs).
 *
 * symb_rtr  XDP on the router's input veth, run in that veth's NAPI poll (the "driver half").
 *           Counts per CPU; passes the frame to the kernel's stack on this CPU (the kernel's
 *           own forwarding, with or without RPS), or redirects it to the cpumap entry of
 *           another CPU, whose kthread (kernel/bpf/cpumap.c, cpu_map_kthread_run) builds the
 *           skbs in bulk and runs the IP half (netif_receive_skb_list -> ip_forward) there,
 *           or redirects it to the AF_XDP socket of its RX queue (XSKMAP; net/xdp/xsk.c
 *           copies it into the socket's UMEM: veth has no zero-copy), whose user-space driver
 *           and IP threads forward it (src/afxdp.rs).
 * symb_sink XDP on the sink's veth: checks every frame's IPv4 header and UDP checksums (the
 *           router decremented the TTL and rewrote the header checksum), counts valid and
 *           invalid frames and the valid ones of the measurement window (by the sequence
 *           number the generator wrote), and drops them: the sink costs a program run, no
 *           socket and no process.
 * symb_softirq_entry/exit  tp_btf on softirq_entry/softirq_exit: NET_RX softirq time per CPU,
 *           and the part of it run while one of the router's kthreads was current, so that
 *           softirq and kthread time are told apart (this kernel has no IRQ_TIME_ACCOUNTING:
 *           a thread's runtime includes the softirqs run in its context). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_tracing.h>
#include "symb.h"

struct symb_ctl ctl;
struct symb_sink_ctl sink_ctl;
__u32 ktids[SYMB_KTIDS_MAX];

struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, SYMB_CPUS_MAX);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} cpu_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, SYMB_QUEUES_MAX);
	__type(key, __u32);
	__type(value, __u32);
} xsk_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct symb_rtr_stats);
} rtr_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct symb_sink_stats);
} sink_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct symb_softirq);
} softirq_time SEC(".maps");

SEC("xdp")
int symb_rtr(struct xdp_md *ctx)
{
	__u32 k = 0;
	struct symb_rtr_stats *s = bpf_map_lookup_elem(&rtr_stats, &k);
	__u32 mode;
	long r;

	if (!s)
		return XDP_PASS;
	s->rx++;
	mode = *(volatile __u32 *)&ctl.redirect;
	if (mode == SYMB_PASS)
		return XDP_PASS;
	if (mode == SYMB_XSK)
		r = bpf_redirect_map(&xsk_map, ctx->rx_queue_index, XDP_DROP);
	else
		r = bpf_redirect_map(&cpu_map, *(volatile __u32 *)&ctl.cpu, XDP_PASS);
	if (r == XDP_REDIRECT)
		s->redirected++;
	else
		s->redirect_failed++;
	return r;
}

static __always_inline __u32 fold(__u32 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return s;
}

/* The one's-complement sum is byte-order independent (RFC 1071 §2(B)): words are summed as
 * loaded (host order) and compared with 0xffff. */
SEC("xdp")
int symb_sink(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *udp;
	struct symb_sink_stats *st;
	__u32 k = 0, sum = 0, ulen, i, off;
	__u16 *w;
	__u64 seq, *q;

	st = bpf_map_lookup_elem(&sink_stats, &k);
	if (!st)
		return XDP_DROP;
	st->frames++;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->protocol != IPPROTO_UDP) {
		st->other++;
		return XDP_DROP;
	}
	if (ip->ihl != 5) {
		st->bad_ip++;
		return XDP_DROP;
	}
	w = (void *)ip;
	for (i = 0; i < 10; i++)
		sum += w[i];
	if (fold(sum) != 0xffff) {
		st->bad_ip++;
		return XDP_DROP;
	}
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end) {
		st->bad_udp++;
		return XDP_DROP;
	}
	if (udp->check == 0) {
		st->no_csum++;
		return XDP_DROP;
	}
	ulen = bpf_ntohs(udp->len);
	if (ulen < 8 || ulen > 1480) {
		st->bad_udp++;
		return XDP_DROP;
	}
	/* Pseudo-header: addresses, protocol, UDP length (RFC 768). */
	w = (void *)&ip->saddr;
	sum = w[0] + w[1] + w[2] + w[3] + bpf_htons(IPPROTO_UDP) + udp->len;
	for (i = 0; i < 740; i++) {
		off = i * 2;
		if (off + 2 > ulen)
			break;
		w = (void *)udp + off;
		if ((void *)(w + 1) > end) {
			st->bad_udp++;
			return XDP_DROP;
		}
		sum += *w;
	}
	if (ulen & 1) {
		__u8 *b = (void *)udp + (ulen & 0x7ff) - 1;
		if ((void *)(b + 1) > end) {
			st->bad_udp++;
			return XDP_DROP;
		}
		sum += *b; /* the last byte, padded with a zero: its low byte on a little-endian host */
	}
	if (fold(sum) != 0xffff) {
		st->bad_udp++;
		return XDP_DROP;
	}
	st->valid++;
	off = *(volatile __u32 *)&sink_ctl.seq_off;
	if (off && off <= 1500) {
		q = data + off;
		if ((void *)(q + 1) <= end) {
			seq = *q;
			if (seq >= *(volatile __u64 *)&sink_ctl.seq_lo && seq < *(volatile __u64 *)&sink_ctl.seq_hi)
				st->in_window++;
		}
	}
	return XDP_DROP;
}

static __always_inline int is_router_kthread(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	int i;

	if (!tid)
		return 0;
	for (i = 0; i < SYMB_KTIDS_MAX; i++)
		if (ktids[i] == tid)
			return 1;
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(symb_softirq_entry, unsigned int vec_nr)
{
	__u32 k = 0;
	struct symb_softirq *s;

	if (vec_nr != SYMB_NET_RX_SOFTIRQ)
		return 0;
	s = bpf_map_lookup_elem(&softirq_time, &k);
	if (s)
		s->start = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(symb_softirq_exit, unsigned int vec_nr)
{
	__u32 k = 0;
	struct symb_softirq *s;
	__u64 d;

	if (vec_nr != SYMB_NET_RX_SOFTIRQ)
		return 0;
	s = bpf_map_lookup_elem(&softirq_time, &k);
	if (!s || !s->start)
		return 0;
	d = bpf_ktime_get_ns() - s->start;
	s->start = 0;
	s->net_rx_ns += d;
	s->net_rx_count++;
	if (is_router_kthread())
		s->net_rx_in_kthread_ns += d;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
