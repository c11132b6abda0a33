"""The five papers hostsim reproduces (../shared/DESIGN.md §1): what the report says about each.
A scenario belongs to the paper whose id its name starts with."""

PAPERS = {
    "ozaki-pbq": {
        "number": "000",
        "title": "Ozaki & Nakayama: priority-based receive processing in Linux",
        "mechanism": (
            "Under high load the single receive backlog is replaced by per-priority backlog queues "
            "(PBQs), filled by the priority of the socket's process and drained highest first, so a "
            "flood to low-priority servers is dropped before packets for a high-priority one. "
            "In addition, when a high-priority process whose socket buffer is filling is switched "
            "in, the NIC interrupt is steered away from its CPU so that it can read its packets."
        ),
    },
    "goda-rfs": {
        "number": "001",
        "title": "Goda & Tago: wake-up load balancing with process-tracking interrupts",
        "mechanism": (
            "With Receive Flow Steering the softirq that wakes a reader follows the CPU where it last "
            "read, but only later, so Linux's wake-up placement, which prefers the waking CPU, pulls "
            "a moved reader back and forth (unintended migrations). The proposal does not migrate a "
            "woken process until the interrupt has followed it."
        ),
    },
    "tabata-speed": {
        "number": "002",
        "title": "Tabata, Nomura & Taniguchi: bandwidth control by regulating execution speed",
        "mechanism": (
            "A sender is given n of the T time slots of each time block, spread evenly, so that it runs "
            "at a regulated speed. Its network bandwidth then follows its CPU share, as long as the "
            "sender is not CPU-bound."
        ),
    },
    "takeuchi-symbiose": {
        "number": "003",
        "title": "Takeuchi et al.: HiTactix/Symbiose",
        "mechanism": (
            "One OS runs per CPU and the protocol functions are split across CPUs, which exchange "
            "buffers in batches every 5 ms instead of locking per packet. This avoids the big kernel "
            "lock that makes a 2-CPU UNIX router slower than a 1-CPU one."
        ),
    },
    "kawai-interval": {
        "number": "004",
        "title": "Kawai, Kadobayashi & Yamaguchi: interval control of I/O multiplexing with real-time scheduling",
        "mechanism": (
            "An event loop's poll() is throttled to a static or proportional cycle, sleeping at normal "
            "priority between cycles and doing I/O at SCHED_FIFO. Fewer, larger polls over thousands "
            "of sockets make a web accelerator's CPU use follow its request rate instead of spinning "
            "on poll(), at some cost in response time."
        ),
    },
}


def paper_of(scenario: str) -> str | None:
    for pid in PAPERS:
        if scenario.startswith(pid):
            return pid
    return None
