//! The network namespaces and veth pairs a live run creates, and their removal.
//!
//! Everything the tool creates carries the run's name, `hsl-<pid>-<n>-<role>` (`hsl-` = hostsim
//! live; `<pid>` = the creating process; `<n>` counts topologies within it). Dropping a
//! [`Topology`] deletes its namespaces; deleting a namespace destroys its veth ends (and their
//! peers), the RPS masks set on them and any XDP program attached to them. A run killed with
//! SIGKILL cannot drop anything: [`clean_stale`], called at the start of every run, deletes
//! namespaces whose `<pid>` is no longer alive. Test traffic only ever flows between these
//! namespaces; the addresses are from 198.18.0.0/15, the block RFC 2544 reserves for benchmarks.

use std::fs::File;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Every name the live side creates starts with this.
pub const PREFIX: &str = "hsl-";

/// Run `ip ARGS`, turning a failure into its stderr.
pub fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("running `ip`: {e} (install iproute2)"))?;
    if !out.status.success() {
        return Err(format!("`ip {}`: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

/// Namespace names (`ip netns list`), ours or not.
pub fn list_netns() -> Vec<String> {
    let Ok(rd) = std::fs::read_dir("/run/netns") else { return Vec::new() };
    let mut v: Vec<String> = rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
    v.sort();
    v
}

/// The namespaces created by process `pid`.
pub fn netns_of(pid: u32) -> Vec<String> {
    let p = format!("{PREFIX}{pid}-");
    list_netns().into_iter().filter(|n| n.starts_with(&p)).collect()
}

/// Links in the root namespace whose name starts with [`PREFIX`] (the tool creates none there;
/// anything listed is a leak).
pub fn root_links() -> Vec<String> {
    let Ok(rd) = std::fs::read_dir("/sys/class/net") else { return Vec::new() };
    let mut v: Vec<String> = rd
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(PREFIX))
        .collect();
    v.sort();
    v
}

/// Delete namespaces left behind by runs that no longer exist (killed with SIGKILL). Returns
/// what it deleted.
pub fn clean_stale() -> Vec<String> {
    let mut gone = Vec::new();
    for n in list_netns() {
        let Some(rest) = n.strip_prefix(PREFIX) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else { continue };
        if !crate::sys::pid_alive(pid) && ip(&["netns", "del", &n]).is_ok() {
            gone.push(n);
        }
    }
    gone
}

/// One veth pair: `a` in namespace `ns_a`, `b` in `ns_b`, with addresses (CIDR).
#[derive(Clone, Debug)]
pub struct Veth {
    pub ns_a: String,
    pub a: String,
    pub addr_a: String,
    pub ns_b: String,
    pub b: String,
    pub addr_b: String,
}

/// Namespaces and veth pairs, removed on drop.
pub struct Topology {
    pub run: String,
    namespaces: Vec<String>,
}

static SEQ: AtomicU32 = AtomicU32::new(0);

impl Topology {
    /// Create namespaces `roles` (named `<run>-<role>`) with their loopbacks up. Clean up
    /// leftovers of dead runs first.
    pub fn create(roles: &[&str]) -> Result<Topology, String> {
        clean_stale();
        let run = format!("{PREFIX}{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::SeqCst));
        let mut t = Topology { run, namespaces: Vec::new() };
        for r in roles {
            let name = t.ns(r);
            ip(&["netns", "add", &name]).map_err(|e| format!("creating a network namespace: {e}"))?;
            t.namespaces.push(name.clone());
            ip(&["-n", &name, "link", "set", "lo", "up"])?;
        }
        Ok(t)
    }

    /// The full namespace name of a role.
    pub fn ns(&self, role: &str) -> String {
        format!("{}-{role}", self.run)
    }

    pub fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    /// The namespace file to `setns` into.
    pub fn ns_file(&self, role: &str) -> Result<File, String> {
        let p = format!("/run/netns/{}", self.ns(role));
        File::open(&p).map_err(|e| format!("{p}: {e}"))
    }

    /// Create a veth pair straight into its two namespaces, address both ends, bring them up.
    pub fn add_veth(&self, v: &Veth) -> Result<(), String> {
        ip(&["link", "add", &v.a, "netns", &v.ns_a, "type", "veth", "peer", "name", &v.b, "netns", &v.ns_b])
            .map_err(|e| format!("creating a veth pair: {e}"))?;
        for (ns, dev, addr) in [(&v.ns_a, &v.a, &v.addr_a), (&v.ns_b, &v.b, &v.addr_b)] {
            ip(&["-n", ns, "addr", "add", addr, "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        Ok(())
    }

    /// Set a device's RPS mask (`/sys/class/net/DEV/queues/rx-0/rps_cpus`) inside namespace
    /// `ns`. `/sys` shows the namespace that mounted it, so this goes through `ip netns exec`,
    /// which mounts the namespace's own sysfs in a private mount namespace. The mask lives on our
    /// device and disappears with it.
    pub fn set_rps(&self, ns: &str, dev: &str, mask: u64) -> Result<(), String> {
        let path = format!("/sys/class/net/{dev}/queues/rx-0/rps_cpus");
        let out = Command::new("ip")
            .args(["netns", "exec", ns, "sh", "-c", &format!("echo {mask:x} > {path}")])
            .output()
            .map_err(|e| format!("running `ip netns exec`: {e}"))?;
        if !out.status.success() {
            return Err(format!("setting {path} in {ns}: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(())
    }

    /// Delete everything now (also done on drop). Returns the first error.
    pub fn destroy(&mut self) -> Result<(), String> {
        let mut first = Ok(());
        for n in self.namespaces.drain(..).rev() {
            if let Err(e) = ip(&["netns", "del", &n]) {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        if let Err(e) = self.destroy() {
            eprintln!("hostsim live: clean-up: {e}");
        }
    }
}
