//! `hostsim live`: mechanisms run for real on this machine's kernel (crates/live). This file
//! only turns the command line into a run and writes its outputs.

use hostsim_live::harness::{progress, LiveError, LiveRun};
use hostsim_live::ozaki::{self, OzakiConfig};
use std::path::Path;

/// Options of `hostsim live ozaki-pbq` (None = the experiment's default).
#[derive(Clone, Debug, Default)]
pub struct OzakiOptions {
    pub quick: bool,
    pub reps: Option<u32>,
    pub rates_pps: Option<Vec<f64>>,
    pub window_s: Option<f64>,
    pub bw_rate_pps: Option<f64>,
    pub modes: Option<Vec<bool>>,
    pub placements: Option<Vec<ozaki::RxPlacement>>,
    pub capacity_pps: Option<f64>,
}

/// The configuration a command line asks for; `--quick` is the short run of the tests (one
/// flood above the receiver's capacity, RPS placement, off then on, 0.6 s windows).
pub fn ozaki_config(o: &OzakiOptions) -> Result<OzakiConfig, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding the hostsim binary: {e}"))?;
    let mut c = OzakiConfig::new(exe, vec!["live-worker".into()]);
    if o.quick {
        c.rates_pps = vec![400_000.0];
        c.reps = 1;
        c.placements = vec![ozaki::RxPlacement::Rps];
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
    if let Some(p) = &o.placements {
        c.placements = p.clone();
    }
    if let Some(x) = o.capacity_pps {
        if !(x.is_finite() && x > 0.0 && x <= 5e7) {
            return Err("--capacity-pps: expected a rate in (0, 50,000,000] pkt/s".into());
        }
        c.capacity_pps = Some(x);
    }
    Ok(c)
}

/// `hostsim live ozaki-pbq --out DIR`: run the sweep through the live harness, which writes
/// DIR/results.csv point by point and DIR/run.json, and undoes everything at the end.
pub fn ozaki_pbq(o: &OzakiOptions, out: &Path) -> Result<(), LiveError> {
    let cfg = ozaki_config(o).map_err(LiveError::Failed)?;
    let mut run = LiveRun::start("ozaki-pbq", out)?;
    let points = cfg.rates_pps.len() * cfg.modes.len() * cfg.placements.len() * cfg.reps as usize;
    run.set_info("points", points.into());
    run.set_info(
        "config",
        serde_json::json!({
            "rates_pps": cfg.rates_pps, "reps": cfg.reps, "modes": cfg.modes.iter().map(|&m| ozaki::variant_name(m)).collect::<Vec<_>>(),
            "placements": cfg.placements.iter().map(|p| p.name()).collect::<Vec<_>>(),
            "generator": { "kind": "BPF_PROG_RUN live frames (crates/live/src/gen.rs)", "fifo_prio": cfg.gen_fifo_prio, "cpu": cfg.client_cpu },
            "napi_fifo_prio": cfg.napi_fifo_prio, "valid_frac": cfg.valid_frac, "capacity_pps": cfg.capacity_pps,
            "bw_rate_pps": cfg.bw_rate_pps, "payload_bytes": cfg.payload_bytes, "warmup_s": cfg.warmup_s,
            "window_s": cfg.window_s, "server_cpu": cfg.server_cpu, "client_cpu": cfg.client_cpu,
            "agent": format!("{:?}", cfg.agent),
        }),
    );
    run.progress(format!(
        "hostsim live ozaki-pbq ({}): {points} points of {:.1} s (+{:.1} s warm-up), server CPU {}, generator CPU {} -> {}",
        run.name(),
        cfg.window_s,
        cfg.warmup_s,
        cfg.server_cpu,
        cfg.client_cpu,
        out.join("results.csv").display()
    ));
    let outcome = ozaki::run(&cfg, &mut run);
    let n = run.points().len();
    run.finish(outcome)?;
    progress(format!("{n} points -> {}", out.join("results.csv").display()));
    Ok(())
}

/// `hostsim live clean`: print what was removed and what could not be; Ok(false) if anything
/// could not.
pub fn clean() -> Result<bool, LiveError> {
    let (lines, all) = hostsim_live::harness::clean()?;
    for l in lines {
        crate::outln!("{l}");
    }
    Ok(all)
}
