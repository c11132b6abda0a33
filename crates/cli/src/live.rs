//! `hostsim live`: mechanisms run for real on this machine's kernel (crates/live). This file
//! only turns the command line into a run and writes its outputs.

use hostsim_live::ozaki::{self, LiveError, OzakiConfig, Row};
use std::path::Path;
use std::time::Instant;

/// Options of `hostsim live ozaki-pbq` (None = the experiment's default).
#[derive(Clone, Debug, Default)]
pub struct OzakiOptions {
    pub quick: bool,
    pub reps: Option<u32>,
    pub rates_pps: Option<Vec<f64>>,
    pub window_s: Option<f64>,
    pub bw_rate_pps: Option<f64>,
    pub modes: Option<Vec<bool>>,
}

/// The configuration a command line asks for; `--quick` is the short run of the tests (the
/// mechanism on, one saturating flood, half a second).
pub fn ozaki_config(o: &OzakiOptions) -> Result<OzakiConfig, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding the hostsim binary: {e}"))?;
    let mut c = OzakiConfig::new(exe, vec!["live-worker".into()]);
    if o.quick {
        c.rates_pps = vec![600_000.0];
        c.reps = 1;
        c.modes = vec![true];
        c.bw_rate_pps = 5_000.0;
        c.warmup_s = 0.3;
        c.window_s = 0.6;
    }
    if let Some(r) = o.reps {
        c.reps = r.clamp(1, 20);
    }
    if let Some(r) = &o.rates_pps {
        if r.iter().any(|&x| !(0.0..=5e6).contains(&x)) {
            return Err("--rates: each rate must be in 0..=5,000,000 pkt/s".into());
        }
        c.rates_pps = r.clone();
    }
    if let Some(w) = o.window_s {
        if !(0.1..=60.0).contains(&w) {
            return Err("--window-s: expected 0.1..=60".into());
        }
        c.window_s = w;
    }
    if let Some(b) = o.bw_rate_pps {
        if !(1.0..=1e6).contains(&b) {
            return Err("--bw-rate: expected 1..=1,000,000 pkt/s".into());
        }
        c.bw_rate_pps = b;
    }
    if let Some(m) = &o.modes {
        c.modes = m.clone();
    }
    Ok(c)
}

/// Facts about this machine that the results depend on, for run.json.
fn machine_facts() -> serde_json::Value {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default();
    let cpu_model = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':').map(|(_, v)| v.trim().to_string()))
        .unwrap_or_default();
    serde_json::json!({
        "kernel": read("/proc/sys/kernel/osrelease"),
        "cpus": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "cpu_model": cpu_model,
        "netdev_max_backlog": read("/proc/sys/net/core/netdev_max_backlog"),
        "netdev_budget": read("/proc/sys/net/core/netdev_budget"),
        "rmem_default": read("/proc/sys/net/core/rmem_default"),
        "loadavg_at_start": read("/proc/loadavg"),
    })
}

fn row_line(r: &Row) -> String {
    let g = |k: &str| r.metrics.get(k).copied().unwrap_or(f64::NAN);
    format!(
        "rep {} flood {:>8.0} {:>3}: flood sent {:>8.0}  bw sent {:>6.0} rx {:>6.0}  flood rx {:>7.0}  drops xdp {:>7.0} backlog {:>7.0} socket {:>7.0}  cpu0 softirq {:>4.2} idle {:>4.2}  high load {:.2}",
        r.rep,
        r.rate_pps,
        r.variant,
        g("floodclients_sent_pps"),
        g("bwclient_sent_pps"),
        g("bw_rx_pps"),
        g("flood_rx_pps"),
        g("drop_xdp_pps"),
        g("drop_backlog_pps"),
        g("drop_socket_pps"),
        g("cpu0_softirq_frac"),
        g("cpu0_idle_frac"),
        g("high_load_frac"),
    )
}

/// `hostsim live ozaki-pbq --out DIR`: run the sweep, write DIR/results.csv and DIR/run.json.
pub fn ozaki_pbq(o: &OzakiOptions, out: &Path) -> Result<(), LiveError> {
    let cfg = ozaki_config(o).map_err(LiveError::Failed)?;
    hostsim_live::sys::install_stop_handlers();
    std::fs::create_dir_all(out).map_err(|e| LiveError::Failed(format!("{}: {e}", out.display())))?;
    let t0 = Instant::now();
    let facts = machine_facts();
    let points = cfg.rates_pps.len() * cfg.modes.len() * cfg.reps as usize;
    eprintln!(
        "hostsim live ozaki-pbq: {points} points of {:.1} s (+{:.1} s warm-up), server CPU {}, clients CPU {}",
        cfg.window_s, cfg.warmup_s, cfg.server_cpu, cfg.client_cpu
    );
    let rows = ozaki::run(&cfg, |r| eprintln!("{}", row_line(r)))?;
    std::fs::write(out.join("results.csv"), ozaki::to_csv(&rows)).map_err(|e| LiveError::Failed(e.to_string()))?;
    let run = serde_json::json!({
        "experiment": "ozaki-pbq",
        "machine": facts,
        "wall_s": t0.elapsed().as_secs_f64(),
        "config": {
            "rates_pps": cfg.rates_pps, "reps": cfg.reps, "modes": cfg.modes.iter().map(|&m| ozaki::variant_name(m)).collect::<Vec<_>>(),
            "bw_rate_pps": cfg.bw_rate_pps, "payload_bytes": cfg.payload_bytes, "warmup_s": cfg.warmup_s,
            "window_s": cfg.window_s, "server_cpu": cfg.server_cpu, "client_cpu": cfg.client_cpu,
            "agent": format!("{:?}", cfg.agent),
        },
    });
    std::fs::write(out.join("run.json"), serde_json::to_string_pretty(&run).expect("json") + "\n")
        .map_err(|e| LiveError::Failed(e.to_string()))?;
    eprintln!("{} rows -> {}", rows.len(), out.join("results.csv").display());
    Ok(())
}
