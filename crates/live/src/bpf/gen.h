/* Shared between the live-frames generator (gen.bpf.c) and its user space (src/gen.rs): one
 * stream's configuration. Rust sees it through the skeleton's BTF-generated types. */
#ifndef HOSTSIM_GEN_H
#define HOSTSIM_GEN_H

/* Streams one generator program serves (a stream = one template frame sent out of one device). */
#define GEN_STREAMS_MAX 8
/* Values a stream rotates through (e.g. four flood ports). */
#define GEN_VALS_MAX 64
/* Clock reads one frame may spin for its time slot (~30 ns each: ~2 ms at most). */
#define GEN_SPIN_MAX (1 << 16)

struct gen_stream {
	__u32 rot_off;        /* byte offset of a 16-bit field rewritten per frame; 0 = none */
	__u32 nvals;          /* how many values it takes in turn (0 = leave the template's) */
	__u32 seq_off;        /* byte offset of a little-endian 64-bit sequence number; 0 = none */
	__u16 csum_off;       /* byte offset of a UDP checksum kept right per frame; 0 = none */
	__u16 csum_base;      /* one's-complement sum (host-order words, folded) of the pseudo-header
	                       * and the UDP segment with the checksum, the rotated field and the
	                       * sequence number zero: the program adds those two and writes ~sum */
	__u64 next;           /* frames built so far: the next frame's sequence number */
	/* Spreading a call's frames in time (0 = none: the kernel builds them back to back).
	 * Before each call user space sets call_t0_ns (CLOCK_MONOTONIC, bpf_ktime_get_ns's clock)
	 * and call_seq0 (= next); frame k of the call then waits until call_t0_ns + k * gap_ps /
	 * 1000, spinning at most GEN_SPIN_MAX clock reads. */
	__u64 gap_ps;
	__u64 call_t0_ns;
	__u64 call_seq0;
	__u16 vals[GEN_VALS_MAX]; /* in network byte order, as written into the frame */
};

#endif
