//! The bind hooks (issue 28, item 4) on this kernel: processes in the run's cgroup2 group bind a
//! UDP and a TCP port at two nice values and the port → level map the XDP program reads shows
//! both levels within a bounded time; a renice is seen by the rescan of the holders; a close
//! gives the port back to the lowest level; a bind outside the group is not seen. Needs root,
//! cgroup2 and BPF; elsewhere it writes why to the terminal and skips.

use hostsim_live::harness::{LiveError, LiveRun};
use hostsim_live::ozaki_pbq::hooks::Rescan;
use hostsim_live::ozaki_pbq::xdp::{level_of_nice, PbqXdp};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

fn skip(why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED (live): {why}");
}

/// A forked child: joins the cgroup through `procs` (if any), sets its nice value, binds a UDP
/// socket and a TCP listener on 127.0.0.1 (ports chosen by the kernel), reports both ports
/// through a pipe and waits to be killed. Only system calls run in the child.
fn child(procs: Option<&std::fs::File>, nice: i32) -> (libc::pid_t, u16, u16) {
    let cg = procs.map(|f| f.as_raw_fd());
    let mut fds = [0; 2];
    // SAFETY: plain system calls; the child calls only async-signal-safe functions.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        let pid = libc::fork();
        assert!(pid >= 0);
        if pid == 0 {
            if let Some(fd) = cg {
                if libc::write(fd, b"0".as_ptr().cast(), 1) < 0 {
                    libc::_exit(3);
                }
            }
            libc::setpriority(libc::PRIO_PROCESS, 0, nice);
            let mut ports = [0u16; 2];
            for (i, ty) in [libc::SOCK_DGRAM, libc::SOCK_STREAM].into_iter().enumerate() {
                let s = libc::socket(libc::AF_INET, ty, 0);
                let mut a: libc::sockaddr_in = std::mem::zeroed();
                a.sin_family = libc::AF_INET as libc::sa_family_t;
                a.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
                let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
                if libc::bind(s, &a as *const _ as *const libc::sockaddr, len) < 0 {
                    libc::_exit(4);
                }
                if ty == libc::SOCK_STREAM {
                    libc::listen(s, 4);
                }
                let mut l = len;
                libc::getsockname(s, &mut a as *mut _ as *mut libc::sockaddr, &mut l);
                ports[i] = u16::from_be(a.sin_port);
            }
            let b = [ports[0].to_ne_bytes(), ports[1].to_ne_bytes()].concat();
            libc::write(fds[1], b.as_ptr().cast(), 4);
            loop {
                libc::pause();
            }
        }
        let mut b = [0u8; 4];
        assert_eq!(libc::read(fds[0], b.as_mut_ptr().cast(), 4), 4, "the child could not bind");
        libc::close(fds[0]);
        libc::close(fds[1]);
        (pid, u16::from_ne_bytes([b[0], b[1]]), u16::from_ne_bytes([b[2], b[3]]))
    }
}

fn kill(pid: libc::pid_t) {
    // SAFETY: our own child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
}

/// Wait (≤ 5 s: a loaded machine) until `ok` holds after a rescan pass.
fn until(x: &PbqXdp, r: &mut Rescan, what: &str, ok: impl Fn(&PbqXdp) -> bool) {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        r.pass(x);
        if ok(x) {
            return;
        }
        assert!(Instant::now() < end, "within 5 s: {what}; bound: {:?}", x.bound());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn binds_in_the_group_set_their_ports_level_and_others_do_not() {
    // One live test at a time on this machine (hostsim_live::testing).
    let _machine = hostsim_live::testing::exclusive();
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return skip("needs root (cgroups, BPF)");
    }
    let run = match LiveRun::start_tool("hooks-test") {
        Ok(r) => r,
        Err(e) => return skip(&e.to_string()),
    };
    let group = match run.v2_group("servers", "for the bind hooks") {
        Ok(g) => g,
        Err(LiveError::Unsupported(e)) => return skip(&e),
        Err(e) => panic!("{e}"),
    };
    let mut x = match PbqXdp::load_with(true) {
        Ok(x) => x,
        Err(e) => return skip(&format!("the kernel refused the hooks: {e}")),
    };
    x.attach_hooks(&std::fs::File::open(&group).unwrap()).expect("attach the hooks to the run's group");
    for (what, prog, link) in x.hook_links() {
        run.record_link(what, prog, link).unwrap();
    }
    let procs = std::fs::OpenOptions::new().write(true).open(group.join("cgroup.procs")).unwrap();
    let (hi, hi_udp, hi_tcp) = child(Some(&procs), -5);
    let (lo, lo_udp, lo_tcp) = child(Some(&procs), 12);
    let (out, out_udp, out_tcp) = child(None, -10);
    let mut r = Rescan::default();
    let (lh, ll) = (level_of_nice(-5), level_of_nice(12));
    // The hook writes at bind(): no rescan needed for these, but the test allows one.
    until(&x, &mut r, "both levels in the map", |x| {
        x.port_level(hi_udp) == lh
            && x.port_level(hi_tcp) == lh
            && x.port_level(lo_udp) == ll
            && x.port_level(lo_tcp) == ll
    });
    let owners = r.pass(&x);
    assert_eq!(owners[&hi_udp].pids, vec![hi as u32]);
    assert_eq!(owners[&lo_tcp].nice, 12);
    // Outside the group: not recorded, not in the map.
    assert_eq!((x.port_level(out_udp), x.port_level(out_tcp)), (0, 0), "a bind outside the group reached the map");
    assert!(!x.bound().iter().any(|b| b.tgid == out as u32), "a bind outside the group was recorded");
    // A renice after bind() (of the process's only thread) is seen by the rescan.
    // SAFETY: plain system call on our child.
    assert_eq!(unsafe { libc::setpriority(libc::PRIO_PROCESS, lo as libc::id_t, 3) }, 0);
    until(&x, &mut r, "the renice seen", |x| {
        x.port_level(lo_udp) == level_of_nice(3) && x.port_level(lo_tcp) == level_of_nice(3)
    });
    // Close (the process exits): the release hook gives the ports back to level 0.
    kill(hi);
    until(&x, &mut r, "the closed ports back to level 0", |x| x.port_level(hi_udp) == 0 && x.port_level(hi_tcp) == 0);
    let st = x.hook_stats();
    assert_eq!((st.binds, st.releases), (4, 2), "{st:?}");
    kill(lo);
    kill(out);
    drop(x);
    run.finish(Ok(())).expect("the group and the links are removed");
    assert!(!group.exists(), "the group is left");
}
