//! Network namespaces, veth pairs and values in a namespace's `/sys`, through `ip` (iproute2).
//!
//! Everything a live run creates carries the run's name, `hsl-<pid>-<n>-<role>` (`hsl-` = hostsim
//! live; `<pid>` = the creating process; `<n>` counts runs within it). Creating goes through
//! `LiveRun` (`harness.rs`), which writes each object into the run's ledger first
//! (`ledger.rs`); deleting a namespace destroys its veth ends (and their peers), the RPS masks
//! set on them and any XDP program attached to them. Test traffic only ever flows between these
//! namespaces; the addresses are from 198.18.0.0/15, the block RFC 2544 reserves for benchmarks.

use std::process::Command;

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
    let mut v: Vec<String> =
        rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| n.starts_with(PREFIX)).collect();
    v.sort();
    v
}

/// The text of `path` as namespace `ns` sees it (None: this process's view). `/sys` shows the
/// namespace that mounted it, so inside another namespace this goes through `ip netns exec`,
/// which mounts the namespace's own sysfs in a private mount namespace.
pub fn read_in(ns: Option<&str>, path: &str) -> Result<String, String> {
    let Some(ns) = ns else {
        return std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"));
    };
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "cat", path])
        .output()
        .map_err(|e| format!("running `ip netns exec`: {e}"))?;
    if !out.status.success() {
        return Err(format!("reading {path} in {ns}: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Write `value` to `path` as namespace `ns` sees it (see [`read_in`]).
pub fn write_in(ns: Option<&str>, path: &str, value: &str) -> Result<(), String> {
    let Some(ns) = ns else {
        return std::fs::write(path, value).map_err(|e| format!("{path}: {e}"));
    };
    // The value and the path are arguments, never part of the shell's text.
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "sh", "-c", "printf '%s\\n' \"$1\" > \"$2\"", "sh", value, path])
        .output()
        .map_err(|e| format!("running `ip netns exec`: {e}"))?;
    if !out.status.success() {
        return Err(format!("setting {path} in {ns}: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
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
