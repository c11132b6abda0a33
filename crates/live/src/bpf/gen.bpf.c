// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The live-frames traffic generator (src/gen.rs). User space calls this program with
 * BPF_PROG_RUN and BPF_F_TEST_XDP_LIVE_FRAMES: the kernel builds `repeat` frames from the
 * template given as data_in, runs this program on each, and transmits every frame for which it
 * returns XDP_TX out of the device named by the context's ingress_ifindex (for a veth: into the
 * peer's ring, whose NAPI then receives it as if from a wire). The program only rewrites one
 * 16-bit field per frame (a destination port, so one stream can spread over several flows) and
 * returns XDP_TX; everything else of the frame is the template's. It also writes the frame's sequence
 * number (frames of this stream built before it) into the payload, so that a receiver can tell
 * exactly which frames of a measurement window arrived, whenever it reads them. With csum_off
 * set it then writes the frame's UDP checksum from the template's partial sum and the two fields
 * it wrote (never from the frame's old checksum: see below), so that every frame carries a right
 * one (takeuchi-symbiose's sink checks it).
 *
 * With gap_ps set (gen.h) the program also spreads a call's frames in time: it spins on the
 * clock until the frame's slot (call_t0_ns + k * gap_ps / 1000 for the call's k-th frame) before
 * returning, so that a call of a quantum's frames leaves as an evenly spaced train (in batches
 * the size user space chose, each flushed to the device when built) instead of one burst. A
 * frame already late does not wait; the spin is bounded (GEN_SPIN_MAX clock reads).
 *
 * A frame says which stream it belongs to in the last byte of its source MAC address, which the
 * program never rewrites (the kernel keeps a page's contents between runs: only fields written
 * on every run may change). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include "gen.h"

struct gen_stream streams[GEN_STREAMS_MAX];

/* bpf_loop's callback: stop once the clock has reached the slot. */
static long spin_until(__u64 i, void *ctx)
{
	__u64 *slot = ctx;

	return bpf_ktime_get_ns() >= *slot ? 1 : 0;
}

SEC("xdp")
int gen_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct gen_stream *s;
	__u32 id, off, i, sum;
	__u64 seq, *q = 0;
	__u16 *f = 0, *c;

	if ((void *)(eth + 1) > end)
		return XDP_DROP;
	id = eth->h_source[5];
	if (id >= GEN_STREAMS_MAX)
		return XDP_DROP;
	s = &streams[id];
	seq = s->next++;
	if (s->seq_off) {
		off = s->seq_off;
		if (off > 1500)
			return XDP_DROP;
		q = data + off;
		if ((void *)(q + 1) > end)
			return XDP_DROP;
		*q = seq; /* x86 and the other little-endian hosts the receiver runs on */
	}
	if (s->nvals > 0 && s->nvals <= GEN_VALS_MAX) {
		off = s->rot_off;
		if (off > 1500)
			return XDP_DROP;
		f = data + off;
		if ((void *)(f + 1) > end)
			return XDP_DROP;
		/* nvals <= GEN_VALS_MAX (a power of two): the mask changes nothing but tells the
		 * verifier the index is in bounds. */
		i = (seq % s->nvals) & (GEN_VALS_MAX - 1);
		*f = s->vals[i];
	}
	if (s->csum_off) {
		/* One's-complement sums are byte-order independent (RFC 1071): host-order words. */
		sum = s->csum_base;
		if (q) {
			__u16 *w = (__u16 *)q;
			sum += (__u32)w[0] + w[1] + w[2] + w[3];
		}
		if (f)
			sum += *f;
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = ~sum & 0xffff;
		off = s->csum_off;
		if (off > 1500)
			return XDP_DROP;
		c = data + off;
		if ((void *)(c + 1) > end)
			return XDP_DROP;
		*c = sum ? sum : 0xffff; /* 0 means "no checksum" in UDP (RFC 768) */
	}
	if (s->gap_ps) {
		__u64 slot = s->call_t0_ns + (seq - s->call_seq0) * s->gap_ps / 1000;

		if (bpf_ktime_get_ns() < slot)
			bpf_loop(GEN_SPIN_MAX, spin_until, &slot, 0);
	}
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
