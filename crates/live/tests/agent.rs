//! The agent maps a port to the nice value of the process that holds it (no root needed: it
//! reads /proc in this process's own network namespace).

use hostsim_live::ozaki_pbq::agent::{netns_inode, scan_ports};
use hostsim_live::ozaki_pbq::xdp::level_of_nice;
use std::fs::File;

/// Fork a child that binds a UDP socket on 127.0.0.1, sets its nice value, reports the port
/// through a pipe and waits to be killed. Only system calls run in the child.
fn child_with_socket(nice: i32) -> (libc::pid_t, u16) {
    let mut fds = [0; 2];
    // SAFETY: plain system calls; the child calls only async-signal-safe functions.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        let pid = libc::fork();
        assert!(pid >= 0);
        if pid == 0 {
            let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
            let mut a: libc::sockaddr_in = std::mem::zeroed();
            a.sin_family = libc::AF_INET as libc::sa_family_t;
            a.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            libc::bind(s, &a as *const _ as *const libc::sockaddr, len);
            let mut l = len;
            libc::getsockname(s, &mut a as *mut _ as *mut libc::sockaddr, &mut l);
            libc::setpriority(libc::PRIO_PROCESS, 0, nice);
            let port = u16::from_be(a.sin_port).to_ne_bytes();
            libc::write(fds[1], port.as_ptr().cast(), 2);
            loop {
                libc::pause();
            }
        }
        let mut port = [0u8; 2];
        assert_eq!(libc::read(fds[0], port.as_mut_ptr().cast(), 2), 2);
        libc::close(fds[0]);
        libc::close(fds[1]);
        (pid, u16::from_ne_bytes(port))
    }
}

fn kill(pid: libc::pid_t) {
    // SAFETY: our own child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
}

#[test]
fn a_port_maps_to_the_nice_value_of_its_owner() {
    // One live test at a time on this machine (hostsim_live::testing).
    let _machine = hostsim_live::testing::exclusive();
    let ino = netns_inode(&File::open("/proc/self/ns/net").unwrap()).unwrap();
    let (a, pa) = child_with_socket(7);
    let (b, pb) = child_with_socket(13);
    let found = scan_ports(ino);
    kill(a);
    kill(b);
    let found = found.unwrap();
    let oa = found.get(&pa).unwrap_or_else(|| panic!("port {pa} not found in {found:?}"));
    assert_eq!((oa.nice, oa.level, oa.pids.clone()), (7, level_of_nice(7), vec![a as u32]));
    let ob = &found[&pb];
    assert_eq!((ob.nice, ob.level), (13, level_of_nice(13)));
    // Once the owner is gone, so is the entry.
    let again = scan_ports(ino).unwrap();
    assert!(!again.contains_key(&pa), "a closed port leaves the table");
}
