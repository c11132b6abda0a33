//! `hostsim live`: mechanisms run for real on this machine's kernel (crates/live). Each
//! subcommand is an experiment's options struct, parsed by clap and handed to the live crate as
//! it is (`hostsim_live::command`); this file only names the subcommands and maps outcomes to
//! exit codes.

use clap::Subcommand;
use hostsim_live::harness::LiveError;
use hostsim_live::{goda_rfs, kawai_interval, ozaki_pbq, tabata_speed, takeuchi_symbiose, tcp_worker, worker};
use std::process::ExitCode;

/// The experiments' options are boxed: a large struct each (the fixed parameters ride along).
#[derive(Subcommand)]
pub enum LiveCmd {
    #[command(name = "ozaki-pbq")]
    OzakiPbq(Box<ozaki_pbq::Options>),
    #[command(name = "tabata-speed")]
    TabataSpeed(Box<tabata_speed::Options>),
    #[command(name = "takeuchi-symbiose")]
    TakeuchiSymbiose(Box<takeuchi_symbiose::Options>),
    #[command(name = "goda-wakeups")]
    GodaWakeups(Box<goda_rfs::Options>),
    #[command(name = "kawai-interval")]
    KawaiInterval(Box<kawai_interval::Options>),
    Pbq(Box<ozaki_pbq::tool::Options>),
    /// Undo what runs killed with SIGKILL left behind (their ledgers under /run/hostsim-live),
    /// and name `hsl-*` namespaces and cgroups no ledger records.
    Clean,
}

/// The processes of a live experiment (`hostsim live-worker`, started by the experiment).
#[derive(Subcommand)]
pub enum WorkerCmd {
    Sink(worker::SinkArgs),
    Send(worker::SendArgs),
    TcpSink(tcp_worker::SinkArgs),
    TcpSend(tcp_worker::SendSpec),
    KawaiAccel(kawai_interval::AccelCmd),
    KawaiOrigin(kawai_interval::OriginCmd),
    KawaiClients(kawai_interval::ClientsCmd),
    KawaiSoak(kawai_interval::SoakCmd),
}

/// `hostsim live ...` as an exit code: 0, 1 (failed), 2 (this machine cannot run it: the tests
/// skip on it, saying why), 128 + N (stopped by signal N, everything removed).
pub fn main(cmd: LiveCmd) -> ExitCode {
    let r = match cmd {
        LiveCmd::OzakiPbq(o) => hostsim_live::command::run(o.as_ref()),
        LiveCmd::TabataSpeed(o) => hostsim_live::command::run(o.as_ref()),
        LiveCmd::TakeuchiSymbiose(o) => hostsim_live::command::run(o.as_ref()),
        LiveCmd::GodaWakeups(o) => hostsim_live::command::run(o.as_ref()),
        LiveCmd::KawaiInterval(o) => hostsim_live::command::run(o.as_ref()),
        LiveCmd::Pbq(o) => ozaki_pbq::tool::main(&o),
        LiveCmd::Clean => match clean() {
            Ok(true) => return ExitCode::SUCCESS,
            Ok(false) => return ExitCode::from(1),
            Err(e) => Err(e),
        },
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            hostsim_live::harness::progress(format!("hostsim live: {e}"));
            ExitCode::from(e.exit_code())
        }
    }
}

/// `hostsim live-worker ...`: each worker checks its arguments (finite, in range) before it
/// starts.
pub fn worker(cmd: WorkerCmd) -> std::io::Result<()> {
    match cmd {
        WorkerCmd::Sink(a) => worker::run_sink(&a),
        WorkerCmd::Send(a) => worker::run_sender(&a),
        WorkerCmd::TcpSink(a) => tcp_worker::run_tcp_sink(&a),
        WorkerCmd::TcpSend(a) => tcp_worker::run_tcp_sender(&a),
        WorkerCmd::KawaiAccel(a) => kawai_interval::worker_accel(&a),
        WorkerCmd::KawaiOrigin(a) => kawai_interval::worker_origin(&a),
        WorkerCmd::KawaiClients(a) => kawai_interval::worker_clients(&a),
        WorkerCmd::KawaiSoak(a) => kawai_interval::worker_soak(&a),
    }
}

/// `hostsim live clean`: print what was removed and what could not be; Ok(false) if anything
/// could not.
fn clean() -> Result<bool, LiveError> {
    let (lines, all) = hostsim_live::harness::clean()?;
    for l in lines {
        crate::outln!("{l}");
    }
    Ok(all)
}
