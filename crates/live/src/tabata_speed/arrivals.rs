//! tabata-speed's receiver clock from user space: load `bpf/arrivals_tc.bpf.c`, attach it
//! at the sink veth's tcx ingress (a bpf_link: it detaches when its descriptor closes, so a
//! killed run leaves nothing attached), and read the frames it recorded from its ring buffer.

use crate::bpf::Unsupported;
use libbpf_rs::libbpf_sys;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use std::fs::File;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

#[allow(clippy::all, dead_code, unused_imports, non_camel_case_types)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/arrivals_tc.skel.rs"));
}
use skel::{ArrivalsTcSkel, ArrivalsTcSkelBuilder};

/// One frame as the program saw it (`struct arrival` in arrivals.h).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Arrival {
    /// CLOCK_MONOTONIC, ns.
    pub ts_ns: u64,
    pub seq: u32,
    /// The Ethernet frame without FCS.
    pub len: u16,
    pub payload: u16,
}

impl Arrival {
    /// From a ring-buffer record (the layout of `struct arrival`: u64, u32, u16, u16).
    pub fn parse(b: &[u8]) -> Option<Arrival> {
        if b.len() < 16 {
            return None;
        }
        Some(Arrival {
            ts_ns: u64::from_ne_bytes(b[0..8].try_into().ok()?),
            seq: u32::from_ne_bytes(b[8..12].try_into().ok()?),
            len: u16::from_ne_bytes(b[12..14].try_into().ok()?),
            payload: u16::from_ne_bytes(b[14..16].try_into().ok()?),
        })
    }
}

/// The loaded program and, once attached, its tcx link.
pub struct Recorder {
    skel: ArrivalsTcSkel<'static>,
    link: Option<OwnedFd>,
}

impl Recorder {
    /// Load (verify) the program, recording TCP frames to `port`.
    pub fn load(port: u16) -> Result<Recorder, Unsupported> {
        // As in xdp.rs: the skeleton borrows its OpenObject for its life; one small leak per run.
        let obj: &'static mut MaybeUninit<libbpf_rs::OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
        let open = ArrivalsTcSkelBuilder::default()
            .open(obj)
            .map_err(|e| Unsupported(format!("opening the tc object: {e}")))?;
        let mut skel =
            open.load().map_err(|e| Unsupported(format!("loading the tc program (needs root and BPF): {e}")))?;
        let bss = skel.maps.bss_data.as_deref_mut().expect("the program has a .bss (ctl)");
        bss.ctl.port = u32::from(port);
        Ok(Recorder { skel, link: None })
    }

    /// Attach at the tcx ingress of interface `dev` in the network namespace `ns` (from a
    /// short-lived thread that enters it: a link's ifindex is looked up in the caller's
    /// namespace). Returns (program id, link id).
    pub fn attach(&mut self, ns: &File, dev: &str) -> Result<(u32, u32), Unsupported> {
        let prog_fd = self.skel.progs.arrivals_tc.as_fd().as_raw_fd();
        let (ns_fd, dev) = (ns.try_clone().map_err(|e| Unsupported(e.to_string()))?, dev.to_string());
        let fd = std::thread::scope(|s| {
            s.spawn(move || -> Result<OwnedFd, String> {
                crate::sys::enter_netns(&ns_fd).map_err(|e| e.to_string())?;
                let ifindex = crate::sys::ifindex(&dev).map_err(|e| e.to_string())?;
                // SAFETY: plain BPF syscall wrapper (BPF_LINK_CREATE, attach type BPF_TCX_INGRESS:
                // Linux 6.6+, kernel/bpf/tcx.c tcx_link_attach).
                let r = unsafe {
                    libbpf_sys::bpf_link_create(prog_fd, ifindex as i32, libbpf_sys::BPF_TCX_INGRESS, std::ptr::null())
                };
                if r < 0 {
                    return Err(format!("tcx ingress link on {dev}: {}", std::io::Error::from_raw_os_error(-r)));
                }
                // SAFETY: a descriptor the kernel just returned, owned by nobody else.
                Ok(unsafe { OwnedFd::from_raw_fd(r) })
            })
            .join()
            .map_err(|_| "the attaching thread panicked".to_string())?
        })
        .map_err(Unsupported)?;
        let link_id =
            libbpf_rs::query::LinkInfo::from_fd(fd.as_fd()).map(|i| i.id).map_err(|e| Unsupported(e.to_string()))?;
        let prog_id = libbpf_rs::Program::id_from_fd(self.skel.progs.arrivals_tc.as_fd())
            .map_err(|e| Unsupported(e.to_string()))?;
        self.link = Some(fd);
        Ok((prog_id, link_id))
    }

    /// Detach (close the link).
    pub fn detach(&mut self) {
        self.link = None;
    }

    /// Frames the ring buffer had no room for, since load.
    pub fn lost(&self) -> u64 {
        let bss = self.skel.maps.bss_data.as_deref().expect("the program has a .bss");
        // SAFETY: the mmapped .bss, valid while the skeleton lives; the program adds atomically.
        unsafe { std::ptr::read_volatile(&bss.lost) }
    }

    /// Every record waiting in the ring buffer, in the order the program wrote them.
    pub fn drain(&self) -> Result<Vec<Arrival>, String> {
        crate::bpf::drain_ring(&self.skel.maps.arrivals, Arrival::parse)
    }
}
