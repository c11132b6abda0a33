//! The XDP program (`src/bpf/pbq_xdp.bpf.c`) from user space: load it through its libbpf-rs
//! skeleton, attach it to an interface, write its control block and port → level table, read its
//! per-level counters, and run it on a packet with `BPF_PROG_TEST_RUN`.

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags};
use std::mem::MaybeUninit;

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

/// Why the live side cannot run here.
#[derive(Debug)]
pub struct Unsupported(pub String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The loaded program with its maps, and the links that attach it.
pub struct PbqXdp {
    skel: PbqXdpSkel<'static>,
    links: Vec<(u32, Link)>,
}

impl PbqXdp {
    /// Load (verify) the program. Fails with `Unsupported` when the kernel refuses BPF here
    /// (no CAP_BPF/root, no BPF syscall, the verifier rejects the program).
    pub fn load() -> Result<PbqXdp, Unsupported> {
        // The skeleton borrows its `OpenObject` for its whole life. We give it one that lives
        // as long as the process: a few bytes per load, and this crate loads once per run.
        let obj: &'static mut MaybeUninit<libbpf_rs::OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
        let open = PbqXdpSkelBuilder::default()
            .open(obj)
            .map_err(|e| Unsupported(format!("opening the XDP object: {e}")))?;
        let skel = open.load().map_err(|e| Unsupported(format!("loading the XDP program (needs root and BPF): {e}")))?;
        let mut x = PbqXdp { skel, links: Vec::new() };
        x.set_ctl(Ctl::default());
        Ok(x)
    }

    /// Attach to interface `ifindex` of the calling thread's network namespace (a bpf_link:
    /// it detaches when dropped or when this process dies).
    pub fn attach(&mut self, ifindex: u32) -> Result<(), Unsupported> {
        let link = self
            .skel
            .progs
            .pbq_xdp
            .attach_xdp(ifindex as i32)
            .map_err(|e| Unsupported(format!("attaching XDP to ifindex {ifindex}: {e}")))?;
        self.links.push((ifindex, link));
        Ok(())
    }

    /// The kernel's id of the loaded program.
    pub fn prog_id(&self) -> Option<u32> {
        use std::os::fd::AsFd;
        libbpf_rs::Program::id_from_fd(self.skel.progs.pbq_xdp.as_fd()).ok()
    }

    /// The attachments: (ifindex, bpf_link id).
    pub fn links(&self) -> Vec<(u32, Option<u32>)> {
        self.links.iter().map(|(i, l)| (*i, l.info().ok().map(|x| x.id))).collect()
    }

    /// Detach from every interface.
    pub fn detach_all(&mut self) {
        self.links.clear();
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
