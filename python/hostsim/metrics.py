"""One table of the names the report draws: every metric (a results.csv column) and swept key in
words, with its unit, so that an axis, a caption and a claim's values say the same thing in the
same units everywhere (the report's tests ask for an entry for everything a figure draws).

    label("migrations_per_s")                  # 'process migrations (/s)'
    label("traffic.floodclients.rate_pps")     # 'flood rate, all flood clients (pkt/s)'
    units("gaps >= 400 us")                    # 'gaps >= 400 µs': one spelling of micro-seconds

A unit of "1" is a fraction (0 to 1, drawn as is: 0.5 is half); "" a count without unit.
"""

from __future__ import annotations

import re

#: metric or swept key -> (what it is, in words; its unit)
METRICS: dict[str, tuple[str, str]] = {
    # Swept keys.
    "traffic.floodclients.rate_pps": ("flood rate, all flood clients", "pkt/s"),
    "traffic.load.rate_pps": ("input rate", "pkt/s"),
    "traffic.clients.http.rate_rps": ("offered request rate", "req/s"),
    "process.sender.speed_pct": ("regulated speed", "%"),
    "process.sender.unit_bytes": ("send unit", "B"),
    # Packets and throughput.
    "bw_rx_pps": ("bw packets received", "pkt/s"),
    "flood_rx_pps": ("flood packets received", "pkt/s"),
    "delivered_pps": ("packets delivered", "pkt/s"),
    "forwarded_pps": ("packets forwarded", "pkt/s"),
    "out_rx_pps": ("output rate at the sink", "pkt/s"),
    "drop_backlog_pps": ("dropped in the backlog", "pkt/s"),
    "bwclient_drop_backlog_pps": ("bw packets dropped in the backlog", "pkt/s"),
    "bwclient_drop_socket_pps": ("bw packets dropped at its socket", "pkt/s"),
    "bwclient_drop_flow_limit_pps": ("bw packets dropped by flow limit", "pkt/s"),
    "bw_mbps": ("bandwidth at the receiver", "Mbit/s"),
    "tcp_mbps": ("TCP throughput", "Mbit/s"),
    "iperf_rx_mbps": ("iperf receive rate", "Mbit/s"),
    "clients_completed_rps": ("requests completed", "req/s"),
    # Latency.
    "rtt_us_mean": ("UDP round-trip time, mean", "µs"),
    "rtt_timeouts": ("requests timed out", ""),
    "tcp_rtt_us": ("TCP round-trip time", "µs"),
    "udp_rtt_us": ("UDP round-trip time", "µs"),
    "forward_latency_us_mean": ("forwarding latency, mean", "µs"),
    "clients_resp_ms_mean": ("response time, mean", "ms"),
    "clients_resp_hit_ms_mean": ("response time of cache hits, mean", "ms"),
    "clients_resp_miss_ms_mean": ("response time of cache misses, mean", "ms"),
    "clients_resp_ms_p99": ("response time, 99th percentile", "ms"),
    # CPU.
    "cpu_util": ("CPU busy, user + kernel", "1"),
    "cpu_kernel_frac": ("kernel CPU, hardirq + softirq + system", "1"),
    "cpu_softirq_frac": ("CPU time in softirq", "1"),
    "cpu_idle_frac": ("idle CPU share", "1"),
    "cpu_busy_frac": ("load per CPU, lock spin counted", "1"),
    "cpu_busy_nospin_frac": ("load per CPU, lock spin not counted", "1"),
    "cpu_busy_max_frac": ("load of the busiest CPU", "1"),
    "cpu0_busy_frac": ("CPU 0 busy", "1"),
    "cpu1_busy_frac": ("CPU 1 busy", "1"),
    "cpu_poll_frac": ("CPU time in poll()", "1"),
    "poll_kernel_share": ("poll() share of kernel CPU", "1"),
    "flood_cpus": ("CPUs running flood servers", ""),
    "supp_frac": ("time with the interrupt steered away", "1"),
    # Scheduling and migrations (paper 001).
    "migrations_per_s": ("process migrations", "/s"),
    "unintended_fraction": ("unintended migrations, share of all", "1"),
    "settle_mean": ("wake-ups until settled, mean", ""),
    "settle_max": ("wake-ups until settled, most", ""),
    "llc_load_miss_per_s": ("LLC load misses", "/s"),
    "llc_store_miss_per_s": ("LLC store misses", "/s"),
    "dtlb_load_miss_per_s": ("dTLB load misses", "/s"),
    "dtlb_store_miss_per_s": ("dTLB store misses", "/s"),
    "ipis_per_s": ("inter-processor interrupts", "/s"),
    # Batched exchange (paper 003).
    "exchanges_per_s": ("queue exchanges", "/s"),
    "exchanges_max_cpu_per_s": ("queue exchanges, busiest CPU", "/s"),
    "exchanges_min_cpu_per_s": ("queue exchanges, least busy CPU", "/s"),
    # The event loop (paper 004).
    "chamomile_conns": ("open connections", ""),
    "chamomile_io_loops_per_s": ("I/O thread passes", "/s"),
    # Packet gaps at the receiver (paper 002).
    "receiver_gap_us": ("inter-arrival time", "µs"),
    "receiver_short_gap_size": ("frame size of packets arriving < 100 µs after the previous", "B"),
    "receiver_short_gap_size_h400": ("packets of 400-499 B arriving < 100 µs after the previous", ""),
    "receiver_short_gaps": ("packets arriving < 100 µs after the previous", ""),
    "receiver_short_gaps_ge1300": ("packets of >= 1300 B arriving < 100 µs after the previous", ""),
    "receiver_short_gap_frac": ("share of packets arriving < 100 µs after the previous", "1"),
    "receiver_long_gaps": ("gaps >= 400 µs", ""),
    "receiver_long_gap_mode_us": ("mode of the gaps >= 400 µs", "µs"),
    "receiver_long_gap_frac_400_800": ("share of the gaps >= 400 µs in [400, 800) µs", "1"),
    "receiver_long_gap_frac_450_650": ("share of the gaps >= 400 µs in [450, 650) µs", "1"),
    "receiver_lengthened_gaps": ("gaps >= 1000 µs", ""),
    "receiver_lengthened_frac": ("gaps >= 1000 µs / gaps >= 400 µs", "1"),
    "receiver_lengthened_mode_us": ("mode of the gaps >= 1000 µs", "µs"),
    "receiver_kept_frac": ("share of the sent data received", "1"),
}

UNIT_WORDS = {"1": "0-1", "": ""}


def known(name: str) -> bool:
    return name in METRICS


def words(name: str) -> str:
    """The name in words (the name itself when the table has no entry)."""
    return METRICS[name][0] if name in METRICS else name


def unit(name: str) -> str | None:
    return METRICS[name][1] if name in METRICS else None


def label(name: str) -> str:
    """An axis label: the words and the unit in parentheses (a fraction says "0-1")."""
    if name not in METRICS:
        return name
    w, u = METRICS[name]
    u = UNIT_WORDS.get(u, u)
    return f"{w} ({u})" if u else w


def value(name: str, v: float, fmt) -> str:
    """`v` of metric `name` with its unit (`fmt` formats the number), e.g. '60,855 /s'."""
    u = unit(name)
    if u == "%":
        return f"{fmt(v)} %"
    if u and u not in ("1", "/s"):
        return f"{fmt(v)} {u}"
    if u == "/s":
        return f"{fmt(v)}/s"
    return fmt(v)


# "us" as a unit: after a number, or after a bracket ("(us)", "[400, 800) us"); never the English
# word ("tells us").
_US = re.compile(r"([\d()]\s?)us\b")


def units(text: str) -> str:
    """`text` with one spelling of micro-seconds (µs, never us)."""
    return _US.sub(r"\1µs", text)
