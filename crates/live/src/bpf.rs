//! What every BPF loader of the crate shares: the error that says this machine cannot run a
//! program (the caller maps it to `LiveError::Unsupported`, exit 2), which XDP program a device
//! already has, and the network namespace's cookie (as `bpf_get_netns_cookie()` gives it).

use libbpf_rs::libbpf_sys;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Why the live side cannot run here.
#[derive(Debug)]
pub struct Unsupported(pub String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The XDP program attached to interface `ifindex` of the calling thread's network namespace,
/// if any: (program id, mode: `native`, `generic`, `offloaded` or `several`).
pub fn xdp_attached(ifindex: u32) -> std::io::Result<Option<(u32, &'static str)>> {
    // SAFETY: plain data, filled by libbpf.
    let mut o: libbpf_sys::bpf_xdp_query_opts = unsafe { std::mem::zeroed() };
    o.sz = std::mem::size_of::<libbpf_sys::bpf_xdp_query_opts>() as _;
    // SAFETY: a valid options struct of its declared size.
    let r = unsafe { libbpf_sys::bpf_xdp_query(ifindex as i32, 0, &mut o) };
    if r < 0 {
        return Err(std::io::Error::from_raw_os_error(-r));
    }
    let mode = match u32::from(o.attach_mode) {
        0 => return Ok(None),
        libbpf_sys::XDP_ATTACHED_DRV => "native",
        libbpf_sys::XDP_ATTACHED_SKB => "generic",
        libbpf_sys::XDP_ATTACHED_HW => "offloaded",
        _ => "several",
    };
    let id = [o.prog_id, o.drv_prog_id, o.skb_prog_id, o.hw_prog_id].into_iter().find(|&i| i != 0).unwrap_or(0);
    Ok(Some((id, mode)))
}

/// The cookie of the calling thread's network namespace (`SO_NETNS_COOKIE`, Linux 5.14+), as
/// `bpf_get_netns_cookie()` returns it to the hooks.
pub fn netns_cookie() -> std::io::Result<u64> {
    const SO_NETNS_COOKIE: libc::c_int = 71; // include/uapi/asm-generic/socket.h
                                             // SAFETY: a socket we own, closed below; getsockopt fills a u64.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let s = OwnedFd::from_raw_fd(s);
        let mut c = 0u64;
        let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
        if libc::getsockopt(s.as_raw_fd(), libc::SOL_SOCKET, SO_NETNS_COOKIE, (&mut c as *mut u64).cast(), &mut len) < 0
        {
            return Err(std::io::Error::last_os_error());
        }
        Ok(c)
    }
}

/// Every record waiting in ring buffer `map`, parsed by `parse` (a record it refuses is
/// skipped), in the order the programs reserved them: the one reader of the recorders'
/// ring buffers (tabata-speed's arrivals, goda-rfs's wake-ups and trains).
pub fn drain_ring<E: 'static>(
    map: &dyn libbpf_rs::MapCore,
    parse: impl Fn(&[u8]) -> Option<E> + 'static,
) -> Result<Vec<E>, String> {
    let got: std::rc::Rc<std::cell::RefCell<Vec<E>>> = Default::default();
    let sink = std::rc::Rc::clone(&got);
    let mut b = libbpf_rs::RingBufferBuilder::new();
    b.add(map, move |d: &[u8]| {
        if let Some(e) = parse(d) {
            sink.borrow_mut().push(e);
        }
        0
    })
    .map_err(|e| format!("ring buffer: {e}"))?;
    let rb = b.build().map_err(|e| format!("ring buffer: {e}"))?;
    rb.consume().map_err(|e| format!("reading the ring buffer: {e}"))?;
    drop(rb);
    Ok(got.take())
}
