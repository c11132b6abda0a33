// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What batches the arrivals at goda-wakeups' readers (issue 42, "trace first"): the segment
 * trains of the run's own flows, from where the senders' TCP emits them to where the readers'
 * veth receives them. Five BTF tracepoints (tp_btf, attached through bpf_links, so they go with
 * the run's descriptors), read in Linux 6.18:
 *
 *   tcp_pace_kick(timer)          hrtimer_expire_entry/exit   a sender socket's pacing timer
 *                                 (net/ipv4/tcp_output.c; HRTIMER_MODE_ABS_PINNED_SOFT: it runs
 *                                 in HRTIMER_SOFTIRQ on whatever task it interrupts)
 *     tcp_tsq_handler -> tcp_write_xmit -> ... -> __dev_queue_xmit
 *                                 net_dev_queue(skb)          one TCP skb, *before* GSO splits
 *                                 it (net/core/dev.c; TCP always builds GSO skbs since
 *                                 sk_setup_caps adds NETIF_F_GSO for TCP, so the senders'
 *                                 `ethtool -K gso off` only moves the split to validate_xmit_skb)
 *     veth_xmit -> __netif_rx -> backlog -> __netif_receive_skb_core
 *                                 netif_receive_skb(skb)      one frame at the readers' veth
 *   softirq_entry/exit(vec)       which softirq runs on the CPU (the records' context)
 *
 * Records are made only for the run's two devices (ifindex and network-namespace inode, set by
 * user space) and the readers' ports, never for another run's or session's traffic. The
 * socket's pacing and RTT state is read at each emission (CO-RE reads) so that user space can
 * check each skb's size against the kernel's own rule (tcp_tso_autosize). The programs never
 * change what the kernel does. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "trains.h"

/* The fields read, relocated against the running kernel's BTF (CO-RE). */
struct ns_common {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct net {
	struct ns_common ns;
} __attribute__((preserve_access_index));

typedef struct {
	struct net *net;
} __attribute__((preserve_access_index)) possible_net_t;

struct net_device {
	int ifindex;
	possible_net_t nd_net;
} __attribute__((preserve_access_index));

struct sock_common {
	possible_net_t skc_net;
	__be16 skc_dport;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
	unsigned long sk_pacing_rate;
	unsigned int sk_gso_max_size;
	__u16 sk_gso_max_segs;
	__u8 sk_pacing_shift;
} __attribute__((preserve_access_index));

struct timerqueue_node {
	__s64 expires;
} __attribute__((preserve_access_index));

struct hrtimer {
	struct timerqueue_node node;
	void *function;
} __attribute__((preserve_access_index));

struct minmax_sample {
	__u32 t;
	__u32 v;
} __attribute__((preserve_access_index));

struct minmax {
	struct minmax_sample s[3];
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u32 max_window;
	__u32 mss_cache;
	__u32 snd_cwnd;
	__u32 srtt_us;
	struct minmax rtt_min;
	struct hrtimer pacing_timer;
} __attribute__((preserve_access_index));

struct sk_buff {
	unsigned int len;
	__u16 transport_header;
	unsigned int end;
	unsigned char *head;
	unsigned char *data;
	struct sock *sk;
	struct net_device *dev;
} __attribute__((preserve_access_index));

struct skb_shared_info {
	unsigned short gso_segs;
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int flags;
	int pid;
	int tgid;
} __attribute__((preserve_access_index));

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h */

/* net/ipv4/tcp_output.c: the pacing timer's callback (from /proc/kallsyms, resolved by libbpf). */
extern const void tcp_pace_kick __ksym;

volatile struct trains_ctl ctl;
/* Records the ring buffer had no room for (a point with any is invalid). */
volatile __u64 lost;

struct cpu_state {
	__u32 softirq; /* the vector running + 1, 0 outside softirq */
	__u32 pad;
	__u64 pace_timer; /* the pacing timer expiring on this CPU, 0 if none */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_state);
} cpu_state SEC(".maps");

/* The run's senders and readers (tgids): `who` of a record. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8); /* TRAIN_WHO_SENDER or TRAIN_WHO_READER */
} tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24); /* 16 MiB: 299,593 records; user space drains every 50 ms */
} events SEC(".maps");

static __always_inline struct cpu_state *state(void)
{
	__u32 k = 0;

	return bpf_map_lookup_elem(&cpu_state, &k);
}

static __always_inline void context(struct train_event *e)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct cpu_state *s = state();
	__u32 tgid = cur->tgid;
	__u8 *w;

	e->ctx = TRAIN_CTX_TASK;
	if (s && s->pace_timer)
		e->ctx = TRAIN_CTX_PACE;
	else if (s && s->softirq)
		e->ctx = TRAIN_CTX_SOFTIRQ + s->softirq - 1;
	if (cur->pid == 0)
		e->who = TRAIN_WHO_IDLE;
	else if (cur->flags & PF_KTHREAD)
		e->who = TRAIN_WHO_KTHREAD;
	else if ((w = bpf_map_lookup_elem(&tasks, &tgid)))
		e->who = *w;
	else
		e->who = TRAIN_WHO_OTHER;
	e->cpu = bpf_get_smp_processor_id();
	e->ts_ns = bpf_ktime_get_ns();
}

static __always_inline struct train_event *reserve(void)
{
	struct train_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	return e;
}

static __always_inline int dev_is(struct sk_buff *skb, __u32 ifindex, __u32 netns)
{
	struct net_device *dev = BPF_CORE_READ(skb, dev);

	return dev && (__u32)BPF_CORE_READ(dev, ifindex) == ifindex && BPF_CORE_READ(dev, nd_net.net, ns.inum) == netns;
}

static __always_inline __u32 sat32(__u64 x)
{
	return x > 0xffffffffULL ? 0xffffffff : (__u32)x;
}

/* TP_PROTO(struct sk_buff *skb): the senders' TCP hands one skb (a GSO super-packet or one
 * segment) to their veth. skb->data is at the Ethernet header. */
SEC("tp_btf/net_dev_queue")
int trains_emit(unsigned long long *ctx)
{
	struct sk_buff *skb = (struct sk_buff *)ctx[0];
	struct skb_shared_info *shinfo;
	unsigned char *head, *data;
	struct tcp_sock *tp;
	struct sock *sk;
	struct tcphdr th;
	struct train_event *e;
	__u32 hdr, len, port;

	if (!dev_is(skb, ctl.tx_ifindex, ctl.tx_netns))
		return 0;
	head = BPF_CORE_READ(skb, head);
	data = BPF_CORE_READ(skb, data);
	if (bpf_probe_read_kernel(&th, sizeof(th), head + BPF_CORE_READ(skb, transport_header)) < 0)
		return 0;
	port = bpf_ntohs(th.dest);
	if (port < ctl.port_lo || port > ctl.port_hi)
		return 0;
	hdr = (__u32)(head + BPF_CORE_READ(skb, transport_header) - data) + th.doff * 4;
	len = BPF_CORE_READ(skb, len);
	if (len <= hdr)
		return 0; /* no payload: the handshake, a FIN */
	e = reserve();
	if (!e)
		return 0;
	context(e);
	e->kind = TRAIN_EV_EMIT;
	e->port = port;
	e->seq = bpf_ntohl(th.seq);
	e->bytes = len - hdr;
	shinfo = (struct skb_shared_info *)(head + BPF_CORE_READ(skb, end)); /* skb_shinfo(skb) */
	e->segs = BPF_CORE_READ(shinfo, gso_segs);
	if (e->segs == 0)
		e->segs = 1;
	sk = BPF_CORE_READ(skb, sk);
	tp = (struct tcp_sock *)sk;
	if (sk) {
		e->pacing_rate = sat32(BPF_CORE_READ(sk, sk_pacing_rate));
		e->gso_max_size = BPF_CORE_READ(sk, sk_gso_max_size);
		e->max_window = BPF_CORE_READ(tp, max_window);
		e->gso_max_segs = BPF_CORE_READ(sk, sk_gso_max_segs);
		e->pacing_shift = BPF_CORE_READ(sk, sk_pacing_shift);
		e->rtt_min_us = BPF_CORE_READ(tp, rtt_min.s[0].v);
		e->srtt_us = BPF_CORE_READ(tp, srtt_us) >> 3;
		e->mss = BPF_CORE_READ(tp, mss_cache);
		e->cwnd = BPF_CORE_READ(tp, snd_cwnd) > 0xffff ? 0xffff : BPF_CORE_READ(tp, snd_cwnd);
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* TP_PROTO(struct sk_buff *skb): a frame enters the readers' stack (__netif_receive_skb_core,
 * in the NET_RX softirq that drains the backlog veth_xmit filled). skb->data is at the IP
 * header. */
SEC("tp_btf/netif_receive_skb")
int trains_rx(unsigned long long *ctx)
{
	struct sk_buff *skb = (struct sk_buff *)ctx[0];
	unsigned char *data;
	struct train_event *e;
	struct iphdr ip;
	struct tcphdr th;
	__u32 ihl, port, tot, hdr;

	if (!dev_is(skb, ctl.rx_ifindex, ctl.rx_netns))
		return 0;
	data = BPF_CORE_READ(skb, data);
	if (bpf_probe_read_kernel(&ip, sizeof(ip), data) < 0 || ip.version != 4 || ip.protocol != IPPROTO_TCP)
		return 0;
	ihl = ip.ihl * 4;
	if (ihl < sizeof(ip) || ihl > 60 || bpf_probe_read_kernel(&th, sizeof(th), data + ihl) < 0)
		return 0;
	port = bpf_ntohs(th.dest);
	if (port < ctl.port_lo || port > ctl.port_hi)
		return 0;
	tot = bpf_ntohs(ip.tot_len);
	hdr = ihl + th.doff * 4;
	if (tot <= hdr)
		return 0; /* no payload */
	e = reserve();
	if (!e)
		return 0;
	context(e);
	e->kind = TRAIN_EV_RX;
	e->port = port;
	e->seq = bpf_ntohl(th.seq);
	e->bytes = tot - hdr;
	e->segs = 1;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* TP_PROTO(struct hrtimer *hrtimer, ktime_t *now) */
SEC("tp_btf/hrtimer_expire_entry")
int trains_pace(unsigned long long *ctx)
{
	struct hrtimer *t = (struct hrtimer *)ctx[0];
	struct cpu_state *s;
	struct train_event *e;
	struct sock *sk;
	__s64 now = 0, late;
	__u32 port;

	if ((unsigned long)BPF_CORE_READ(t, function) != (unsigned long)&tcp_pace_kick)
		return 0;
	/* container_of(timer, struct tcp_sock, pacing_timer); a tcp_sock starts with its sock. */
	sk = (struct sock *)((unsigned long)t - bpf_core_field_offset(struct tcp_sock, pacing_timer));
	if (BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum) != ctl.tx_netns)
		return 0;
	port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (port < ctl.port_lo || port > ctl.port_hi)
		return 0;
	s = state();
	if (s)
		s->pace_timer = (unsigned long)t;
	e = reserve();
	if (!e)
		return 0;
	context(e);
	e->ctx = TRAIN_CTX_PACE;
	e->kind = TRAIN_EV_PACE;
	e->port = port;
	bpf_probe_read_kernel(&now, sizeof(now), (void *)ctx[1]);
	late = now - BPF_CORE_READ(t, node.expires);
	e->pacing_rate = late < 0 ? 0 : sat32(late);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* TP_PROTO(struct hrtimer *hrtimer) */
SEC("tp_btf/hrtimer_expire_exit")
int trains_pace_exit(unsigned long long *ctx)
{
	struct cpu_state *s = state();

	if (s && s->pace_timer == ctx[0])
		s->pace_timer = 0;
	return 0;
}

/* TP_PROTO(unsigned int vec_nr) */
SEC("tp_btf/softirq_entry")
int trains_softirq_entry(unsigned long long *ctx)
{
	struct cpu_state *s = state();

	if (s)
		s->softirq = (__u32)ctx[0] + 1;
	return 0;
}

/* TP_PROTO(unsigned int vec_nr) */
SEC("tp_btf/softirq_exit")
int trains_softirq_exit(unsigned long long *ctx)
{
	struct cpu_state *s = state();

	if (s)
		s->softirq = 0;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
