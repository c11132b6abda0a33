//! Configuration of a host run. Every field has a unit in its name and a default that matches the
//! Linux behaviour it models. These types derive `Deserialize` so the scenario crate can read them,
//! but nothing here knows about files.
//!
//! Each table's keys are declared once (`hostsim_options::options`: type, default, bound,
//! documentation, how a fuzzer generates one); the scenario's bounds, the fuzzer's keys and the
//! docs' key reference are read from the declarations. A mechanism's keys are declared in its
//! folder; here they are kept unread (`KernelConfig::mechanisms`, `ProcessConfig::mechanisms`).
//!
//! - `profile`: a machine's topology and costs (`profiles/*.toml`);
//! - `kernel`: `[kernel]`; `nic`: `[[nic]]`; `process`: `[[process]]`; `traffic`: `[[traffic]]`
//!   and `[[route]]`.

mod kernel;
mod nic;
mod policy;
mod process;
mod profile;
mod traffic;

pub use kernel::*;
pub use nic::*;
pub use policy::*;
pub use process::*;
pub use profile::*;
pub use traffic::*;

/// Everything a run needs.
#[derive(Clone, Debug, PartialEq)]
pub struct HostConfig {
    pub profile: Profile,
    pub kernel: KernelConfig,
    pub nics: Vec<NicConfig>,
    pub processes: Vec<ProcessConfig>,
    pub traffic: Vec<TrafficConfig>,
    /// IP forwarding routes (`[[route]]`).
    pub routes: Vec<RouteConfig>,
    pub duration_ns: u64,
    /// Rates and latencies are measured after this.
    pub warmup_ns: u64,
    pub seed: u64,
    pub sample_interval_ns: u64,
}

impl HostConfig {
    /// CPUs the kernel runs on: the first `kernel.online_cpus` of the profile's (one for a
    /// uniprocessor kernel), else all of them. Never more than the machine has.
    pub fn online_cpus(&self) -> usize {
        let machine = self.profile.topology.cpus();
        let want = match self.kernel.online_cpus {
            Some(n) => n as usize,
            None if self.kernel.concurrency.is("up") => 1,
            None => machine,
        };
        want.clamp(1, machine.max(1))
    }
}

/// "the profile has N CPUs: 0..=N-1", for messages.
pub fn cpus_text(n: usize) -> String {
    if n == 1 {
        "the profile has 1 CPU: 0".to_string()
    } else {
        format!("the profile has {n} CPUs: 0..={}", n - 1)
    }
}

/// The CPUs that exist for a run, for messages: all the profile's, or the online ones.
pub fn online_text(n: usize, machine: usize) -> String {
    if n == machine {
        return cpus_text(n);
    }
    let which = if n == 1 { "0".to_string() } else { format!("0..={}", n - 1) };
    format!("{n} of the profile's {machine} CPUs are online: {which}")
}

/// A CPU list: every CPU exists (the first `ncpu` of the profile's `machine` are online) and,
/// unless `dups_ok`, appears once (it is a mask).
pub fn check_cpu_list(list: &[u32], ncpu: usize, machine: usize, dups_ok: bool) -> Result<(), String> {
    if let Some(&bad) = list.iter().find(|&&x| x as usize >= ncpu) {
        return Err(format!("CPU {bad} does not exist ({})", online_text(ncpu, machine)));
    }
    let mut seen = std::collections::BTreeSet::new();
    if !dups_ok {
        if let Some(&d) = list.iter().find(|&&x| !seen.insert(x)) {
            return Err(format!("CPU {d} is listed twice (this is a CPU mask: list each CPU once)"));
        }
    }
    Ok(())
}
