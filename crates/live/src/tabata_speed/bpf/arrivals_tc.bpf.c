// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* tabata-speed's receiver clock (paper 002 §3.2.2: the receiver timestamps every frame in its
 * driver): a tcx ingress program on the sink's veth writes each TCP frame to the sink's port
 * into a ring buffer with bpf_ktime_get_ns(), the frame length and the TCP payload length. It
 * never changes a verdict (TC_ACT_UNSPEC = TCX_NEXT). It runs in __netif_receive_skb_core
 * (tcx ingress, net/core/dev.c sch_handle_ingress, Linux 6.18), after the veth's netif_rx and
 * before IP: the nearest point to the paper's driver a program can reach on a veth without XDP,
 * which would clear the peer's GSO features (issue 30). Headers are read with
 * bpf_skb_load_bytes, as TCP's payload sits in page fragments and the linear part may end
 * anywhere after the headers. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "arrivals.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* 4 MiB: 262,144 records, far above one run's frames */
} arrivals SEC(".maps");

volatile struct arrivals_ctl ctl;
/* Frames the ring buffer had no room for (user space reports them; a run with any is invalid). */
volatile __u64 lost;

SEC("tc")
int arrivals_tc(struct __sk_buff *skb)
{
	struct iphdr ip;
	struct tcphdr tcp;
	struct arrival *a;
	__u32 ihl, doff, tot;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return TC_ACT_UNSPEC;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0 || ip.protocol != IPPROTO_TCP)
		return TC_ACT_UNSPEC;
	ihl = ip.ihl * 4;
	if (ihl < sizeof(ip) || ihl > 60)
		return TC_ACT_UNSPEC;
	if (bpf_skb_load_bytes(skb, ETH_HLEN + ihl, &tcp, sizeof(tcp)) < 0)
		return TC_ACT_UNSPEC;
	if (bpf_ntohs(tcp.dest) != ctl.port)
		return TC_ACT_UNSPEC;
	doff = tcp.doff * 4;
	tot = bpf_ntohs(ip.tot_len);
	a = bpf_ringbuf_reserve(&arrivals, sizeof(*a), 0);
	if (!a) {
		__sync_fetch_and_add(&lost, 1);
		return TC_ACT_UNSPEC;
	}
	a->ts_ns = bpf_ktime_get_ns();
	a->seq = bpf_ntohl(tcp.seq);
	a->len = skb->len;
	a->payload = tot > ihl + doff ? tot - ihl - doff : 0;
	bpf_ringbuf_submit(a, 0);
	return TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
