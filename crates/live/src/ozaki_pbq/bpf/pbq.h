/* Shared between the XDP program (pbq_xdp.bpf.c) and its user space (src/xdp.rs): the layout
 * of the control block and of the per-level statistics. Rust sees these through the skeleton's
 * BTF-generated types; keep the two sides in step by changing only this file. */
#ifndef HOSTSIM_PBQ_H
#define HOSTSIM_PBQ_H

/* Priority levels 0..39 = 19 - nice, as crates/host/src/types.rs (`level_of_nice`). */
#define PBQ_LEVELS 40
/* Index of the statistics slot for ARP, the one kind of frame the program never judges (an IP
 * packet without a readable port counts as level 0: see dst_port() in pbq_xdp.bpf.c). */
#define PBQ_OTHER PBQ_LEVELS

/* Written by the agent, read by the program on every packet. */
struct pbq_ctl {
	__u32 enabled;        /* 0: count only, never drop (the "off" runs and the baseline) */
	__u32 high_load;      /* set by the agent from the kernel's counters (src/agent.rs) */
	__u32 shed_below;     /* under high load, levels below this are dropped ... */
	__u32 min_share_top;  /* ... beyond their minimum share: level l passes
	                       * min_share_top * (l + 1) / PBQ_LEVELS packets per window */
	__u64 window_ns;      /* the minimum-share window */
};

/* Per level (and PBQ_OTHER), per CPU. */
struct pbq_level_stats {
	__u64 rx;             /* packets seen */
	__u64 drop;           /* dropped (XDP_DROP) */
	__u64 share_pass;     /* passed under high load only because of the minimum share */
};

/* Per level: the current minimum-share window. */
struct pbq_share {
	__u64 start_ns;
	__u64 passed;
};

/* What the bind hook (cgroup/post_bind4/6 in pbq_xdp.bpf.c) recorded of one bound socket, keyed
 * by its socket cookie; the release hook deletes it. User space (src/hooks.rs) refreshes
 * `level` from the holder's threads' nice values. */
struct pbq_bound {
	__u64 leader_start_ns; /* the binder's thread-group leader's start_boottime: with tgid it
	                        * names the process for good (pids are reused) */
	__u32 tgid;
	__u32 tid;             /* the thread that called bind() */
	__u16 port;
	__u8 protocol;         /* IPPROTO_UDP or IPPROTO_TCP */
	__u8 level;            /* 19 - nice: the binder's at bind(), then the holder's highest */
};

/* The hooks' own counters (in .bss). */
struct pbq_hook_stats {
	__u64 binds;           /* UDP/TCP binds recorded */
	__u64 other_netns;     /* binds ignored: another network namespace than `hook_netns` */
	__u64 releases;        /* recorded sockets released */
	__u64 full;            /* binds not recorded: the table was full */
};

#endif
