/* Shared between the segment-train recorder (trains_tp.bpf.c) and its user space
 * (src/goda_rfs/trains.rs): one record per TCP super-packet the senders' TCP hands to their
 * veth, per frame at the readers' veth, and per expiry of a sender's pacing timer. Rust sees
 * these through the skeleton's BTF-generated types; change only this file. */
#ifndef HOSTSIM_TRAINS_H
#define HOSTSIM_TRAINS_H

/* `struct train_event.kind` */
#define TRAIN_EV_EMIT 0 /* net_dev_queue at the senders' veth: one TCP skb before GSO splits it */
#define TRAIN_EV_RX 1   /* netif_receive_skb at the readers' veth: one frame */
#define TRAIN_EV_PACE 2 /* hrtimer_expire_entry of a sender socket's pacing timer (tcp_pace_kick) */

/* `ctx`: the context the record was made in, on its CPU. */
#define TRAIN_CTX_TASK 0     /* process context (a system call of `current`) */
#define TRAIN_CTX_PACE 1     /* inside tcp_pace_kick (HRTIMER_SOFTIRQ) */
#define TRAIN_CTX_SOFTIRQ 16 /* + the softirq vector (NET_RX 3, TASKLET 6, HRTIMER 8, ...) */

/* `who`: `current` where the record was made. */
#define TRAIN_WHO_OTHER 0   /* an unrelated user task (another session's work) */
#define TRAIN_WHO_IDLE 1    /* the idle task */
#define TRAIN_WHO_KTHREAD 2 /* a kernel thread (ksoftirqd, a kworker) */
#define TRAIN_WHO_SENDER 3  /* one of the run's senders */
#define TRAIN_WHO_READER 4  /* one of the run's readers */

struct train_event {
	__u64 ts_ns;          /* bpf_ktime_get_ns() */
	__u32 seq;            /* EMIT, RX: TCP sequence number of the first payload byte */
	__u32 bytes;          /* EMIT: payload of the whole skb; RX: of the frame */
	__u32 pacing_rate;    /* EMIT: sk_pacing_rate, bytes/s (saturated); PACE: how late it ran, ns (saturated) */
	__u32 rtt_min_us;     /* EMIT: tcp_min_rtt(tp), us */
	__u32 srtt_us;        /* EMIT: smoothed RTT, us */
	__u32 gso_max_size;   /* EMIT: sk_gso_max_size */
	__u32 max_window;     /* EMIT: tp->max_window (the largest window the reader offered) */
	__u16 kind;           /* TRAIN_EV_* */
	__u16 cpu;            /* the CPU the program ran on */
	__u16 port;           /* the reader's TCP port: the flow */
	__u16 segs;           /* EMIT: segments in the skb (gso_segs, 1 if not GSO) */
	__u16 mss;            /* EMIT: tp->mss_cache */
	__u16 gso_max_segs;   /* EMIT: sk_gso_max_segs */
	__u16 cwnd;           /* EMIT: snd_cwnd (saturated) */
	__u8 ctx;             /* TRAIN_CTX_* */
	__u8 who;             /* TRAIN_WHO_* */
	__u8 pacing_shift;    /* EMIT: sk_pacing_shift */
	__u8 pad[3];
};

/* Written by user space before the programs see traffic. */
struct trains_ctl {
	__u32 tx_netns;   /* inode of the senders' network namespace (ns.inum) */
	__u32 tx_ifindex; /* their veth */
	__u32 rx_netns;   /* the readers' namespace */
	__u32 rx_ifindex; /* their veth */
	__u32 port_lo;    /* the readers' ports: port_lo..=port_hi */
	__u32 port_hi;
};

#endif
