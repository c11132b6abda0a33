/* Shared between the live-frames generator (gen.bpf.c) and its user space (src/gen.rs): one
 * stream's configuration. Rust sees it through the skeleton's BTF-generated types. */
#ifndef HOSTSIM_GEN_H
#define HOSTSIM_GEN_H

/* Streams one generator program serves (a stream = one template frame sent out of one device). */
#define GEN_STREAMS_MAX 8
/* Values a stream rotates through (e.g. four flood ports). */
#define GEN_VALS_MAX 64

struct gen_stream {
	__u32 rot_off;        /* byte offset of a 16-bit field rewritten per frame; 0 = none */
	__u32 nvals;          /* how many values it takes in turn (0 = leave the template's) */
	__u32 seq_off;        /* byte offset of a little-endian 64-bit sequence number; 0 = none */
	__u16 csum_off;       /* byte offset of a UDP checksum kept right per frame; 0 = none */
	__u16 csum_base;      /* one's-complement sum (host-order words, folded) of the pseudo-header
	                       * and the UDP segment with the checksum, the rotated field and the
	                       * sequence number zero: the program adds those two and writes ~sum */
	__u64 next;           /* frames built so far: the next frame's sequence number */
	__u16 vals[GEN_VALS_MAX]; /* in network byte order, as written into the frame */
};

#endif
