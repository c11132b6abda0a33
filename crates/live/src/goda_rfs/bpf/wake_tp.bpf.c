// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Wake-up placement of the experiment's own tasks, as the kernel makes it (paper 001 Fig. 2:
 * the waking CPU, the CPU the task last ran on, the CPU chosen for it). Three BTF tracepoints
 * (tp_btf: raw tracepoints with typed arguments, attached through bpf_links, so they go with
 * the run's descriptors), read in kernel/sched/core.c of Linux 6.18:
 *
 *   try_to_wake_up(p)              trace_sched_waking(p)          in the waker's context: the
 *                                                                 waking CPU, task_cpu(p) = prev
 *     select_task_rq(p, ...)       (select_task_rq_fair)
 *     set_task_cpu(p, cpu)         trace_sched_migrate_task(p, cpu)   only if cpu != prev
 *     ttwu_queue / ttwu_do_wakeup  trace_sched_wakeup(p)          task_cpu(p) = the chosen CPU
 *                                                                 (maybe on that CPU, later)
 *
 * A sched_migrate_task outside a waking..wakeup pair is another migration (the load balancer,
 * an affinity change). Only tasks whose thread-group id user space put in `tgids` are recorded
 * (the run's own readers), never the machine's other tasks: the pairing and the classification
 * are done in user space (src/wake.rs), where they are unit-tested. The programs never change
 * what the scheduler does. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "wake.h"

/* The fields read, relocated against the running kernel's BTF (CO-RE): on x86-64 (and every
 * arch with THREAD_INFO_IN_TASK) task_cpu(p) is p->thread_info.cpu. */
struct thread_info {
	__u32 cpu;
} __attribute__((preserve_access_index));

/* EEVDF's delayed dequeue (Linux 6.12+): a task that sleeps while not eligible stays queued,
 * `se.sched_delayed`, until it is picked or woken; its wake-up is then a requeue on the same
 * CPU (ttwu_runnable), without select_task_rq. */
struct sched_entity {
	unsigned char sched_delayed;
} __attribute__((preserve_access_index));

struct task_struct {
	struct thread_info thread_info;
	unsigned int flags;
	int on_rq;
	struct sched_entity se;
	int pid;
	int tgid;
} __attribute__((preserve_access_index));

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);   /* tgid */
	__type(value, __u8);
} tgids SEC(".maps");

/* The run's senders (tgids): a wake-up made in one of their contexts (veth_xmit delivering into
 * the local backlog, whose softirq runs at the sender's local_bh_enable) is flagged. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} senders SEC(".maps");

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24); /* 16 MiB: 524,288 records; user space drains every 50 ms */
} events SEC(".maps");

/* Records the ring buffer had no room for (a point with any is invalid). */
volatile __u64 lost;

static __always_inline int record(struct task_struct *p, __u16 kind, __u16 b)
{
	struct wake_event *e;
	__u32 tgid = p->tgid;

	if (!bpf_map_lookup_elem(&tgids, &tgid))
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	e->ts_ns = bpf_ktime_get_ns();
	e->pid = p->pid;
	e->kind = kind;
	e->cpu = bpf_get_smp_processor_id();
	e->a = p->thread_info.cpu;
	e->b = b;
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* TP_PROTO(struct task_struct *p). try_to_wake_up traces sched_waking before it tests
 * p->on_rq: a task still queued (it had not finished going to sleep, or EEVDF delayed its
 * dequeue) is woken where it is, by ttwu_runnable, with no placement. */
SEC("tp_btf/sched_waking")
int wake_waking(unsigned long long *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx[0];
	struct task_struct *cur = bpf_get_current_task_btf();
	__u32 cur_tgid = cur->tgid;
	__u16 flags = 0;

	if (p->on_rq)
		flags |= WAKE_F_ON_RQ;
	if (p->se.sched_delayed)
		flags |= WAKE_F_DELAYED;
	/* Who was `current` where the wake-up was made (the task a softirq interrupted, or
	 * ksoftirqd running it). */
	if (cur->pid == 0)
		flags |= WAKE_F_BY_IDLE;
	else if (cur->flags & PF_KTHREAD)
		flags |= WAKE_F_BY_KTHREAD;
	else if (bpf_map_lookup_elem(&senders, &cur_tgid))
		flags |= WAKE_F_BY_SENDER;
	return record(p, WAKE_EV_WAKING, flags);
}

/* TP_PROTO(struct task_struct *p) */
SEC("tp_btf/sched_wakeup")
int wake_wakeup(unsigned long long *ctx)
{
	return record((struct task_struct *)ctx[0], WAKE_EV_WAKEUP, 0);
}

/* TP_PROTO(struct task_struct *p, int dest_cpu) */
SEC("tp_btf/sched_migrate_task")
int wake_migrate(unsigned long long *ctx)
{
	return record((struct task_struct *)ctx[0], WAKE_EV_MIGRATE, (__u16)ctx[1]);
}

/* TP_PROTO(bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int
 * prev_state): the task starts running; with its sched_wakeup, how long it waited queued. */
SEC("tp_btf/sched_switch")
int wake_switch(unsigned long long *ctx)
{
	return record((struct task_struct *)ctx[2], WAKE_EV_SWITCH_IN, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
