//! Semantic validation: what deserialisation and the per-key ranges of `bounds.rs` cannot check.
//! Errors carry the key path.
//!
//! Three kinds of check live here:
//! - references that must resolve (a traffic's NIC, a CPU number against the profile, ports);
//! - relations between keys (warm-up shorter than the run, a source no faster than its own link,
//!   interrupt coalescing that can fire);
//! - the model's memory ([`memory`]): what the configuration could make the model hold at once,
//!   at a stated cost per item, against [`MEMORY_MAX`].

use crate::paths::Seg;
use crate::{Scenario, ScenarioError};
use hostsim_host::hooks::Mechanisms;
use hostsim_host::mechanisms::Registry;
use hostsim_host::{cpus_text, online_text, HostConfig, IrqRouting, ItrMode, Profile, RxPath, SchedPolicy};
use hostsim_workload::{ProgramKind, SourceKind, WorkDist};
use std::collections::BTreeSet;

type VResult = Result<(), (Vec<Seg>, String)>;

fn is_tcp(p: ProgramKind) -> bool {
    matches!(p, ProgramKind::TcpStream | ProgramKind::TcpEcho | ProgramKind::StreamSend | ProgramKind::Accelerator)
}

/// Programs that read no socket (they take no `port`).
fn socketless(p: ProgramKind) -> bool {
    matches!(p, ProgramKind::Spin | ProgramKind::Periodic | ProgramKind::Yielder)
}

fn sub(arr: &str, i: usize, table: &str, field: &str) -> Vec<Seg> {
    vec![Seg::Key(arr.into()), Seg::Index(i), Seg::Key(table.into()), Seg::Key(field.into())]
}

/// A multi-threaded web accelerator (`program = "accelerator"`): its threads, policy and
/// origin, and the profile's system-call costs it needs.
fn accelerator(c: &HostConfig, i: usize, p: &hostsim_host::ProcessConfig) -> VResult {
    use hostsim_workload::{IntervalControl, ThreadProgram};
    if c.profile.syscalls.is_none() {
        return fail(
            elem("process", i, "program"),
            format!(
                "the accelerator makes poll()/accept() calls, but profile `{}` has no [syscalls] costs",
                c.profile.name
            ),
        );
    }
    if p.instances != 1 {
        return fail(
            elem("process", i, "instances"),
            "an accelerator runs as one process (its threads are [[process.thread]])",
        );
    }
    let thread = |j: usize, f: &str| {
        vec![Seg::Key("process".into()), Seg::Index(i), Seg::Key("thread".into()), Seg::Index(j), Seg::Key(f.into())]
    };
    let mut names = BTreeSet::new();
    for (j, t) in p.threads.iter().enumerate() {
        if !names.insert(t.name.as_str()) {
            return fail(thread(j, "name"), format!("duplicate thread name `{}`", t.name));
        }
        check_name(&t.name, "thread", true).map_err(|m| (thread(j, "name"), m))?;
        if t.program.is_none() {
            return fail(
                thread(j, "name"),
                format!("thread `{}` has no program: expected program = \"listen\", \"io\" or \"retrieve\"", t.name),
            );
        }
        let machine = c.profile.topology.cpus();
        check_cpu_list(&t.cpus, machine, machine, thread(j, "cpus"), false)?;
    }
    for role in [ThreadProgram::Listen, ThreadProgram::Io, ThreadProgram::Retrieve] {
        let n = p.threads.iter().filter(|t| t.program == Some(role)).count();
        if n != 1 {
            let what = format!("{role:?}").to_lowercase();
            return fail(
                elem("process", i, "program"),
                format!("an accelerator needs exactly one [[process.thread]] with program = \"{what}\" (found {n})"),
            );
        }
    }
    let a = p.accelerator.clone().unwrap_or_default();
    let acc = |f: &str| sub("process", i, "accelerator", f);
    if !(a.min_cycle_ms.is_finite() && a.min_cycle_ms >= 0.0) {
        return fail(acc("min_cycle_ms"), format!("expected a cycle of at least 0 ms, got {}", a.min_cycle_ms));
    }
    if !(a.ratio.is_finite() && a.ratio >= 0.0) {
        return fail(
            acc("ratio"),
            format!("expected a ratio of at least 0 (the paper's k× interval is ratio = k - 1), got {}", a.ratio),
        );
    }
    if matches!(a.interval_control, IntervalControl::Old | IntervalControl::Static) && a.min_cycle_ms <= 0.0 {
        return fail(
            acc("min_cycle_ms"),
            "old and static interval control need a cycle above 0 ms (`none` is the 0 ms case)",
        );
    }
    if !(1..=99).contains(&a.fifo_priority) {
        return fail(
            acc("fifo_priority"),
            format!("expected a SCHED_FIFO priority in 1..=99, got {}", a.fifo_priority),
        );
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
                return fail(
                    acc("origin_port"),
                    format!(
                        "origin `{}` sends to port {}; set origin_port = {} (or its dst_port)",
                        t.name, t.dst_port, t.dst_port
                    ),
                );
            }
        }
        Some(t) => {
            return fail(
                acc("origin"),
                format!("`{}` is a {:?} source; the origin must be http_origin", t.name, t.kind),
            )
        }
        None => {
            let have: Vec<&str> =
                c.traffic.iter().filter(|t| t.kind == SourceKind::HttpOrigin).map(|t| t.name.as_str()).collect();
            return fail(
                acc("origin"),
                format!("no http_origin [[traffic]] named `{}` (have: {})", a.origin, have.join(", ")),
            );
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
fn fail<T>(k: Vec<Seg>, msg: impl Into<String>) -> Result<T, (Vec<Seg>, String)> {
    Err((k, msg.into()))
}

/// The longest name of a NIC, process, traffic source, variant or metric alias.
pub const NAME_LEN_MAX: usize = 64;

/// A name that can stand in a key path (`process.NAME.nice`), a metric (`NAME_rx_pps`) and a CSV
/// column: letters, digits, `_` and `-`, not only digits (`process.0` means the first element).
fn check_name(name: &str, what: &str, dash: bool) -> Result<(), String> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || (dash && c == '-');
    let chars = if dash { "letters, digits, `_` or `-`" } else { "letters, digits or `_`" };
    if name.is_empty() || name.len() > NAME_LEN_MAX || !name.chars().all(ok_char) {
        return Err(format!("expected a {what} name of 1..={NAME_LEN_MAX} {chars} (it names keys, metrics and CSV columns), got {name:?}"));
    }
    if name.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "expected a {what} name that is not a number (`{name}` would read as an index in key paths)"
        ));
    }
    Ok(())
}

/// A CPU list (`hostsim_host::check_cpu_list`), its fault at `at`.
fn check_cpu_list(list: &[u32], ncpu: usize, machine: usize, at: Vec<Seg>, dups_ok: bool) -> VResult {
    hostsim_host::check_cpu_list(list, ncpu, machine, dups_ok).map_err(|m| (at, m))
}

pub fn profile(p: &Profile) -> VResult {
    let t = &p.topology;
    // Each factor is bounded (bounds.rs), so the product is exact in u64.
    let n = u64::from(t.packages) * u64::from(t.cores_per_package) * u64::from(t.threads_per_core);
    if n > 128 {
        return fail(
            key(&["topology"]),
            format!(
                "{} × {} × {} = {n} CPUs; the model supports at most 128",
                t.packages, t.cores_per_package, t.threads_per_core
            ),
        );
    }
    Ok(())
}

/// The most time-series rows a run may produce (each ~100 bytes in memory, more as CSV).
pub const SAMPLES_MAX: u64 = 1_000_000;

/// The slowest rate a cbr or Poisson source may have. A gap of 1/rate must be representable in
/// nanoseconds many times over (an exponential draw reaches ~37 means): 10^-3 pkt/s gives gaps
/// of ~10^12 ns, far below 2^64.
pub const RATE_PPS_MIN: f64 = 1e-3;

pub fn config(c: &HostConfig) -> VResult {
    let machine = c.profile.topology.cpus();
    let k = &c.kernel;
    if let Some(n) = k.online_cpus {
        if n == 0 || n as usize > machine {
            return fail(key(&["kernel", "online_cpus"]), format!("expected 1..={machine} ({})", cpus_text(machine)));
        }
        if k.concurrency.is("up") && n != 1 {
            return fail(
                key(&["kernel", "online_cpus"]),
                "a uniprocessor kernel (concurrency = \"up\") runs 1 CPU: expected 1 or no value",
            );
        }
    }
    let ncpu = c.online_cpus();
    if c.duration_ns == 0 {
        return fail(key(&["duration_ms"]), "expected a duration of at least 1 ms");
    }
    if c.warmup_ns >= c.duration_ns {
        return fail(key(&["warmup_ms"]), "expected warm-up shorter than duration_ms");
    }
    let samples = c.duration_ns / c.sample_interval_ns;
    if samples > SAMPLES_MAX {
        return fail(
            key(&["sample_interval_ms"]),
            format!("duration_ms / sample_interval_ms = {samples} samples, more than {SAMPLES_MAX}: sample less often"),
        );
    }
    kernel(c, ncpu, machine)?;
    let mut names = BTreeSet::new();
    for (i, n) in c.nics.iter().enumerate() {
        check_name(&n.name, "NIC", true).map_err(|m| (elem("nic", i, "name"), m))?;
        if !names.insert(n.name.as_str()) {
            return fail(elem("nic", i, "name"), format!("duplicate NIC name `{}`", n.name));
        }
        check_cpu_list(&n.irq_cpus, ncpu, machine, elem("nic", i, "irq_cpus"), n.irq_routing == IrqRouting::Msix)?;
        if n.irq_routing == IrqRouting::Fixed && n.irq_cpus.len() > 1 {
            return fail(
                elem("nic", i, "irq_cpus"),
                "fixed routing takes exactly one CPU (use `mask` or `balance_irq` for several)",
            );
        }
        if n.tx_irq_ring_level.is_some_and(|l| l == 0 || l > n.tx_ring) {
            return fail(
                elem("nic", i, "tx_irq_ring_level"),
                format!("expected a ring level in 1..={} (tx_ring)", n.tx_ring),
            );
        }
        if n.coalesce_frames > n.rx_ring && n.coalesce_usecs == 0 {
            return fail(
                elem("nic", i, "coalesce_frames"),
                format!("{} frames per interrupt with an RX ring of {} and no coalesce_usecs timer: the ring fills first and no interrupt is ever raised", n.coalesce_frames, n.rx_ring),
            );
        }
        if n.itr_mode == ItrMode::IxgbeDynamic && c.kernel.rx_path != RxPath::Napi {
            return fail(
                elem("nic", i, "itr_mode"),
                "ixgbe's dynamic ITR is updated at napi_complete (ixgbe_poll): it needs kernel.rx_path = \"napi\"",
            );
        }
        if matches!(n.itr_mode, ItrMode::NetDimCqe | ItrMode::NetDimEqe) && c.kernel.rx_path != RxPath::Napi {
            return fail(
                elem("nic", i, "itr_mode"),
                "net_dim samples at the NAPI poll's completion (mlx5e_napi_poll): it needs kernel.rx_path = \"napi\"",
            );
        }
        if n.gro && c.kernel.rx_path != RxPath::Napi {
            return fail(
                elem("nic", i, "gro"),
                "GRO runs in the NAPI poll (napi_gro_receive): it needs kernel.rx_path = \"napi\"",
            );
        }
        if n.rsc_max_desc > 0 {
            if ![1, 4, 8, 16].contains(&n.rsc_max_desc) {
                return fail(
                    elem("nic", i, "rsc_max_desc"),
                    format!("expected 1, 4, 8 or 16 (the 82599's RSCCTL.MAXDESC settings), got {}", n.rsc_max_desc),
                );
            }
            if c.kernel.rx_path != RxPath::Napi {
                return fail(
                    elem("nic", i, "rsc_max_desc"),
                    "RSC is modelled with ixgbe's NAPI driver: it needs kernel.rx_path = \"napi\"",
                );
            }
            if !c.routes.is_empty() {
                return fail(elem("nic", i, "rsc_max_desc"), "IP forwarding turns LRO, and with it the 82599's RSC, off (dev_disable_lro): set rsc_max_desc = 0 on a forwarding host");
            }
        }
    }
    processes(c, ncpu, machine)?;
    traffic(c)?;
    routes(c)?;
    memory(c)
}

fn kernel(c: &HostConfig, ncpu: usize, machine: usize) -> VResult {
    let k = &c.kernel;
    if k.rps && !k.rfs && k.rps_cpus.is_empty() {
        return fail(key(&["kernel", "rps"]), "RPS needs a map (kernel.rps_cpus) or RFS (kernel.rfs = true)");
    }
    if k.rfs && !k.rps {
        return fail(key(&["kernel", "rfs"]), "RFS needs RPS: set kernel.rps = true");
    }
    if !(k.tcp_rmem[0] <= k.tcp_rmem[1] && k.tcp_rmem[1] <= k.tcp_rmem[2]) {
        return fail(
            key(&["kernel", "tcp_rmem"]),
            format!("expected [min, default, max] with min <= default <= max, got {:?}", k.tcp_rmem),
        );
    }
    if k.rfs && !k.rfs_entries.is_power_of_two() {
        return fail(key(&["kernel", "rfs_entries"]), format!("expected a power of two, got {}", k.rfs_entries));
    }
    if !k.xdp.is("none") && k.rx_path != RxPath::Napi {
        return fail(
            key(&["kernel", "xdp"]),
            "an XDP program runs in the NAPI poll: it needs kernel.rx_path = \"napi\"",
        );
    }
    if k.o1_runqueue && k.scheduler != hostsim_host::Scheduler::O1 {
        return fail(
            key(&["kernel", "o1_runqueue"]),
            "the O(1) run queue is the O(1) scheduler's: it needs kernel.scheduler = \"o1\"",
        );
    }
    if k.napi_threaded {
        // What threaded NAPI's kthread does not model (crates/host/src/net/core/napi_thread.rs).
        let refused = if k.rx_path != RxPath::Napi {
            Some(("rx_path", "threaded NAPI runs a NAPI poll: it needs kernel.rx_path = \"napi\""))
        } else if k.rps {
            Some(("rps", "RPS from a threaded-NAPI kthread is not modelled"))
        } else if k.xdp.is("cpumap") {
            Some(("xdp", "the CPU map's flush from a threaded-NAPI kthread is not modelled"))
        } else if k.tcp_prequeue {
            Some(("tcp_prequeue", "TCP prequeue with threaded NAPI is not modelled"))
        } else if !k.concurrency.is("smp") {
            Some(("concurrency", "threaded NAPI is modelled with concurrency = \"smp\" only"))
        } else {
            None
        };
        if let Some((name, msg)) = refused {
            return fail(key(&["kernel", name]), msg);
        }
        if let Some(i) = c.nics.iter().position(|n| n.gro || n.rsc_max_desc > 0) {
            let what = if c.nics[i].gro { "gro" } else { "rsc_max_desc" };
            return fail(elem("nic", i, what), "GRO and RSC in a threaded-NAPI kthread are not modelled");
        }
    }
    if k.xdp.is("cpumap") && k.cpumap_cpu as usize >= ncpu {
        return fail(
            key(&["kernel", "cpumap_cpu"]),
            format!("CPU {} does not exist ({})", k.cpumap_cpu, online_text(ncpu, machine)),
        );
    }
    // The mechanisms' own checks (each in its folder: `Mechanism::check`).
    Registry::check(c).map_err(|f| (crate::keys::segs(&f.at), f.msg))?;
    check_cpu_list(&k.rps_cpus, ncpu, machine, key(&["kernel", "rps_cpus"]), false)
}

/// The ports each socket-reading `[[process]]` entry binds: (first, last, program, entry), sorted.
fn port_ranges(c: &HostConfig) -> Vec<(u32, u32, ProgramKind, usize)> {
    let mut r: Vec<(u32, u32, ProgramKind, usize)> = c
        .processes
        .iter()
        .enumerate()
        .filter(|(_, p)| !socketless(p.program))
        .filter_map(|(i, p)| {
            p.port.map(|port| (u32::from(port), u32::from(port) + p.instances.max(1) - 1, p.program, i))
        })
        .collect();
    r.sort_by_key(|&(first, _, _, i)| (first, i));
    r
}

fn processes(c: &HostConfig, ncpu: usize, machine: usize) -> VResult {
    let mut pnames = BTreeSet::new();
    for (i, p) in c.processes.iter().enumerate() {
        check_name(&p.name, "process", true).map_err(|m| (elem("process", i, "name"), m))?;
        if !pnames.insert(p.name.as_str()) {
            return fail(elem("process", i, "name"), format!("duplicate process name `{}`", p.name));
        }
        if p.sched == SchedPolicy::Fifo && !(1..=99).contains(&p.rt_priority) {
            // Without an rt_priority the fault is on the `sched` line.
            return fail(elem("process", i, "sched"), "SCHED_FIFO needs rt_priority in 1..=99 (none given)");
        }
        check_cpu_list(&p.cpus, ncpu, machine, elem("process", i, "cpus"), false)?;
        if p.start_ms.saturating_mul(1_000_000) >= c.duration_ns {
            return fail(
                elem("process", i, "start_ms"),
                format!("starts at or after the end of the run ({} ms): it would never run", c.duration_ns / 1_000_000),
            );
        }
        if let Some(r) = p.renice.iter().find(|r| r.at_ms.saturating_mul(1_000_000) >= c.duration_ns) {
            return fail(
                elem("process", i, "renice"),
                format!(
                    "a nice change at {} ms, at or after the end of the run ({} ms)",
                    r.at_ms,
                    c.duration_ns / 1_000_000
                ),
            );
        }
        if !socketless(p.program) {
            let Some(port) = p.port else {
                return fail(elem("process", i, "port"), "this program reads a socket: give it a port");
            };
            let last = u32::from(port) + p.instances - 1;
            if last > 65535 {
                return fail(
                    elem("process", i, "instances"),
                    format!("instances bind ports {port}..={last}: past 65535"),
                );
            }
        } else if p.port.is_some() {
            return fail(elem("process", i, "port"), "spin, periodic and yielder read no socket: remove `port`");
        }
        if socketless(p.program) && p.work_ns == 0 {
            return fail(
                elem("process", i, "work_ns"),
                "spin, periodic and yielder need work_ns > 0 (the burst length)",
            );
        }
        if p.work_dist == WorkDist::Exp && p.work_ns == 0 {
            return fail(elem("process", i, "work_ns"), "an exponential work distribution needs a mean work_ns > 0");
        }
        if p.program == ProgramKind::TcpEcho && p.reply_bytes > 1460 {
            return fail(elem("process", i, "reply_bytes"), "expected at most 1460 bytes (one TCP segment)");
        }
        if p.program == ProgramKind::Accelerator {
            accelerator(c, i, p)?;
        } else {
            if !p.threads.is_empty() {
                return fail(
                    elem("process", i, "thread"),
                    "only a multi-threaded program (accelerator) takes [[process.thread]]",
                );
            }
            if p.accelerator.is_some() {
                return fail(
                    elem("process", i, "accelerator"),
                    "only program = \"accelerator\" takes [process.accelerator]",
                );
            }
        }
        if p.sndbuf_bytes == Some(0) {
            return fail(elem("process", i, "sndbuf_bytes"), "expected a send buffer of at least 1 byte");
        }
        if p.program == ProgramKind::StreamSend {
            if p.unit_bytes == 0 {
                return fail(
                    elem("process", i, "unit_bytes"),
                    format!("expected a send() unit in 1..={} bytes, got 0 (stream_send needs unit_bytes)", u32::MAX),
                );
            }
            if p.total_bytes == 0 {
                return fail(elem("process", i, "total_bytes"), "expected at least 1 byte to send");
            }
            let Some(to) = &p.connect else {
                return fail(
                    elem("process", i, "program"),
                    "stream_send needs `connect`: the name of a stream_sink [[traffic]]",
                );
            };
            match c.traffic.iter().find(|t| &t.name == to) {
                None => {
                    let have: Vec<&str> = c.traffic.iter().map(|t| t.name.as_str()).collect();
                    return fail(
                        elem("process", i, "connect"),
                        format!("no [[traffic]] named `{to}` (have: {})", have.join(", ")),
                    );
                }
                Some(t) if t.kind != SourceKind::StreamSink => {
                    return fail(
                        elem("process", i, "connect"),
                        format!("`{to}` is a {:?} source; a connection needs a stream_sink", t.kind),
                    );
                }
                Some(t) if t.flows < p.instances => {
                    return fail(
                        elem("process", i, "instances"),
                        format!("{} instances need {} flows on `{to}` (it has {})", p.instances, p.instances, t.flows),
                    );
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
    // Processes naming the same port share its socket: threads of one program may, two
    // different programs may not (each would read the other's messages).
    let ranges = port_ranges(c);
    let mut conflict: Option<(usize, usize, u32)> = None;
    let mut reach: Option<(u32, ProgramKind, usize)> = None; // furthest-reaching range so far
    for &(first, last, prog, i) in &ranges {
        if let Some((end, other, j)) = reach {
            if first <= end && other != prog {
                let pair = (j.min(i), j.max(i), first);
                conflict = Some(conflict.map_or(pair, |c| c.min(pair)));
            }
        }
        if reach.is_none_or(|(end, _, _)| last > end) {
            reach = Some((last, prog, i));
        }
    }
    if let Some((j, i, q)) = conflict {
        let (a, b) = (&c.processes[j], &c.processes[i]);
        let msg = if is_tcp(a.program) != is_tcp(b.program) {
            format!("port {q} is shared by a TCP and a UDP program (`{}` and `{}`)", a.name, b.name)
        } else {
            format!("port {q} is shared by two different programs (`{}` and `{}`) reading one socket: give each its own port", a.name, b.name)
        };
        return fail(elem("process", i, "port"), msg);
    }
    Ok(())
}

/// Frames per second one link of `link_mbps` carries with `payload`-byte frames.
fn link_pps(link_mbps: u64, payload: u32, tcp: bool) -> f64 {
    link_mbps as f64 * 1e6 / (8.0 * hostsim_host::wire_bytes(payload, tcp) as f64)
}

fn traffic(c: &HostConfig) -> VResult {
    let ranges = port_ranges(c);
    let program_at = |port: u16| {
        let q = u32::from(port);
        ranges.iter().filter(|&&(first, last, _, _)| first <= q && q <= last).min_by_key(|r| r.3).map(|r| r.2)
    };
    let mut tnames = BTreeSet::new();
    for (i, t) in c.traffic.iter().enumerate() {
        check_name(&t.name, "traffic", true).map_err(|m| (elem("traffic", i, "name"), m))?;
        if !tnames.insert(t.name.as_str()) {
            return fail(elem("traffic", i, "name"), format!("duplicate traffic name `{}`", t.name));
        }
        if !c.nics.iter().any(|n| n.name == t.nic) {
            let have: Vec<&str> = c.nics.iter().map(|n| n.name.as_str()).collect();
            let have = if have.is_empty() { "none: add a [[nic]]".to_string() } else { have.join(", ") };
            return fail(elem("traffic", i, "nic"), format!("no NIC named `{}` (have: {have})", t.nic));
        }
        if t.kind != SourceKind::Sink && t.dst_port == 0 {
            return fail(elem("traffic", i, "dst_port"), "this traffic sends: expected a destination port 1..=65535");
        }
        if t.tcp_cc != hostsim_host::TcpCc::None && t.kind != SourceKind::TcpWindow {
            return fail(
                elem("traffic", i, "tcp_cc"),
                "congestion control applies to `tcp_window` traffic only: remove tcp_cc or set kind = \"tcp_window\"",
            );
        }
        let tcp = matches!(
            t.kind,
            SourceKind::TcpWindow | SourceKind::StreamSink | SourceKind::HttpClients | SourceKind::HttpOrigin
        ) || t.protocol == hostsim_host::Protocol::Tcp;
        if matches!(t.kind, SourceKind::Cbr | SourceKind::Poisson) {
            // The busiest client link carries ceil(F / C) of the F flows' frames.
            let flows = t.flows.max(t.clients);
            let share = f64::from(flows.div_ceil(t.clients)) / f64::from(flows);
            let cap = link_pps(t.link_mbps, t.payload_bytes, false) / share;
            if !(t.rate_pps >= RATE_PPS_MIN && t.rate_pps <= cap) {
                return fail(
                    elem("traffic", i, "rate_pps"),
                    format!(
                        "expected a rate in {RATE_PPS_MIN}..={cap:.0} pkt/s for {} client link(s) of {} Mbit/s with {}-byte payloads ({}), got {}",
                        t.clients,
                        t.link_mbps,
                        t.payload_bytes,
                        if t.rate_pps > cap {
                            "faster than its link, a source would queue without limit"
                        } else {
                            "slower than a packet per 1000 s, its gaps would run past any simulated time"
                        },
                        crate::bounds::fmt_float(t.rate_pps)
                    ),
                );
            }
            if t.spread > 0.0 && (t.quantum_us == 0 || t.burst_pps > 0.0) {
                return fail(elem("traffic", i, "spread"), "spread shares out pacing quanta (quantum_us) and takes the place of burst_pps: give quantum_us and not burst_pps");
            }
            if t.quantum_us > 0 && !(t.kind == SourceKind::Cbr && (t.burst_pps >= t.rate_pps || t.spread > 0.0)) {
                return fail(elem("traffic", i, "burst_pps"), format!("pacing quanta (quantum_us) need a cbr source and a burst rate of at least its rate ({} pkt/s), or a spread", crate::bounds::fmt_float(t.rate_pps)));
            }
        } else if t.rate_pps != 0.0 {
            return fail(
                elem("traffic", i, "rate_pps"),
                "only cbr and poisson traffic take a rate (ping_pong waits for each reply, tcp_window for its window)",
            );
        }
        if t.dst_port_per_flow && u32::from(t.dst_port) + t.flows - 1 > 65535 {
            return fail(
                elem("traffic", i, "flows"),
                format!(
                    "dst_port_per_flow: flows go to ports {}..={}: past 65535",
                    t.dst_port,
                    u32::from(t.dst_port) + t.flows - 1
                ),
            );
        }
        if u32::from(t.dst_port) + t.clients - 1 > 65535 {
            return fail(
                elem("traffic", i, "clients"),
                format!("clients send to ports {}..={}: past 65535", t.dst_port, u32::from(t.dst_port) + t.clients - 1),
            );
        }
        http(c, i, t)?;
        if t.protocol == hostsim_host::Protocol::Tcp && t.kind != SourceKind::PingPong {
            return fail(
                elem("traffic", i, "protocol"),
                "only ping_pong traffic takes a protocol (tcp_window is TCP, cbr/poisson are UDP)",
            );
        }
        let max = if tcp { 1460 } else { 1472 };
        if t.payload_bytes > max || (tcp && t.payload_bytes == 0) {
            return fail(
                elem("traffic", i, "payload_bytes"),
                format!(
                    "expected at most {max} bytes (one unfragmented frame){}",
                    if tcp { " and at least 1" } else { "" }
                ),
            );
        }
        if let Some(kind) = program_at(t.dst_port) {
            if is_tcp(kind) != tcp {
                return fail(
                    elem("traffic", i, "dst_port"),
                    format!(
                        "port {} is served by a {} program but this traffic is {}",
                        t.dst_port,
                        if tcp { "UDP" } else { "TCP" },
                        if tcp { "TCP" } else { "UDP" }
                    ),
                );
            }
        }
        // start_ms = duration_ms switches a source off (a scenario's flood left out of a run);
        // later than that is a mistake.
        if t.start_ms.saturating_mul(1_000_000) > c.duration_ns {
            return fail(
                elem("traffic", i, "start_ms"),
                format!("starts after the end of the run ({} ms): it would never send (start_ms = duration_ms switches a source off)", c.duration_ns / 1_000_000),
            );
        }
        if t.stop_ms.is_some_and(|s| s <= t.start_ms) {
            return fail(elem("traffic", i, "stop_ms"), "expected stop_ms after start_ms");
        }
    }
    Ok(())
}

/// `[[route]]`: IP forwarding from a NIC (or any) to a NIC something receives on.
fn routes(c: &HostConfig) -> VResult {
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
            return fail(
                elem("route", i, "to"),
                format!(
                    "nothing receives on NIC `{}`: add a [[traffic]] with kind = \"sink\" and nic = \"{}\"",
                    r.to, r.to
                ),
            );
        }
    }
    Ok(())
}

/// What a run may use for model state, at most. The model's memory is its queues (every packet
/// the configuration lets it hold at once), one latency histogram per process and source, flow
/// tables and the time series: all known from the configuration, so a configuration that could
/// exhaust memory is refused here instead of aborting mid-run.
pub const MEMORY_MAX: u64 = 2 << 30;

/// Bytes per held packet: the slab entry (48 B), its queue slot, and the event that carries it
/// while it crosses a wire (40 B in the event heap), rounded up.
pub const PACKET_BYTES: u64 = 128;
/// A latency histogram (HdrHistogram, 1 ns..1 h at 3 significant digits): 268 KB measured.
pub const HISTOGRAM_BYTES: u64 = 270_000;
/// A process (or kernel thread): its histogram and state.
pub const PROCESS_BYTES: u64 = HISTOGRAM_BYTES + 1_024;
/// A TCP flow: sender state, the receiver's flow entry and the reorder check.
pub const FLOW_BYTES: u64 = 128;
/// A time-series row: 13 numbers.
pub const SAMPLE_BYTES: u64 = 13 * 8;
/// A TCP connection of an HTTP client or an accelerator (an upper estimate): the client's
/// connection state, the server's socket (struct, queue headers, listen entry) and its TCP
/// sender state.
pub const CONN_BYTES: u64 = 1_024;

/// The model's worst-case memory, part by part, each with the key that sets it (and, when
/// `describe`, what the part is, for the message).
pub fn memory_parts(c: &HostConfig, describe: bool) -> Vec<(u64, Vec<Seg>, String)> {
    let ncpu = c.profile.topology.cpus() as u64;
    let k = &c.kernel;
    let mut parts = Vec::with_capacity(9 + c.nics.len() * 3 + c.processes.len() * 4 + c.traffic.len() * 2);
    let mut push = |bytes: u64, at: Vec<Seg>, what: &dyn Fn() -> String| {
        parts.push((bytes, at, if describe { what() } else { String::new() }))
    };
    push(ncpu * (u64::from(k.netdev_max_backlog) + 1) * PACKET_BYTES, key(&["kernel", "netdev_max_backlog"]), &|| {
        format!("{ncpu} CPU backlogs of {} packets", k.netdev_max_backlog)
    });
    push(ncpu * PROCESS_BYTES, key(&["profile"]), &|| format!("{ncpu} CPUs' ksoftirqd threads"));
    let total_queues: u64 = c.nics.iter().map(|n| u64::from(n.queues)).sum();
    if k.rfs {
        push(u64::from(k.rfs_entries) * (4 + 16 * total_queues), key(&["kernel", "rfs_entries"]), &|| {
            format!("RFS tables of {} entries for {total_queues} queues", k.rfs_entries)
        });
    }
    // The mechanisms' pools (`Mechanism::buffers`).
    for (n, at, what) in Registry::buffers(c) {
        push(n * PACKET_BYTES, key(&["kernel", at]), &|| what.clone());
    }
    let samples = c.duration_ns / c.sample_interval_ns.max(1);
    push(samples * SAMPLE_BYTES, key(&["sample_interval_ms"]), &|| format!("{samples} time-series samples"));
    let min_frame = hostsim_host::wire_bytes(0, false);
    for (i, n) in c.nics.iter().enumerate() {
        push(
            u64::from(n.queues) * (u64::from(n.rx_ring) * PACKET_BYTES + u64::from(n.tx_ring) * 8),
            elem("nic", i, "rx_ring"),
            &|| format!("NIC `{}`: {} RX rings of {}", n.name, n.queues, n.rx_ring),
        );
        // One TX ring and device queue per queue pair (`crates/host/src/net/core/tx.rs`).
        push(u64::from(n.queues) * u64::from(n.tx_queue_len) * PACKET_BYTES, elem("nic", i, "tx_queue_len"), &|| {
            format!("NIC `{}`: {} device queues of {} frames", n.name, n.queues, n.tx_queue_len)
        });
        push(n.switch_buffer_bytes / min_frame * PACKET_BYTES, elem("nic", i, "switch_buffer_bytes"), &|| {
            format!(
                "NIC `{}`: a switch buffer of {} bytes ({} minimum frames)",
                n.name,
                n.switch_buffer_bytes,
                n.switch_buffer_bytes / min_frame
            )
        });
    }
    for (i, p) in c.processes.iter().enumerate() {
        push(u64::from(p.instances) * PROCESS_BYTES, elem("process", i, "instances"), &|| {
            format!("process `{}`: {} instances", p.name, p.instances)
        });
        push(p.threads.len() as u64 * PROCESS_BYTES, elem("process", i, "thread"), &|| {
            format!("process `{}`: {} threads", p.name, p.threads.len())
        });
        if let Some(a) = &p.accelerator {
            let conns = u64::from(a.origin_conns) + u64::from(a.listen_backlog);
            push(conns * CONN_BYTES, sub("process", i, "accelerator", "origin_conns"), &|| {
                format!(
                    "process `{}`: {} origin connections and a listen backlog of {}",
                    p.name, a.origin_conns, a.listen_backlog
                )
            });
        }
        if socketless(p.program) || p.port.is_none() {
            continue;
        }
        let (rcvbuf, at) = match p.rcvbuf_bytes {
            Some(b) => (b, elem("process", i, "rcvbuf_bytes")),
            None => (k.rcvbuf_bytes, key(&["kernel", "rcvbuf_bytes"])),
        };
        // The smallest packet a buffer holds is a 0-byte datagram: its truesize is the overhead.
        // Instances sharing a port share a socket; counting one per instance overestimates.
        let per_sock = u64::from(rcvbuf) / u64::from(k.skb_overhead_bytes.max(1)) + 1;
        let socks = u64::from(p.instances);
        push(socks * per_sock * PACKET_BYTES, at, &|| {
            format!(
                "process `{}`: {socks} socket(s) of {rcvbuf} bytes, {per_sock} packets of {} bytes truesize each",
                p.name, k.skb_overhead_bytes
            )
        });
    }
    for (i, t) in c.traffic.iter().enumerate() {
        let flows = u64::from(t.flows.max(t.clients));
        let base = PROCESS_BYTES + u64::from(t.clients) * 8 + flows * 8;
        if let Some(h) = &t.http {
            push(u64::from(h.conns) * CONN_BYTES, sub("traffic", i, "http", "conns"), &|| {
                format!("traffic `{}`: {} HTTP connections", t.name, h.conns)
            });
        }
        if t.kind == SourceKind::TcpWindow {
            // Every flow puts a window of segments on its client's link at once.
            let segs = u64::from(t.window_bytes).div_ceil(u64::from(t.payload_bytes.max(1)));
            push(base + flows * (FLOW_BYTES + segs * PACKET_BYTES), elem("traffic", i, "window_bytes"), &|| {
                format!("traffic `{}`: {flows} flows × a window of {segs} segments in flight", t.name)
            });
        } else {
            push(base, elem("traffic", i, "flows"), &|| format!("traffic `{}`: {flows} flows", t.name));
        }
    }
    parts
}

fn memory(c: &HostConfig) -> VResult {
    let total: u64 = memory_parts(c, false).iter().map(|p| p.0).fold(0, u64::saturating_add);
    if total <= MEMORY_MAX {
        return Ok(());
    }
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    let (bytes, at, what) = memory_parts(c, true).into_iter().max_by_key(|p| p.0).expect("at least the backlogs");
    fail(
        at,
        format!(
            "the model could hold {:.1} GiB, above the {:.0} GiB a run may use; the largest part is {:.1} GiB for {what} (at {PACKET_BYTES} bytes a packet, {} KB a process)",
            gib(total),
            gib(MEMORY_MAX),
            gib(bytes),
            PROCESS_BYTES / 1000
        ),
    )
}

pub fn scenario(sc: &Scenario) -> Result<(), ScenarioError> {
    let at = |segs: Vec<Seg>, msg: String| crate::err_segs(&sc.path, &sc.src, &segs, crate::paths::render(&segs), msg);
    if let Some(id) = &sc.extends {
        let ok = !id.is_empty() && id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !ok {
            return Err(at(
                key(&["extends"]),
                format!("expected a paper id such as `ozaki-pbq` (lowercase letters, digits, `-`), got `{id}`"),
            ));
        }
    }
    let mut names = BTreeSet::new();
    for (i, v) in sc.variants.iter().enumerate() {
        check_name(&v.name, "variant", true).map_err(|m| at(elem("variant", i, "name"), m))?;
        if !names.insert(v.name.as_str()) {
            return Err(at(elem("variant", i, "name"), format!("duplicate variant name `{}`", v.name)));
        }
        for k in v.set.keys() {
            if k.split('.').next().is_some_and(|t| crate::NOT_CONFIG.contains(&t)) {
                let segs = vec![Seg::Key("variant".into()), Seg::Index(i), Seg::Key("set".into()), Seg::Key(k.clone())];
                return Err(at(
                    segs,
                    format!("`{k}` is not part of the simulated configuration: a variant cannot set it"),
                ));
            }
        }
    }
    for (alias, _) in &sc.metric_aliases {
        check_name(alias, "metric", false)
            .map_err(|m| at(vec![Seg::Key("metrics".into()), Seg::Key(alias.clone())], m))?;
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
                    let have =
                        if have.is_empty() { "none: the only variant is `base`".to_string() } else { have.join(", ") };
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
            return Err(at(
                vec![Seg::Key("expect".into()), Seg::Index(i)],
                "expected `value` or `rhs` (what to compare with)".into(),
            ));
        }
    }
    let known_variant = |v: &str| sc.variants.iter().any(|x| x.name == v) || (sc.variants.is_empty() && v == "base");
    let have_variants = || {
        let have: Vec<&str> = sc.variants.iter().map(|x| x.name.as_str()).collect();
        if have.is_empty() {
            "none: the only variant is `base`".to_string()
        } else {
            have.join(", ")
        }
    };
    for (i, f) in sc.figures.iter().enumerate() {
        if let Some(m) = &f.measured {
            crate::files::check_relative(m).map_err(|msg| at(elem("figure", i, "measured"), msg))?;
        }
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
            return Err(at(
                elem("figure", i, "x"),
                "a histogram's horizontal axis is its bins: give `series`, not `x`".into(),
            ));
        }
        for v in f.variants.iter().chain(f.marks.iter().filter_map(|m| m.variant.as_ref().or(m.of.as_ref()))) {
            if !known_variant(v) {
                let key = if f.variants.contains(v) { "variants" } else { "marks" };
                return Err(at(elem("figure", i, key), format!("no variant `{v}` (have: {})", have_variants())));
            }
        }
        if let Some(k) = f.marks.iter().position(|m| m.x.is_none() && m.y.is_none() && m.ratio.is_none()) {
            return Err(at(elem("figure", i, "marks"), format!("mark {} has neither `x` nor `y`", k + 1)));
        }
        if let Some(k) =
            f.marks.iter().position(|m| m.ratio.is_some() != m.of.is_some() || (m.ratio.is_some() && m.y.is_some()))
        {
            return Err(at(
                elem("figure", i, "marks"),
                format!(
                    "mark {}: a ratio mark needs `ratio` and `of` (the variant it is a ratio to), and no `y`",
                    k + 1
                ),
            ));
        }
    }
    Ok(())
}
