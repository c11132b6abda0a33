//! Semantic validation: what deserialisation cannot check. Errors carry the key path.

use crate::paths::Seg;
use crate::{Scenario, ScenarioError};
use hostsim_host::{BacklogKind, ConcurrencyKind, HostConfig, IrqRouting, Profile, RxPath, SchedPolicy, XdpKind};
use hostsim_workload::{ProgramKind, SourceKind, WorkDist};
use std::collections::BTreeSet;

type VResult = Result<(), (Vec<Seg>, String)>;

fn is_tcp(p: ProgramKind) -> bool {
    matches!(p, ProgramKind::TcpStream | ProgramKind::TcpEcho | ProgramKind::StreamSend | ProgramKind::Accelerator)
}

fn sub(arr: &str, i: usize, table: &str, field: &str) -> Vec<Seg> {
    vec![Seg::Key(arr.into()), Seg::Index(i), Seg::Key(table.into()), Seg::Key(field.into())]
}

/// A multi-threaded web accelerator (`program = "accelerator"`): its threads, policy and
/// origin, and the profile's system-call costs it needs.
fn accelerator(c: &HostConfig, i: usize, p: &hostsim_host::ProcessConfig) -> VResult {
    use hostsim_workload::{IntervalControl, ThreadProgram};
    if c.profile.syscalls.is_none() {
        return fail(elem("process", i, "program"), format!("the accelerator makes poll()/accept() calls, but profile `{}` has no [syscalls] costs", c.profile.name));
    }
    if p.instances != 1 {
        return fail(elem("process", i, "instances"), "an accelerator runs as one process (its threads are [[process.thread]])");
    }
    let thread = |j: usize, f: &str| vec![Seg::Key("process".into()), Seg::Index(i), Seg::Key("thread".into()), Seg::Index(j), Seg::Key(f.into())];
    let mut names = BTreeSet::new();
    for (j, t) in p.threads.iter().enumerate() {
        if !names.insert(t.name.as_str()) {
            return fail(thread(j, "name"), format!("duplicate thread name `{}`", t.name));
        }
        if t.name.is_empty() || !t.name.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-') {
            return fail(thread(j, "name"), "expected letters, digits, `_` or `-` (it names metrics)");
        }
        if t.program.is_none() {
            return fail(thread(j, "name"), format!("thread `{}` has no program: expected program = \"listen\", \"io\" or \"retrieve\"", t.name));
        }
        if let Some(&bad) = t.cpus.iter().find(|&&x| x as usize >= c.profile.topology.cpus()) {
            return fail(thread(j, "cpus"), format!("CPU {bad} does not exist ({})", cpus(c.profile.topology.cpus())));
        }
    }
    for role in [ThreadProgram::Listen, ThreadProgram::Io, ThreadProgram::Retrieve] {
        let n = p.threads.iter().filter(|t| t.program == Some(role)).count();
        if n != 1 {
            let what = format!("{role:?}").to_lowercase();
            return fail(elem("process", i, "program"), format!("an accelerator needs exactly one [[process.thread]] with program = \"{what}\" (found {n})"));
        }
    }
    let a = p.accelerator.clone().unwrap_or_default();
    let acc = |f: &str| sub("process", i, "accelerator", f);
    if !(a.min_cycle_ms.is_finite() && a.min_cycle_ms >= 0.0) {
        return fail(acc("min_cycle_ms"), format!("expected a cycle of at least 0 ms, got {}", a.min_cycle_ms));
    }
    if !(a.ratio.is_finite() && a.ratio >= 0.0) {
        return fail(acc("ratio"), format!("expected a ratio of at least 0 (the paper's k× interval is ratio = k - 1), got {}", a.ratio));
    }
    if matches!(a.interval_control, IntervalControl::Old | IntervalControl::Static) && a.min_cycle_ms <= 0.0 {
        return fail(acc("min_cycle_ms"), "old and static interval control need a cycle above 0 ms (`none` is the 0 ms case)");
    }
    if !(1..=99).contains(&a.fifo_priority) {
        return fail(acc("fifo_priority"), format!("expected a SCHED_FIFO priority in 1..=99, got {}", a.fifo_priority));
    }
    if a.origin_conns == 0 {
        return fail(acc("origin_conns"), "expected at least 1 connection to the origins");
    }
    if a.read_bytes == 0 {
        return fail(acc("read_bytes"), "expected at least 1 byte per read");
    }
    if a.listen_backlog == 0 {
        return fail(acc("listen_backlog"), "expected a backlog of at least 1");
    }
    if !(1..=1460).contains(&a.origin_request_bytes) {
        return fail(acc("origin_request_bytes"), "expected a request of 1..=1460 bytes (one segment)");
    }
    if Some(a.origin_port) == p.port {
        return fail(acc("origin_port"), "the origin connections need a port other than the listening port");
    }
    match c.traffic.iter().find(|t| t.name == a.origin) {
        Some(t) if t.kind == SourceKind::HttpOrigin => {
            if t.dst_port != a.origin_port {
                return fail(acc("origin_port"), format!("origin `{}` sends to port {}; set origin_port = {} (or its dst_port)", t.name, t.dst_port, t.dst_port));
            }
        }
        Some(t) => return fail(acc("origin"), format!("`{}` is a {:?} source; the origin must be http_origin", t.name, t.kind)),
        None => {
            let have: Vec<&str> = c.traffic.iter().filter(|t| t.kind == SourceKind::HttpOrigin).map(|t| t.name.as_str()).collect();
            return fail(acc("origin"), format!("no http_origin [[traffic]] named `{}` (have: {})", a.origin, have.join(", ")));
        }
    }
    Ok(())
}

/// `[traffic.http]` of http_clients / http_origin.
fn http(c: &HostConfig, i: usize, t: &hostsim_host::TrafficConfig) -> VResult {
    let is_http = matches!(t.kind, SourceKind::HttpClients | SourceKind::HttpOrigin);
    if !is_http {
        if t.http.is_some() {
            return fail(elem("traffic", i, "http"), "only http_clients and http_origin traffic take [traffic.http]");
        }
        return Ok(());
    }
    let h = t.http.clone().unwrap_or_default();
    let k = |f: &str| sub("traffic", i, "http", f);
    if t.kind == SourceKind::HttpClients {
        if h.conns == 0 {
            return fail(k("conns"), "expected at least 1 connection");
        }
        if !(h.rate_rps.is_finite() && h.rate_rps > 0.0) {
            return fail(k("rate_rps"), "expected a request rate above 0 requests/s");
        }
        if !(0.0..=1.0).contains(&h.hit_ratio) {
            return fail(k("hit_ratio"), format!("expected a probability in 0..=1, got {}", h.hit_ratio));
        }
        if !(h.size_scale.is_finite() && h.size_scale > 0.0) {
            return fail(k("size_scale"), "expected a size scale above 0");
        }
        if h.conn_uses_zipf == 0 {
            return fail(k("conn_uses_zipf"), "expected at least 1 request per connection");
        }
        if !(1..=1460).contains(&h.request_bytes) {
            return fail(k("request_bytes"), "expected a request of 1..=1460 bytes (one segment)");
        }
        if h.content == hostsim_workload::ContentMix::Fixed && h.object_bytes == 0 {
            return fail(k("object_bytes"), "expected an object of at least 1 byte");
        }
        if h.timeout_ms == 0 {
            return fail(k("timeout_ms"), "expected a timeout of at least 1 ms");
        }
        let served = c.processes.iter().any(|p| p.program == ProgramKind::Accelerator && p.port == Some(t.dst_port));
        if !served {
            return fail(elem("traffic", i, "dst_port"), format!("http_clients need an accelerator listening on port {} ([[process]] program = \"accelerator\", port = {})", t.dst_port, t.dst_port));
        }
    } else {
        if !(h.think_ms_mean.is_finite() && h.think_ms_mean >= 0.0) {
            return fail(k("think_ms_mean"), "expected a think time of at least 0 ms");
        }
        if !(h.think_ms_sd.is_finite() && h.think_ms_sd >= 0.0) {
            return fail(k("think_ms_sd"), "expected a standard deviation of at least 0 ms");
        }
        let used = c.processes.iter().any(|p| p.accelerator.as_ref().is_some_and(|a| a.origin == t.name));
        if !used {
            return fail(elem("traffic", i, "kind"), format!("no accelerator names `{}` as its origin", t.name));
        }
    }
    Ok(())
}

fn key(parts: &[&str]) -> Vec<Seg> {
    parts.iter().map(|p| Seg::Key(p.to_string())).collect()
}
fn elem(arr: &str, i: usize, field: &str) -> Vec<Seg> {
    vec![Seg::Key(arr.into()), Seg::Index(i), Seg::Key(field.into())]
}
fn cpus(n: usize) -> String {
    if n == 1 {
        "the profile has 1 CPU: 0".to_string()
    } else {
        format!("the profile has {n} CPUs: 0..={}", n - 1)
    }
}
/// The CPUs that exist for this run: all the profile's, or the online ones.
fn online(n: usize, machine: usize) -> String {
    if n == machine {
        return cpus(n);
    }
    let which = if n == 1 { "0".to_string() } else { format!("0..={}", n - 1) };
    format!("{n} of the profile's {machine} CPUs are online: {which}")
}
fn fail<T>(k: Vec<Seg>, msg: impl Into<String>) -> Result<T, (Vec<Seg>, String)> {
    Err((k, msg.into()))
}

pub fn profile(p: &Profile) -> Result<(), String> {
    let t = &p.topology;
    if t.packages == 0 || t.cores_per_package == 0 || t.threads_per_core == 0 {
        return Err("topology: packages, cores_per_package and threads_per_core must be at least 1".into());
    }
    if t.cpus() > 128 {
        return Err(format!("topology: {} CPUs; the model supports at most 128", t.cpus()));
    }
    let c = &p.costs;
    for (name, v) in [("rx_per_byte_ns", c.rx_per_byte_ns), ("copy_per_byte_ns", c.copy_per_byte_ns), ("tx_per_byte_ns", c.tx_per_byte_ns)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(format!("costs.{name}: expected a non-negative number, got {v}"));
        }
    }
    Ok(())
}

pub fn config(c: &HostConfig) -> VResult {
    let machine = c.profile.topology.cpus();
    let k = &c.kernel;
    if let Some(n) = k.online_cpus {
        if n == 0 || n as usize > machine {
            return fail(key(&["kernel", "online_cpus"]), format!("expected 1..={machine} ({})", cpus(machine)));
        }
        if k.concurrency == ConcurrencyKind::Up && n != 1 {
            return fail(key(&["kernel", "online_cpus"]), "a uniprocessor kernel (concurrency = \"up\") runs 1 CPU: expected 1 or no value");
        }
    }
    let ncpu = c.online_cpus();
    let cpus = |n: usize| online(n, machine);
    if c.duration_ns == 0 {
        return fail(key(&["duration_ms"]), "expected a duration of at least 1 ms");
    }
    if c.warmup_ns >= c.duration_ns {
        return fail(key(&["warmup_ms"]), "expected warm-up shorter than duration_ms");
    }
    if c.sample_interval_ns == 0 {
        return fail(key(&["sample_interval_ms"]), "expected at least 1 ms");
    }
    if k.hz == 0 || k.hz > 10_000 {
        return fail(key(&["kernel", "hz"]), "expected 1..=10000");
    }
    for (name, v) in [("netdev_budget", k.netdev_budget), ("napi_weight", k.napi_weight), ("irq_frames_max", k.irq_frames_max), ("netdev_max_backlog", k.netdev_max_backlog)] {
        if v == 0 {
            return fail(key(&["kernel", name]), "expected at least 1");
        }
    }
    if k.rps && !k.rfs && k.rps_cpus.is_empty() {
        return fail(key(&["kernel", "rps"]), "RPS needs a map (kernel.rps_cpus) or RFS (kernel.rfs = true)");
    }
    if k.rfs && !k.rps {
        return fail(key(&["kernel", "rfs"]), "RFS needs RPS: set kernel.rps = true");
    }
    if k.rfs && !k.rfs_entries.is_power_of_two() {
        return fail(key(&["kernel", "rfs_entries"]), "expected a power of two");
    }
    if let Some(&bad) = k.rps_cpus.iter().find(|&&x| x as usize >= ncpu) {
        return fail(key(&["kernel", "rps_cpus"]), format!("CPU {bad} does not exist ({})", cpus(ncpu)));
    }
    if k.xdp != XdpKind::None && k.rx_path != RxPath::Napi {
        return fail(key(&["kernel", "xdp"]), "an XDP program runs in the NAPI poll: it needs kernel.rx_path = \"napi\"");
    }
    if !(k.xdp_release_frac > 0.0 && k.xdp_release_frac < 1.0) {
        return fail(key(&["kernel", "xdp_release_frac"]), format!("expected a fraction strictly between 0 and 1, got {}", k.xdp_release_frac));
    }
    for (name, v) in [("xdp_poll_ms", k.xdp_poll_ms), ("xdp_window_ms", k.xdp_window_ms)] {
        if v == 0 {
            return fail(key(&["kernel", name]), "expected at least 1 ms");
        }
    }
    if k.backlog == BacklogKind::FlowLimit && k.rx_path != RxPath::Napi {
        return fail(key(&["kernel", "backlog"]), "flow_limit is Linux 3.11+'s enqueue_to_backlog: it needs kernel.rx_path = \"napi\" (the legacy path is 2.4's netif_rx)");
    }
    // History entries are u16 bucket numbers (struct sd_flow_limit); Linux's sysctl requires a power of two.
    if !k.flow_limit_table_len.is_power_of_two() || k.flow_limit_table_len > 1 << 16 {
        return fail(key(&["kernel", "flow_limit_table_len"]), format!("expected a power of two in 1..=65536, got {}", k.flow_limit_table_len));
    }
    if let Some(&bad) = k.flow_limit_cpus.iter().find(|&&x| x as usize >= ncpu) {
        return fail(key(&["kernel", "flow_limit_cpus"]), format!("CPU {bad} does not exist ({})", cpus(ncpu)));
    }
    if !(-20..=19).contains(&k.ksoftirqd_nice) {
        return fail(key(&["kernel", "ksoftirqd_nice"]), "expected a nice value in -20..=19");
    }
    if k.imbalance_pct < 100 {
        return fail(key(&["kernel", "imbalance_pct"]), "expected at least 100");
    }
    if !(1..=65495).contains(&k.tcp_mss_bytes) {
        return fail(key(&["kernel", "tcp_mss_bytes"]), format!("expected an MSS in 1..=65495 bytes, got {}", k.tcp_mss_bytes));
    }
    if k.sndbuf_bytes == 0 {
        return fail(key(&["kernel", "sndbuf_bytes"]), "expected a send buffer of at least 1 byte");
    }
    if k.speed_slot_us == 0 {
        return fail(key(&["kernel", "speed_slot_us"]), "expected a slot of at least 1 us");
    }
    if k.speed_block_ms == 0 || k.speed_block_ms * 1000 < k.speed_slot_us {
        return fail(key(&["kernel", "speed_block_ms"]), format!("expected a block of at least one slot ({} us), in ms >= 1", k.speed_slot_us));
    }
    if k.concurrency == ConcurrencyKind::Functional {
        for (name, v) in [("driver_cpu", k.driver_cpu), ("ip_cpu", k.ip_cpu)] {
            if v as usize >= ncpu {
                return fail(key(&["kernel", name]), format!("CPU {v} does not exist ({})", cpus(ncpu)));
            }
        }
        if k.exchange_period_us == 0 {
            return fail(key(&["kernel", "exchange_period_us"]), "expected an exchange period of at least 1 us (paper 003: 5000)");
        }
        if k.pool_buffers == 0 {
            return fail(key(&["kernel", "pool_buffers"]), "expected at least 1 buffer");
        }
        if k.rx_path != RxPath::Legacy {
            return fail(key(&["kernel", "concurrency"]), "the functional split's driver takes frames in its interrupt handler: it needs rx_path = \"legacy\"");
        }
    }
    let mut names = BTreeSet::new();
    for (i, n) in c.nics.iter().enumerate() {
        if !names.insert(n.name.as_str()) {
            return fail(elem("nic", i, "name"), format!("duplicate NIC name `{}`", n.name));
        }
        if n.rate_mbps == 0 {
            return fail(elem("nic", i, "rate_mbps"), "expected a line rate above 0");
        }
        if n.queues == 0 || n.queues > 128 {
            return fail(elem("nic", i, "queues"), "expected 1..=128 queues");
        }
        if n.rx_ring == 0 {
            return fail(elem("nic", i, "rx_ring"), "expected at least 1 descriptor");
        }
        if n.tx_ring == 0 {
            return fail(elem("nic", i, "tx_ring"), "expected at least 1 descriptor");
        }
        if let Some(&bad) = n.irq_cpus.iter().find(|&&x| x as usize >= ncpu) {
            return fail(elem("nic", i, "irq_cpus"), format!("CPU {bad} does not exist ({})", cpus(ncpu)));
        }
        if n.tx_irq_ring_level.is_some_and(|l| l == 0 || l > n.tx_ring) {
            return fail(elem("nic", i, "tx_irq_ring_level"), format!("expected a ring level in 1..={} (tx_ring)", n.tx_ring));
        }
        if n.irq_routing == IrqRouting::Fixed && n.irq_cpus.len() > 1 {
            return fail(elem("nic", i, "irq_cpus"), "fixed routing takes exactly one CPU (use `mask` or `balance_irq` for several)");
        }
        if k.concurrency == ConcurrencyKind::Functional && n.irq_cpus != [k.driver_cpu] {
            return fail(elem("nic", i, "irq_cpus"), format!("under concurrency = \"functional\" the driver runs on kernel.driver_cpu: expected irq_cpus = [{}]", k.driver_cpu));
        }
    }
    let mut pnames = BTreeSet::new();
    let mut ports: std::collections::BTreeMap<u16, ProgramKind> = Default::default();
    for (i, p) in c.processes.iter().enumerate() {
        if !pnames.insert(p.name.as_str()) {
            return fail(elem("process", i, "name"), format!("duplicate process name `{}`", p.name));
        }
        if p.name.is_empty() || !p.name.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-') {
            return fail(elem("process", i, "name"), "expected letters, digits, `_` or `-` (it names metrics)");
        }
        if let Some(r) = p.renice.iter().find(|r| !(-20..=19).contains(&r.nice)) {
            return fail(elem("process", i, "renice"), format!("expected nice values in -20..=19, got {}", r.nice));
        }
        if !(-20..=19).contains(&p.nice) {
            return fail(elem("process", i, "nice"), format!("expected a nice value in -20..=19, got {}", p.nice));
        }
        if p.sched == SchedPolicy::Fifo && !(1..=99).contains(&p.rt_priority) {
            // Without an rt_priority the fault is on the `sched` line.
            if p.rt_priority == 0 {
                return fail(elem("process", i, "sched"), "SCHED_FIFO needs rt_priority in 1..=99 (none given)");
            }
            return fail(elem("process", i, "rt_priority"), format!("SCHED_FIFO needs rt_priority in 1..=99, got {}", p.rt_priority));
        }
        if let Some(&bad) = p.cpus.iter().find(|&&x| x as usize >= ncpu) {
            return fail(elem("process", i, "cpus"), format!("CPU {bad} does not exist ({})", cpus(ncpu)));
        }
        if p.instances == 0 {
            return fail(elem("process", i, "instances"), "expected at least 1 instance");
        }
        if !matches!(p.program, ProgramKind::Spin | ProgramKind::Periodic | ProgramKind::Yielder) {
            let Some(port) = p.port else {
                return fail(elem("process", i, "port"), "this program reads a socket: give it a port");
            };
            if u32::from(port) + p.instances - 1 > 65535 {
                return fail(elem("process", i, "instances"), format!("instances bind ports {port}..{}: past 65535", u32::from(port) + p.instances - 1));
            }
            if let Some(&other) = ports.get(&port) {
                if is_tcp(other) != is_tcp(p.program) {
                    return fail(elem("process", i, "port"), format!("port {port} is shared by a TCP and a UDP program"));
                }
            }
            ports.insert(port, p.program);
        }
        if matches!(p.program, ProgramKind::Spin | ProgramKind::Periodic | ProgramKind::Yielder) && p.work_ns == 0 {
            return fail(elem("process", i, "work_ns"), "spin, periodic and yielder need work_ns > 0 (the burst length)");
        }
        if p.work_dist == WorkDist::Exp && p.work_ns == 0 {
            return fail(elem("process", i, "work_ns"), "an exponential work distribution needs a mean work_ns > 0");
        }
        if is_tcp(p.program) && p.read_bytes == 0 {
            return fail(elem("process", i, "read_bytes"), "expected at least 1 byte per read");
        }
        if p.program == ProgramKind::Accelerator {
            accelerator(c, i, p)?;
        } else {
            if !p.threads.is_empty() {
                return fail(elem("process", i, "thread"), "only a multi-threaded program (accelerator) takes [[process.thread]]");
            }
            if p.accelerator.is_some() {
                return fail(elem("process", i, "accelerator"), "only program = \"accelerator\" takes [process.accelerator]");
            }
        }
        if p.sndbuf_bytes == Some(0) {
            return fail(elem("process", i, "sndbuf_bytes"), "expected a send buffer of at least 1 byte");
        }
        if p.program == ProgramKind::StreamSend {
            if p.unit_bytes == 0 {
                return fail(elem("process", i, "unit_bytes"), format!("expected a send() unit in 1..={} bytes, got 0 (stream_send needs unit_bytes)", u32::MAX));
            }
            if p.total_bytes == 0 {
                return fail(elem("process", i, "total_bytes"), "expected at least 1 byte to send");
            }
            let Some(to) = &p.connect else {
                return fail(elem("process", i, "program"), "stream_send needs `connect`: the name of a stream_sink [[traffic]]");
            };
            match c.traffic.iter().find(|t| &t.name == to) {
                None => {
                    let have: Vec<&str> = c.traffic.iter().map(|t| t.name.as_str()).collect();
                    return fail(elem("process", i, "connect"), format!("no [[traffic]] named `{to}` (have: {})", have.join(", ")));
                }
                Some(t) if t.kind != SourceKind::StreamSink => {
                    return fail(elem("process", i, "connect"), format!("`{to}` is a {:?} source; a connection needs a stream_sink", t.kind));
                }
                Some(t) if t.flows < p.instances => {
                    return fail(elem("process", i, "instances"), format!("{} instances need {} flows on `{to}` (it has {})", p.instances, p.instances, t.flows));
                }
                Some(_) => {}
            }
        } else {
            for (k, set) in [("connect", p.connect.is_some()), ("unit_bytes", p.unit_bytes != 0)] {
                if set {
                    return fail(elem("process", i, k), "only a stream_send program takes this key");
                }
            }
        }
    }
    let mut tnames = BTreeSet::new();
    for (i, t) in c.traffic.iter().enumerate() {
        if !tnames.insert(t.name.as_str()) {
            return fail(elem("traffic", i, "name"), format!("duplicate traffic name `{}`", t.name));
        }
        if !c.nics.iter().any(|n| n.name == t.nic) {
            let have: Vec<&str> = c.nics.iter().map(|n| n.name.as_str()).collect();
            return fail(elem("traffic", i, "nic"), format!("no NIC named `{}` (have: {})", t.nic, have.join(", ")));
        }
        if t.kind != SourceKind::Sink && t.dst_port == 0 {
            return fail(elem("traffic", i, "dst_port"), "this traffic sends: expected a destination port 1..=65535");
        }
        if matches!(t.kind, SourceKind::Cbr | SourceKind::Poisson) && !(t.rate_pps.is_finite() && t.rate_pps > 0.0) {
            return fail(elem("traffic", i, "rate_pps"), "cbr and poisson traffic need rate_pps > 0");
        }
        if t.flows == 0 {
            return fail(elem("traffic", i, "flows"), "expected at least 1 flow");
        }
        if t.dst_port_per_flow && u32::from(t.dst_port) + t.flows - 1 > 65535 {
            return fail(elem("traffic", i, "flows"), format!("dst_port_per_flow: flows go to ports {}..{}: past 65535", t.dst_port, u32::from(t.dst_port) + t.flows - 1));
        }
        if t.link_mbps == 0 {
            return fail(elem("traffic", i, "link_mbps"), "expected a link rate above 0");
        }
        if t.clients == 0 {
            return fail(elem("traffic", i, "clients"), "expected at least 1 client");
        }
        if u32::from(t.dst_port) + t.clients - 1 > 65535 {
            return fail(elem("traffic", i, "clients"), "dst_port + clients - 1 must be a port (<= 65535)");
        }
        http(c, i, t)?;
        if t.protocol == hostsim_host::Protocol::Tcp && t.kind != SourceKind::PingPong {
            return fail(elem("traffic", i, "protocol"), "only ping_pong traffic takes a protocol (tcp_window is TCP, cbr/poisson are UDP)");
        }
        let tcp = matches!(t.kind, SourceKind::TcpWindow | SourceKind::StreamSink | SourceKind::HttpClients | SourceKind::HttpOrigin)
            || t.protocol == hostsim_host::Protocol::Tcp;
        let max = if tcp { 1460 } else { 1472 };
        if t.payload_bytes > max || (tcp && t.payload_bytes == 0) {
            return fail(elem("traffic", i, "payload_bytes"), format!("expected at most {max} bytes (one unfragmented frame){}", if tcp { " and at least 1" } else { "" }));
        }
        if tcp && t.window_bytes == 0 {
            return fail(elem("traffic", i, "window_bytes"), "expected a window above 0");
        }
        if t.kind == SourceKind::PingPong && t.timeout_ms == 0 {
            return fail(elem("traffic", i, "timeout_ms"), "ping-pong needs a timeout above 0");
        }
        if let Some(kind) = ports.get(&t.dst_port) {
            if is_tcp(*kind) != tcp {
                return fail(elem("traffic", i, "dst_port"), format!("port {} is served by a {} program but this traffic is {}", t.dst_port, if tcp { "UDP" } else { "TCP" }, if tcp { "TCP" } else { "UDP" }));
            }
        }
        if t.stop_ms.is_some_and(|s| s <= t.start_ms) {
            return fail(elem("traffic", i, "stop_ms"), "expected stop_ms after start_ms");
        }
    }
    let have_nics = || c.nics.iter().map(|n| n.name.as_str()).collect::<Vec<_>>().join(", ");
    for (i, r) in c.routes.iter().enumerate() {
        if let Some(from) = &r.from {
            if !c.nics.iter().any(|n| &n.name == from) {
                return fail(elem("route", i, "from"), format!("no NIC named `{from}` (have: {})", have_nics()));
            }
        }
        if !c.nics.iter().any(|n| n.name == r.to) {
            return fail(elem("route", i, "to"), format!("no NIC named `{}` (have: {})", r.to, have_nics()));
        }
        if !c.traffic.iter().any(|t| t.kind == SourceKind::Sink && t.nic == r.to) {
            return fail(elem("route", i, "to"), format!("nothing receives on NIC `{}`: add a [[traffic]] with kind = \"sink\" and nic = \"{}\"", r.to, r.to));
        }
    }
    Ok(())
}

pub fn scenario(sc: &Scenario) -> Result<(), ScenarioError> {
    let at = |segs: Vec<Seg>, msg: String| {
        crate::err_segs(&sc.path, &sc.src, &segs, crate::paths::render(&segs), msg)
    };
    if let Some(id) = &sc.extends {
        let ok = !id.is_empty() && id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !ok {
            return Err(at(key(&["extends"]), format!("expected a paper id such as `ozaki-pbq` (lowercase letters, digits, `-`), got `{id}`")));
        }
    }
    let mut names = BTreeSet::new();
    for (i, v) in sc.variants.iter().enumerate() {
        if !names.insert(v.name.as_str()) {
            return Err(at(elem("variant", i, "name"), format!("duplicate variant name `{}`", v.name)));
        }
    }
    let swept: BTreeSet<&str> = sc.sweep.iter().map(|(k, _)| k.as_str()).collect();
    let have_swept = if swept.is_empty() {
        "nothing is swept".to_string()
    } else {
        format!("swept: {}", swept.iter().copied().collect::<Vec<_>>().join(", "))
    };
    for (i, e) in sc.expects.iter().enumerate() {
        // The left-hand side's selector keys are at `expect[i]`, the right-hand side's inside `rhs`.
        let base = vec![Seg::Key("expect".into()), Seg::Index(i)];
        let mut rhs = base.clone();
        rhs.push(Seg::Key("rhs".into()));
        let sels = std::iter::once((base, e.variant.as_deref(), &e.at))
            .chain(e.rhs.iter().map(|r| (rhs.clone(), r.variant.as_deref(), &r.at)));
        for (segs, v, point) in sels {
            if let Some(v) = v {
                let known = sc.variants.iter().any(|x| x.name == v) || (sc.variants.is_empty() && v == "base");
                if !known {
                    let have: Vec<&str> = sc.variants.iter().map(|x| x.name.as_str()).collect();
                    let have = if have.is_empty() { "none: the only variant is `base`".to_string() } else { have.join(", ") };
                    let mut k = segs.clone();
                    k.push(Seg::Key("variant".into()));
                    return Err(at(k, format!("no variant `{v}` (have: {have})")));
                }
            }
            for (k, val) in point {
                if !swept.contains(k.as_str()) {
                    let mut ks = segs.clone();
                    ks.extend([Seg::Key("at".into()), Seg::Key(k.clone())]);
                    let hint = if val.is_table() { " (write a dotted key in quotes)" } else { "" };
                    return Err(at(ks, format!("`{k}` is not a swept key{hint} ({have_swept})")));
                }
            }
        }
        if e.value.is_none() && e.rhs.is_none() {
            return Err(at(vec![Seg::Key("expect".into()), Seg::Index(i)], "expected `value` or `rhs` (what to compare with)".into()));
        }
    }
    let known_variant = |v: &str| sc.variants.iter().any(|x| x.name == v) || (sc.variants.is_empty() && v == "base");
    let have_variants = || {
        let have: Vec<&str> = sc.variants.iter().map(|x| x.name.as_str()).collect();
        if have.is_empty() { "none: the only variant is `base`".to_string() } else { have.join(", ") }
    };
    for (i, f) in sc.figures.iter().enumerate() {
        if let Some(x) = &f.x {
            if !swept.contains(x.as_str()) {
                return Err(at(elem("figure", i, "x"), format!("`{x}` is not a swept key ({have_swept})")));
            }
        }
        if let Some(x) = &f.series {
            if !swept.contains(x.as_str()) {
                return Err(at(elem("figure", i, "series"), format!("`{x}` is not a swept key ({have_swept})")));
            }
        }
        for k in f.at.keys() {
            if !swept.contains(k.as_str()) {
                let mut ks = elem("figure", i, "at");
                ks.push(Seg::Key(k.clone()));
                return Err(at(ks, format!("`{k}` is not a swept key ({have_swept})")));
            }
        }
        if f.kind == Some(crate::figure::FigureKind::Histogram) && f.x.is_some() {
            return Err(at(elem("figure", i, "x"), "a histogram's horizontal axis is its bins: give `series`, not `x`".into()));
        }
        for v in f.variants.iter().chain(f.marks.iter().filter_map(|m| m.variant.as_ref())) {
            if !known_variant(v) {
                let key = if f.variants.contains(v) { "variants" } else { "marks" };
                return Err(at(elem("figure", i, key), format!("no variant `{v}` (have: {})", have_variants())));
            }
        }
        if let Some(k) = f.marks.iter().position(|m| m.x.is_none() && m.y.is_none()) {
            return Err(at(elem("figure", i, "marks"), format!("mark {} has neither `x` nor `y`", k + 1)));
        }
    }
    Ok(())
}
