//! The kernel's policy keys (`kernel.backlog`, `xdp`, `wake_policy`, `concurrency`): a policy's
//! name, and Linux's own values of each key. A mechanism adds its values in its folder
//! (`crate::hooks::Mechanism::POLICIES`).

use hostsim_options::Selector;
use serde::{Deserialize, Serialize};

/// A policy's name (`kernel.backlog = "pbq"`): one of Linux's own, declared with its key (a
/// [`Selector`]), or one a mechanism adds (`crate::hooks::Mechanism::POLICIES`). Which values
/// exist is checked when a scenario is loaded; a new policy is its mechanism's, never an edit
/// here.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(transparent)]
pub struct Policy(pub String);

impl Policy {
    pub fn new(name: &str) -> Policy {
        Policy(name.to_string())
    }
    /// Is this policy `name`?
    pub fn is(&self, name: &str) -> bool {
        self.0 == name
    }
}

/// `kernel.backlog`: the per-CPU backlog's queueing policy.
pub static BACKLOG: Selector = Selector {
    key: "backlog",
    linux: &[("fifo", "Linux's FIFO: 2.4's throttle on the legacy path (once full, drop until drained), over the limit only on the NAPI path (`net/core/backlog.rs`).")],
};

/// `kernel.xdp`: the program at the driver's entry point.
pub static XDP: Selector = Selector {
    key: "xdp",
    linux: &[
        ("none", "No program: Linux's own path."),
        ("count", "A program that only counts: every frame pays `xdp_run_ns` and passes (the live baseline keeps its program attached with its mechanism off)."),
        ("cpumap", "Redirect every frame to the CPU map entry of `cpumap_cpu` (`bpf_redirect_map` on a `BPF_MAP_TYPE_CPUMAP`, `net/core/cpumap.rs`): the driver half stays in the NAPI poll, the rest runs in the entry's kthread."),
    ],
};

/// `kernel.wake_policy`: wake-up placement.
pub static WAKE_POLICY: Selector = Selector {
    key: "wake_policy",
    linux: &[("linux", "The placement of the kernel's `scheduler` (Linux 3.2's `select_task_rq_fair`, 6.x's, or 2.4 O(1)'s `try_to_wake_up`).")],
};

/// `kernel.concurrency`: how the kernel runs on several CPUs.
pub static CONCURRENCY: Selector = Selector {
    key: "concurrency",
    linux: &[
        ("smp", "Today's fine-grained SMP: any CPU runs any kernel code at any time; locking costs are the profile's `smp_lock_factor` on the locking-sensitive costs."),
        ("up", "A uniprocessor kernel: CPU 0 only (the profile's other CPUs are offline), no SMP locking."),
        ("bkl", "One big kernel lock (Linux 2.0 `kernel_flag`): every kernel-context unit runs holding it; a CPU that needs it while another holds it spins (CPU state `spin`)."),
    ],
};
