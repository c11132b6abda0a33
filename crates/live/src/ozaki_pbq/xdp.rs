//! The XDP program (`bpf/pbq_xdp.bpf.c`) from user space: load it through its libbpf-rs
//! skeleton, attach it to an interface, write its control block and port → level table, read its
//! per-level counters, and run it on a packet with `BPF_PROG_TEST_RUN`; and its bind()/close()
//! hooks (`cgroup/post_bind4`, `cgroup/post_bind6`, `cgroup/sock_release`, in the same object
//! so that they write the port → level map the XDP program reads): attach them to a cgroup,
//! read and refresh what they recorded (see `hooks.rs`).

use crate::bpf::Unsupported;
use libbpf_rs::libbpf_sys;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

#[allow(clippy::all, dead_code, unused_imports, non_camel_case_types)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/pbq_xdp.skel.rs"));
}
use skel::{PbqXdpSkel, PbqXdpSkelBuilder};

/// Priority levels, 0..=39 = 19 − nice (`PBQ_LEVELS` in pbq.h; `pbq::LEVELS` in the model).
pub const LEVELS: usize = 40;

/// XDP verdicts (`enum xdp_action`).
pub const XDP_DROP: u32 = 1;
pub const XDP_PASS: u32 = 2;

/// Level of a nice value: 19 − nice, as `level_of_nice` in crates/host/src/types.rs.
pub fn level_of_nice(nice: i32) -> u8 {
    (19 - nice.clamp(-20, 19)) as u8
}

/// The control block the agent writes (`struct pbq_ctl` in pbq.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ctl {
    /// Off: the program only counts (the baseline runs use the same data path).
    pub enabled: bool,
    pub high_load: bool,
    /// Under high load, levels below this are dropped beyond their minimum share.
    pub shed_below: u8,
    /// Packets per window the top level keeps; level l keeps `min_share_top·(l+1)/40`.
    pub min_share_top: u32,
    pub window_ns: u64,
}

impl Default for Ctl {
    fn default() -> Ctl {
        Ctl { enabled: false, high_load: false, shed_below: 0, min_share_top: 400, window_ns: 10_000_000 }
    }
}

/// Counters of one level (or of the "no port" slot), summed over CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelStats {
    pub rx: u64,
    pub drop: u64,
    pub share_pass: u64,
}

crate::named_values! {
    /// How the program is attached to a device: the driver's own XDP (`native`, XDP_FLAGS_DRV_MODE),
    /// the kernel's generic XDP after the skb is built (`generic`, XDP_FLAGS_SKB_MODE), or whichever
    /// the kernel picks (`Auto`: native where the driver has `ndo_bpf`, as `dev_xdp_mode()` in
    /// net/core/dev.c, Linux 6.x).
    pub enum XdpMode {
        /// Native where the driver supports it.
        Auto = "auto",
        /// The driver's own XDP.
        Native = "native",
        /// After the skb is built.
        Generic = "generic",
    }
}

impl XdpMode {
    fn flags(self) -> u32 {
        match self {
            XdpMode::Auto => 0,
            XdpMode::Native => libbpf_sys::XDP_FLAGS_DRV_MODE,
            XdpMode::Generic => libbpf_sys::XDP_FLAGS_SKB_MODE,
        }
    }
}

/// The loaded program with its maps, and the links that attach it (XDP on devices by ifindex;
/// the hooks on a cgroup).
pub struct PbqXdp {
    skel: PbqXdpSkel<'static>,
    links: Vec<(u32, OwnedFd)>,
    hook_links: Vec<(&'static str, Link)>,
}

/// The hook programs, by section name (for messages and the ledger).
pub const HOOKS: [&str; 3] = ["cgroup/post_bind4", "cgroup/post_bind6", "cgroup/sock_release"];

impl PbqXdp {
    /// Load (verify) the XDP program only. Fails with `Unsupported` when the kernel refuses BPF
    /// here (no CAP_BPF/root, no BPF syscall, the verifier rejects the program).
    pub fn load() -> Result<PbqXdp, Unsupported> {
        PbqXdp::load_with(false)
    }

    /// Load the XDP program and, with `hooks`, the bind()/close() hooks too (the kernel may
    /// refuse those alone: then nothing is loaded and the error says which).
    pub fn load_with(hooks: bool) -> Result<PbqXdp, Unsupported> {
        // The skeleton borrows its `OpenObject` for its whole life. We give it one that lives
        // as long as the process: a few bytes per load, and this crate loads once per run.
        let obj: &'static mut MaybeUninit<libbpf_rs::OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open =
            PbqXdpSkelBuilder::default().open(obj).map_err(|e| Unsupported(format!("opening the XDP object: {e}")))?;
        if !hooks {
            open.progs.pbq_post_bind4.set_autoload(false);
            open.progs.pbq_post_bind6.set_autoload(false);
            open.progs.pbq_sock_release.set_autoload(false);
        }
        let what = if hooks { "the XDP program and its cgroup bind/release hooks" } else { "the XDP program" };
        let skel = open.load().map_err(|e| Unsupported(format!("loading {what} (needs root and BPF): {e}")))?;
        let mut x = PbqXdp { skel, links: Vec::new(), hook_links: Vec::new() };
        x.set_ctl(Ctl::default());
        Ok(x)
    }

    /// Attach to interface `ifindex` of the calling thread's network namespace (a bpf_link:
    /// it detaches when dropped or when this process dies), in the mode the kernel picks.
    pub fn attach(&mut self, ifindex: u32) -> Result<(), Unsupported> {
        self.attach_mode(ifindex, XdpMode::Auto)
    }

    /// [`PbqXdp::attach`] in mode `mode` (BPF_LINK_CREATE with its XDP flags; the kernel
    /// refuses a device that already has a program with EBUSY, and native mode on a driver
    /// without XDP with EOPNOTSUPP).
    pub fn attach_mode(&mut self, ifindex: u32, mode: XdpMode) -> Result<(), Unsupported> {
        let prog_fd = self.skel.progs.pbq_xdp.as_fd().as_raw_fd();
        // SAFETY: plain data; sz declares the size libbpf may read.
        let mut o: libbpf_sys::bpf_link_create_opts = unsafe { std::mem::zeroed() };
        o.sz = std::mem::size_of::<libbpf_sys::bpf_link_create_opts>() as _;
        o.flags = mode.flags();
        // SAFETY: a loaded program's descriptor and a valid options struct.
        let fd = unsafe { libbpf_sys::bpf_link_create(prog_fd, ifindex as i32, libbpf_sys::BPF_XDP, &o) };
        if fd < 0 {
            let e = std::io::Error::from_raw_os_error(-fd);
            return Err(Unsupported(format!("attaching XDP ({mode:?} mode) to ifindex {ifindex}: {e}")));
        }
        // SAFETY: a descriptor just returned by the kernel, owned by nobody else.
        self.links.push((ifindex, unsafe { OwnedFd::from_raw_fd(fd) }));
        Ok(())
    }

    /// Attach the bind()/close() hooks to the cgroup2 group whose directory is open as
    /// `cgroup` (bpf_links: detached when dropped or when this process dies). Needs
    /// [`PbqXdp::load_with`]`(true)`.
    pub fn attach_hooks(&mut self, cgroup: &std::fs::File) -> Result<(), Unsupported> {
        let fd = cgroup.as_raw_fd();
        let progs =
            [&self.skel.progs.pbq_post_bind4, &self.skel.progs.pbq_post_bind6, &self.skel.progs.pbq_sock_release];
        for (name, p) in HOOKS.into_iter().zip(progs) {
            let link = p.attach_cgroup(fd).map_err(|e| Unsupported(format!("attaching {name} to the cgroup: {e}")))?;
            self.hook_links.push((name, link));
        }
        Ok(())
    }

    /// The hooks' attachments: (section name, program id, bpf_link id).
    pub fn hook_links(&self) -> Vec<(&'static str, u32, u32)> {
        let progs =
            [&self.skel.progs.pbq_post_bind4, &self.skel.progs.pbq_post_bind6, &self.skel.progs.pbq_sock_release];
        self.hook_links
            .iter()
            .filter_map(|(name, l)| {
                let p = progs[HOOKS.iter().position(|h| h == name)?];
                Some((*name, libbpf_rs::Program::id_from_fd(p.as_fd()).ok()?, l.info().ok()?.id))
            })
            .collect()
    }

    /// The kernel's id of the loaded program.
    pub fn prog_id(&self) -> Option<u32> {
        libbpf_rs::Program::id_from_fd(self.skel.progs.pbq_xdp.as_fd()).ok()
    }

    /// The attachments: (ifindex, bpf_link id).
    pub fn links(&self) -> Vec<(u32, Option<u32>)> {
        self.links
            .iter()
            .map(|(i, l)| (*i, libbpf_rs::query::LinkInfo::from_fd(l.as_fd()).ok().map(|x| x.id)))
            .collect()
    }

    /// Detach from every interface and cgroup.
    pub fn detach_all(&mut self) {
        self.links.clear();
        self.hook_links.clear();
    }

    /// Only binds in the network namespace of this cookie are recorded (0: every bind in the
    /// group). See [`crate::bpf::netns_cookie`].
    pub fn set_hook_netns(&mut self, cookie: u64) {
        let bss = self.skel.maps.bss_data.as_deref_mut().expect("the program has a .bss");
        // SAFETY: the mmapped .bss, valid while the skeleton lives.
        unsafe { std::ptr::write_volatile(&mut bss.hook_netns, cookie) };
    }

    /// The hooks' counters: (binds recorded, binds in another namespace, releases, table full).
    pub fn hook_stats(&self) -> HookStats {
        let bss = self.skel.maps.bss_data.as_deref().expect("the program has a .bss");
        // SAFETY: as in set_ctl.
        let v = unsafe { std::ptr::read_volatile(&bss.hook_stats) };
        HookStats { binds: v.binds, other_netns: v.other_netns, releases: v.releases, full: v.full }
    }

    /// The sockets the bind hook recorded and the release hook has not yet forgotten.
    pub fn bound(&self) -> Vec<Bound> {
        let m = &self.skel.maps.bound;
        m.keys()
            .filter_map(|k| {
                let v = m.lookup(&k, MapFlags::ANY).ok().flatten()?;
                Some(Bound::parse(u64::from_ne_bytes(k.as_slice().try_into().ok()?), &v))
            })
            .flatten()
            .collect()
    }

    /// Change a recorded socket's level (a renice seen by the rescan); nothing if the socket
    /// was released meanwhile.
    pub fn set_bound_level(&self, b: &Bound, level: u8) {
        let mut v = b.bytes();
        v[BOUND_LEVEL] = level;
        let _ = self.skel.maps.bound.update(&b.cookie.to_ne_bytes(), &v, MapFlags::EXIST);
    }

    pub fn set_ctl(&mut self, c: Ctl) {
        let bss = self.skel.maps.bss_data.as_deref_mut().expect("the program has a .bss (ctl)");
        let v = skel::types::pbq_ctl {
            enabled: u32::from(c.enabled),
            high_load: u32::from(c.high_load),
            shed_below: u32::from(c.shed_below),
            min_share_top: c.min_share_top,
            window_ns: c.window_ns,
        };
        // The program reads `ctl` as volatile on every packet; a torn update between fields is
        // harmless (each field is valid on its own).
        // SAFETY: the pointer is the mmapped .bss, valid while the skeleton lives.
        unsafe { std::ptr::write_volatile(&mut bss.ctl, v) };
    }

    pub fn ctl(&self) -> Ctl {
        let bss = self.skel.maps.bss_data.as_deref().expect("the program has a .bss (ctl)");
        // SAFETY: as in set_ctl.
        let v = unsafe { std::ptr::read_volatile(&bss.ctl) };
        Ctl {
            enabled: v.enabled != 0,
            high_load: v.high_load != 0,
            shed_below: v.shed_below as u8,
            min_share_top: v.min_share_top,
            window_ns: v.window_ns,
        }
    }

    pub fn set_port_level(&self, port: u16, level: u8) -> Result<(), String> {
        self.skel
            .maps
            .port_level
            .update(&u32::from(port).to_ne_bytes(), &[level], MapFlags::ANY)
            .map_err(|e| format!("port_level[{port}] = {level}: {e}"))
    }

    pub fn port_level(&self, port: u16) -> u8 {
        self.skel
            .maps
            .port_level
            .lookup(&u32::from(port).to_ne_bytes(), MapFlags::ANY)
            .ok()
            .flatten()
            .map_or(0, |v| v[0])
    }

    /// Per-level counters (index `LEVELS` = packets without a port), summed over CPUs.
    pub fn stats(&self) -> Vec<LevelStats> {
        (0..=LEVELS as u32)
            .map(|l| {
                let per_cpu = self.skel.maps.level_stats.lookup_percpu(&l.to_ne_bytes(), MapFlags::ANY).ok().flatten();
                let mut s = LevelStats::default();
                for v in per_cpu.unwrap_or_default() {
                    let g = |i: usize| u64::from_ne_bytes(v[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
                    s.rx += g(0);
                    s.drop += g(1);
                    s.share_pass += g(2);
                }
                s
            })
            .collect()
    }

    /// Run the program once on `frame` (an Ethernet frame) with `BPF_PROG_TEST_RUN`; returns
    /// the verdict and the kernel's mean run time over `repeat` runs.
    pub fn test_run(&self, frame: &[u8], repeat: u32) -> Result<(u32, std::time::Duration), String> {
        let input = libbpf_rs::ProgramInput { data_in: Some(frame), repeat, ..Default::default() };
        let out = self.skel.progs.pbq_xdp.test_run(input).map_err(|e| format!("BPF_PROG_TEST_RUN: {e}"))?;
        Ok((out.return_value, out.duration))
    }
}

/// The hooks' counters (`struct pbq_hook_stats` in pbq.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HookStats {
    pub binds: u64,
    pub other_netns: u64,
    pub releases: u64,
    pub full: u64,
}

/// One socket the bind hook recorded (`struct pbq_bound` in pbq.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    pub cookie: u64,
    /// The binder's thread-group leader's `start_boottime`, ns.
    pub leader_start_ns: u64,
    pub tgid: u32,
    pub tid: u32,
    pub port: u16,
    /// IPPROTO_UDP (17) or IPPROTO_TCP (6).
    pub protocol: u8,
    pub level: u8,
}

/// `struct pbq_bound`'s layout: u64, u32, u32, u16, u8, u8 (24 bytes with its padding).
const BOUND_SIZE: usize = 24;
const BOUND_LEVEL: usize = 19;

impl Bound {
    fn parse(cookie: u64, v: &[u8]) -> Option<Bound> {
        if v.len() < BOUND_SIZE {
            return None;
        }
        let u32_at = |i: usize| u32::from_ne_bytes(v[i..i + 4].try_into().expect("4 bytes"));
        Some(Bound {
            cookie,
            leader_start_ns: u64::from_ne_bytes(v[0..8].try_into().expect("8 bytes")),
            tgid: u32_at(8),
            tid: u32_at(12),
            port: u16::from_ne_bytes([v[16], v[17]]),
            protocol: v[18],
            level: v[BOUND_LEVEL],
        })
    }

    fn bytes(&self) -> [u8; BOUND_SIZE] {
        let mut v = [0u8; BOUND_SIZE];
        v[0..8].copy_from_slice(&self.leader_start_ns.to_ne_bytes());
        v[8..12].copy_from_slice(&self.tgid.to_ne_bytes());
        v[12..16].copy_from_slice(&self.tid.to_ne_bytes());
        v[16..18].copy_from_slice(&self.port.to_ne_bytes());
        v[18] = self.protocol;
        v[BOUND_LEVEL] = self.level;
        v
    }
}

/// An Ethernet + IPv4 + UDP frame to `dst_port` with `payload` bytes (for tests and cost runs).
pub fn udp_frame(dst_port: u16, payload: usize) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 8 + payload];
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((20 + 8 + payload) as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17; // UDP
    ip[12..16].copy_from_slice(&[198, 18, 1, 2]);
    ip[16..20].copy_from_slice(&[198, 18, 1, 1]);
    let udp = &mut f[34..42];
    udp[0..2].copy_from_slice(&40000u16.to_be_bytes());
    udp[2..4].copy_from_slice(&dst_port.to_be_bytes());
    udp[4..6].copy_from_slice(&((8 + payload) as u16).to_be_bytes());
    f
}
