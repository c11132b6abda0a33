//! AF_XDP sockets by their system calls (include/uapi/linux/if_xdp.h; the kernel's
//! Documentation/networking/af_xdp.rst; net/xdp/xsk.c, Linux 6.18): a UMEM, the four rings
//! (fill, completion, RX, TX) mapped into this process, bind, and the statistics.
//!
//! Written on the `libc` crate's definitions (structures and constants of if_xdp.h) rather than
//! on `xsk-rs`: that crate wraps libxdp through `libxdp-sys`, which builds the C libxdp (with
//! BPF objects of its own) for what is here a socket, five setsockopts, mmaps and a bind.
//!
//! A ring is a power-of-two array shared with the kernel, a producer and a consumer index
//! (free-running u32). The side that produces writes its entries, then publishes the producer
//! index with a release store; the side that consumes reads the producer with an acquire load,
//! reads the entries, then publishes its consumer index (release): the kernel's own protocol
//! (net/xdp/xsk_queue.h, "the ring is a single-producer single-consumer queue").

use std::io;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};

pub use libc::xdp_desc as Desc;

fn cvt(r: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if r < 0 {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    } else {
        Ok(r)
    }
}

/// The packet buffer area: `frames` chunks of `frame_size` bytes, anonymous memory that the
/// kernel pins when it is registered (XDP_UMEM_REG).
pub struct Umem {
    area: *mut u8,
    len: usize,
    pub frame_size: u32,
    pub frames: u32,
}

// SAFETY: the area is plain memory; who may touch which chunk is decided by the rings'
// ownership protocol (a chunk belongs to exactly one ring, queue or thread at a time).
unsafe impl Send for Umem {}
unsafe impl Sync for Umem {}

impl Umem {
    pub fn new(frames: u32, frame_size: u32) -> io::Result<Umem> {
        let len = frames as usize * frame_size as usize;
        // SAFETY: a fresh anonymous private mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::other(format!("mmap of a {len}-byte UMEM: {}", io::Error::last_os_error())));
        }
        Ok(Umem { area: p.cast(), len, frame_size, frames })
    }

    /// The chunk's base address (UMEM offset) of any address inside it.
    pub fn chunk_of(&self, addr: u64) -> u64 {
        addr - addr % u64::from(self.frame_size)
    }

    /// The bytes `addr..addr + len` of the area.
    ///
    /// # Safety
    /// The caller owns the chunk (took its descriptor from the RX ring and has not given it
    /// back), and no other reference to these bytes is alive.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn frame(&self, addr: u64, len: u32) -> &mut [u8] {
        assert!(addr as usize + len as usize <= self.len, "descriptor outside the UMEM");
        // SAFETY: in bounds (asserted above), and the caller owns these bytes (this fn's contract).
        unsafe { std::slice::from_raw_parts_mut(self.area.add(addr as usize), len as usize) }
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new(); the sockets that registered it are closed first
        // (the owner drops them before the UMEM).
        unsafe { libc::munmap(self.area.cast(), self.len) };
    }
}

/// One mapped ring of entries `T` (u64 addresses for fill/completion, [`Desc`] for RX/TX).
pub struct Ring<T> {
    map: *mut libc::c_void,
    map_len: usize,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    ring: *mut T,
    size: u32,
    _t: PhantomData<T>,
}

// SAFETY: each ring is used by one thread at a time (the socket's owner moves it).
unsafe impl<T> Send for Ring<T> {}

impl<T: Copy> Ring<T> {
    fn map(fd: RawFd, off: &libc::xdp_ring_offset, size: u32, pgoff: u64) -> io::Result<Ring<T>> {
        let map_len = off.desc as usize + size as usize * std::mem::size_of::<T>();
        // SAFETY: mapping a ring the socket has (its size set by setsockopt before).
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                pgoff as libc::off_t,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::other(format!(
                "mmap of an AF_XDP ring (offset {pgoff:#x}): {}",
                io::Error::last_os_error()
            )));
        }
        let b = map.cast::<u8>();
        // SAFETY: the offsets the kernel gave (XDP_MMAP_OFFSETS) lie inside the mapping.
        unsafe {
            Ok(Ring {
                map,
                map_len,
                producer: b.add(off.producer as usize).cast(),
                consumer: b.add(off.consumer as usize).cast(),
                ring: b.add(off.desc as usize).cast(),
                size,
                _t: PhantomData,
            })
        }
    }

    fn prod(&self) -> &AtomicU32 {
        // SAFETY: inside the live mapping.
        unsafe { &*self.producer }
    }

    fn cons(&self) -> &AtomicU32 {
        // SAFETY: inside the live mapping.
        unsafe { &*self.consumer }
    }

    /// Entries produced and not yet consumed.
    pub fn pending(&self) -> u32 {
        self.prod().load(Ordering::Acquire).wrapping_sub(self.cons().load(Ordering::Acquire))
    }

    /// Free slots (a producer ring: its size less what it holds).
    pub fn room(&self) -> usize {
        (self.size - self.pending()) as usize
    }

    /// Producer side (fill, TX): append as many of `items` as there is room for; returns how many.
    pub fn produce(&mut self, items: &[T]) -> usize {
        let prod = self.prod().load(Ordering::Relaxed);
        let cons = self.cons().load(Ordering::Acquire);
        let free = self.size - prod.wrapping_sub(cons);
        let n = items.len().min(free as usize);
        for (i, it) in items[..n].iter().enumerate() {
            let idx = prod.wrapping_add(i as u32) & (self.size - 1);
            // SAFETY: idx < size; the slot is free (between producer and consumer + size).
            unsafe { self.ring.add(idx as usize).write(*it) };
        }
        self.prod().store(prod.wrapping_add(n as u32), Ordering::Release);
        n
    }

    /// Consumer side (RX, completion): move every available entry into `out`; returns how many.
    pub fn consume(&mut self, out: &mut Vec<T>) -> usize {
        let cons = self.cons().load(Ordering::Relaxed);
        let prod = self.prod().load(Ordering::Acquire);
        let n = prod.wrapping_sub(cons);
        out.reserve(n as usize);
        for i in 0..n {
            let idx = cons.wrapping_add(i) & (self.size - 1);
            // SAFETY: idx < size; the kernel published the entry before the producer index.
            out.push(unsafe { self.ring.add(idx as usize).read() });
        }
        self.cons().store(cons.wrapping_add(n), Ordering::Release);
        n as usize
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        // SAFETY: the mapping made in map().
        unsafe { libc::munmap(self.map, self.map_len) };
    }
}

/// Ring sizes (entries, powers of two; 0 = no such ring).
#[derive(Clone, Copy, Debug)]
pub struct RingSizes {
    pub fill: u32,
    pub comp: u32,
    pub rx: u32,
    pub tx: u32,
}

/// An AF_XDP socket bound to one queue of one device, with its mapped rings.
pub struct Xsk {
    pub fd: OwnedFd,
    pub fill: Option<Ring<u64>>,
    pub comp: Option<Ring<u64>>,
    pub rx: Option<Ring<Desc>>,
    pub tx: Option<Ring<Desc>>,
}

fn setsockopt<T>(fd: RawFd, opt: libc::c_int, v: &T, what: &str) -> io::Result<()> {
    // SAFETY: an option of the socket's own level, its value a plain struct or int.
    cvt(
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_XDP,
                opt,
                (v as *const T).cast(),
                std::mem::size_of::<T>() as libc::socklen_t,
            )
        },
        what,
    )
    .map(|_| ())
}

fn getsockopt<T: Copy>(fd: RawFd, opt: libc::c_int, what: &str) -> io::Result<T> {
    let mut v = std::mem::MaybeUninit::<T>::zeroed();
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: the kernel writes at most len bytes into v.
    cvt(unsafe { libc::getsockopt(fd, libc::SOL_XDP, opt, v.as_mut_ptr().cast(), &mut len) }, what)?;
    // SAFETY: zero-initialised plain data, partly or wholly written by the kernel.
    Ok(unsafe { v.assume_init() })
}

impl Xsk {
    /// A socket on queue `queue` of `ifindex` (in the calling thread's network namespace),
    /// in copy mode (XDP_COPY). With `umem`, the socket registers it and owns it; with
    /// `shared`, it shares the UMEM of that socket (XDP_SHARED_UMEM), which on another device
    /// needs fill and completion rings of its own (xsk_bind, "share the umem with another
    /// socket on another qid and/or device").
    pub fn bind(ifindex: u32, queue: u32, umem: &Umem, shared: Option<&Xsk>, sizes: RingSizes) -> io::Result<Xsk> {
        // SAFETY: plain system call.
        let fd = cvt(unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) }, "socket(AF_XDP)")?;
        // SAFETY: a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let raw = fd.as_raw_fd();
        if shared.is_none() {
            let reg = libc::xdp_umem_reg {
                addr: umem.area as u64,
                len: umem.len as u64,
                chunk_size: umem.frame_size,
                headroom: 0,
                flags: 0,
                tx_metadata_len: 0,
            };
            setsockopt(raw, libc::XDP_UMEM_REG, &reg, "XDP_UMEM_REG")?;
        }
        for (opt, n, what) in [
            (libc::XDP_UMEM_FILL_RING, sizes.fill, "XDP_UMEM_FILL_RING"),
            (libc::XDP_UMEM_COMPLETION_RING, sizes.comp, "XDP_UMEM_COMPLETION_RING"),
            (libc::XDP_RX_RING, sizes.rx, "XDP_RX_RING"),
            (libc::XDP_TX_RING, sizes.tx, "XDP_TX_RING"),
        ] {
            if n > 0 {
                setsockopt(raw, opt, &(n as libc::c_int), what)?;
            }
        }
        let off: libc::xdp_mmap_offsets = getsockopt(raw, libc::XDP_MMAP_OFFSETS, "XDP_MMAP_OFFSETS")?;
        let mut x = Xsk { fd, fill: None, comp: None, rx: None, tx: None };
        if sizes.fill > 0 {
            x.fill = Some(Ring::map(raw, &off.fr, sizes.fill, libc::XDP_UMEM_PGOFF_FILL_RING)?);
        }
        if sizes.comp > 0 {
            x.comp = Some(Ring::map(raw, &off.cr, sizes.comp, libc::XDP_UMEM_PGOFF_COMPLETION_RING)?);
        }
        if sizes.rx > 0 {
            x.rx = Some(Ring::map(raw, &off.rx, sizes.rx, libc::XDP_PGOFF_RX_RING as u64)?);
        }
        if sizes.tx > 0 {
            x.tx = Some(Ring::map(raw, &off.tx, sizes.tx, libc::XDP_PGOFF_TX_RING as u64)?);
        }
        // A sharing socket may pass no mode flag: it takes the owner's (xp_assign_dev_shared).
        let (flags, shared_fd) = match shared {
            Some(s) => (libc::XDP_SHARED_UMEM, s.fd.as_raw_fd() as u32),
            None => (libc::XDP_COPY, 0),
        };
        let sa = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: flags,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: shared_fd,
        };
        // SAFETY: a sockaddr_xdp of the right length.
        cvt(
            unsafe {
                libc::bind(
                    raw,
                    (&sa as *const libc::sockaddr_xdp).cast(),
                    std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
                )
            },
            "bind(AF_XDP, XDP_COPY)",
        )?;
        Ok(x)
    }

    /// Tell the kernel to transmit what the TX ring holds (copy mode: xsk_generic_xmit builds
    /// one skb per descriptor, at most a budget of 32 per call, in the caller's context).
    /// Ok(true) when the kernel took the call whole, Ok(false) when it asks to be called again
    /// (EAGAIN: budget spent, completion ring full or the device busy; EBUSY: a frame dropped
    /// by the device, its buffer still completed).
    pub fn kick(&self) -> io::Result<bool> {
        // SAFETY: sendto with no data, the AF_XDP transmit doorbell.
        let r =
            unsafe { libc::sendto(self.fd.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT, std::ptr::null(), 0) };
        if r >= 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS) => Ok(false),
            _ => Err(io::Error::new(e.kind(), format!("sendto(AF_XDP): {e}"))),
        }
    }

    /// The socket's drop counters (XDP_STATISTICS).
    pub fn statistics(&self) -> io::Result<libc::xdp_statistics> {
        getsockopt(self.fd.as_raw_fd(), libc::XDP_STATISTICS, "XDP_STATISTICS")
    }
}
