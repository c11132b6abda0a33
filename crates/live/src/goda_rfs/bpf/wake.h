/* Shared between the scheduler tracepoint programs (wake_tp.bpf.c) and their user space
 * (src/wake.rs): one record per scheduler event of a task of the experiment. Rust sees these
 * through the skeleton's BTF-generated types; change only this file. */
#ifndef HOSTSIM_WAKE_H
#define HOSTSIM_WAKE_H

/* What happened (`struct wake_event.kind`). */
#define WAKE_EV_WAKING 0  /* sched_waking: in the waker's context; cpu = the waking CPU, a = task_cpu(p) (prev) */
#define WAKE_EV_WAKEUP 1  /* sched_wakeup: the task is queued; a = task_cpu(p) (the chosen CPU) */
#define WAKE_EV_MIGRATE 2 /* sched_migrate_task: a = task_cpu(p) (from), b = dest_cpu (to) */
#define WAKE_EV_SWITCH_IN 3 /* sched_switch to the task: cpu = a = the CPU it runs on */

/* `b` of WAKE_EV_WAKING: the task's state as try_to_wake_up finds it. */
#define WAKE_F_ON_RQ 1    /* p->on_rq: still queued, woken in place (ttwu_runnable) */
#define WAKE_F_DELAYED 2  /* p->se.sched_delayed: EEVDF's delayed dequeue (6.12+) */
/* `current` of the waking context: */
#define WAKE_F_BY_IDLE 4     /* the idle task (a softirq on an idle CPU) */
#define WAKE_F_BY_KTHREAD 8  /* a kernel thread (ksoftirqd, a kworker) */
#define WAKE_F_BY_SENDER 16  /* one of the run's senders (tgids in the `senders` map) */

struct wake_event {
	__u64 ts_ns;  /* bpf_ktime_get_ns() */
	__u32 pid;    /* the task (thread id) */
	__u16 kind;   /* WAKE_EV_* */
	__u16 cpu;    /* the CPU the program ran on */
	__u16 a;
	__u16 b;      /* WAKE_EV_WAKING: WAKE_F_*; WAKE_EV_MIGRATE: dest_cpu */
	__u32 pad;
};

#endif
