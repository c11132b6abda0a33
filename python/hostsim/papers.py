"""The five papers hostsim reproduces (../shared/DESIGN.md §1): what the report says about each.
A scenario belongs to the paper whose id its name starts with.

Nothing here may state a result or name a number (the report's tests check it): results come from
`expectations.json` only, so that what the report says cannot go stale when the model changes.
- `line`: the mechanism in one line (the report's summary);
- `mechanism`: what the mechanism does, and what the paper reports, attributed to the paper;
- `live`: why the paper has no live experiment (when it has one, `live-<id>`, the report says so
  from its results instead);
- `headline_claims`: the claims (by the start of their text; the primary reading where a sentence
  is read several ways) that the paper's section opens with, with their verdict and finding: the
  paper's main result and what most limits its reproduction (a test checks that each names one).
"""

PAPERS = {
    "ozaki-pbq": {
        "number": "000",
        "title": "Ozaki & Nakayama: priority-based receive processing in Linux",
        "line": "per-priority receive backlogs with selective drop; IRQs steered away from a busy high-priority reader",
        "mechanism": (
            "Under high load the single receive backlog is replaced by per-priority backlog queues "
            "(PBQs), filled by the priority of the socket's process and drained highest first, so a "
            "flood to low-priority servers is dropped before packets for a high-priority one. "
            "In addition, when a high-priority process whose socket buffer is filling is switched "
            "in, the NIC interrupt is steered away from its CPU so that it can read its packets."
        ),
        "live": None,
        "headline_claims": [
            "from ~190,000 pkt/s of flood the proposed system receives more than the original (300,000)",
            "original: receive livelock past",
        ],
    },
    "goda-rfs": {
        "number": "001",
        "title": "Goda & Tago: wake-up load balancing with process-tracking interrupts",
        "line": "no migration of a woken reader until Receive Flow Steering has followed it",
        "mechanism": (
            "With Receive Flow Steering the softirq that wakes a reader follows the CPU where it last "
            "read, but only later, so Linux's wake-up placement, which prefers the waking CPU, can "
            "pull a moved reader back and forth (unintended migrations). The proposal does not "
            "migrate a woken process until the interrupt has followed it."
        ),
        "live": "hostsim live goda-wakeups: real wake-ups measured (the proposal itself needs sched_ext)",
        "headline_claims": [
            "proposed: migrations fall by 48%",
            "Linux: 2200 process migrations",
        ],
    },
    "tabata-speed": {
        "number": "002",
        "title": "Tabata, Nomura & Taniguchi: bandwidth control by regulating execution speed",
        "line": "a sender runs in n of every T time slots, spread evenly, so its bandwidth follows its speed",
        "mechanism": (
            "A sender is given n of the T time slots of each time block, spread evenly, so that it runs "
            "at a regulated speed. The paper reports that its network bandwidth then follows its CPU "
            "share as long as the sender is not CPU-bound, and that regulation lengthens some of the "
            "gaps between packets by one slot."
        ),
        "live": "hostsim live tabata-speed: a SCHED_FIFO slot regulator freezing a real TCP sender, measured beside its model twin (live-tabata-speed; the docs book's live pages)",
        "headline_claims": [
            "fast-slot, 1024 B units: bandwidth at 50 %",
            "fast-slot: at 80 %, 1024 B: 1/4 of the long gaps",
        ],
    },
    "takeuchi-symbiose": {
        "number": "003",
        "title": "Takeuchi et al.: HiTactix/Symbiose",
        "line": "one OS per CPU, protocol functions split across CPUs, buffers exchanged in periodic batches",
        "mechanism": (
            "One OS runs per CPU and the protocol functions are split across CPUs, which exchange "
            "buffers in periodic batches instead of locking per packet. The paper reports that a "
            "dual-CPU UNIX router under one big kernel lock does worse than a single-CPU one, and "
            "that the split lowers the load of each CPU."
        ),
        "live": "hostsim live takeuchi-symbiose: the split by XDP + cpumap and by AF_XDP batches, beside its twin (the docs book's live pages)",
        "headline_claims": [
            "003-Q2: HiTactix dual's per-CPU load is about 43 % below HiTactix single's",
            "003-L1: UNIX dual outputs fewer packets",
        ],
    },
    "kawai-interval": {
        "number": "004",
        "title": "Kawai, Kadobayashi & Yamaguchi: interval control of I/O multiplexing with real-time scheduling",
        "line": "an event loop's poll() throttled to a static or proportional cycle, I/O at SCHED_FIFO",
        "mechanism": (
            "An event loop's poll() is throttled to a static or proportional cycle, sleeping at normal "
            "priority between cycles and doing I/O at SCHED_FIFO. The paper reports that fewer, larger "
            "polls over thousands of sockets make a web accelerator's CPU use follow its request "
            "rate instead of spinning on poll(), at some cost in response time and peak throughput."
        ),
        "live": "hostsim live kawai-interval: a real HTTP accelerator on the paper's poll loop, measured beside its model twin (live-kawai-interval; the docs book's live pages)",
        "headline_claims": [
            "004-L6: static 20 ms: kernel CPU below the 0 ms baseline's at a high rate",
            "004-Q1:",
        ],
    },
}


def paper_of(scenario: str) -> str | None:
    for pid in PAPERS:
        if scenario.startswith(pid):
            return pid
    return None
