//! Thin, checked wrappers around the system calls the live side needs: entering a network
//! namespace, CPU affinity, nice values, process identity. (Stop signals: `signals.rs`.)

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

fn check(r: libc::c_int, what: &str) -> io::Result<()> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(())
}

/// Move the calling *thread* into the network namespace `ns` (a file under /run/netns).
/// Other threads keep theirs; `/proc/thread-self/net/*` then shows `ns`.
pub fn enter_netns(ns: &File) -> io::Result<()> {
    // SAFETY: setns on a valid descriptor only changes this thread's namespace.
    check(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) }, "setns(CLONE_NEWNET)")
}

/// Pin the calling thread (pid 0) or process `pid` to one CPU.
pub fn pin_to_cpu(pid: libc::pid_t, cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        check(libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set), "sched_setaffinity")
    }
}

/// Set the nice value of the calling process (all of `setpriority`'s rules apply: lowering it
/// below the current value needs CAP_SYS_NICE).
pub fn set_nice(nice: i32) -> io::Result<()> {
    // SAFETY: plain system call.
    check(unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) }, "setpriority")
}

/// Ask the kernel to SIGKILL this process when its parent thread dies, so that workers never
/// outlive a killed `hostsim live` (their own time limit bounds them anyway).
pub fn die_with_parent() -> io::Result<()> {
    // SAFETY: plain prctl.
    check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) }, "prctl(PR_SET_PDEATHSIG)")
}

pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

pub fn send_signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill on a pid we spawned; failure (already gone) is fine.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// Is `pid` alive (a process we could signal)?
pub fn pid_alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks existence and permission.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// `if_nametoindex` in the calling thread's network namespace.
pub fn ifindex(name: &str) -> io::Result<u32> {
    let c = std::ffi::CString::new(name).map_err(|_| io::Error::other("interface name has a NUL"))?;
    // SAFETY: valid C string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        return Err(io::Error::new(io::ErrorKind::NotFound, format!("no interface `{name}` in this namespace")));
    }
    Ok(i)
}

/// The CPUs process (or thread) `pid` may run on (0 = the calling thread).
pub fn affinity(pid: libc::pid_t) -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data filled by the kernel.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        check(libc::sched_getaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &mut set), "sched_getaffinity")?;
        Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect())
    }
}

/// Let `pid` (0 = the calling thread) run on `cpus` only.
pub fn set_affinity(pid: libc::pid_t, cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it (cpus beyond the set are skipped).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut set);
        }
        check(libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set), "sched_setaffinity")
    }
}

/// When process `pid` started (clock ticks since boot, `/proc/PID/stat` field 22): with the pid,
/// it names one process for good (a pid alone is reused).
pub fn start_time(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces and parentheses) start at field 3.
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Run `f` with the calling thread in network namespace `ns`, then put it back in the one it
/// was in (for a call that resolves an interface by index, such as attaching XDP).
pub fn in_netns<T>(ns: &File, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let home = File::open("/proc/thread-self/ns/net")?;
    enter_netns(ns)?;
    let r = f();
    enter_netns(&home)
        .map_err(|e| io::Error::new(e.kind(), format!("returning to the original network namespace: {e}")))?;
    r
}

/// Give thread `tid` (0 = the calling thread) SCHED_FIFO at `prio` (1..=99).
pub fn set_fifo(tid: libc::pid_t, prio: i32) -> io::Result<()> {
    set_sched(tid, libc::SCHED_FIFO, prio)
}

/// Set thread `tid`'s scheduling policy and (real-time) priority; SCHED_OTHER takes 0.
pub fn set_sched(tid: libc::pid_t, policy: i32, prio: i32) -> io::Result<()> {
    let p = libc::sched_param { sched_priority: prio };
    // SAFETY: plain system call on a valid sched_param.
    check(unsafe { libc::sched_setscheduler(tid, policy, &p) }, "sched_setscheduler")
}

/// Thread `tid`'s scheduling policy and real-time priority.
pub fn sched_of(tid: libc::pid_t) -> io::Result<(i32, i32)> {
    // SAFETY: plain system calls; sched_param is filled by the kernel.
    unsafe {
        let policy = libc::sched_getscheduler(tid);
        if policy < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut p: libc::sched_param = std::mem::zeroed();
        check(libc::sched_getparam(tid, &mut p), "sched_getparam")?;
        Ok((policy, p.sched_priority))
    }
}

/// Set an int socket option.
pub fn setsockopt_int(fd: i32, level: i32, opt: i32, v: i32) -> io::Result<()> {
    // SAFETY: an int option on a socket the caller owns.
    check(
        unsafe {
            libc::setsockopt(fd, level, opt, (&v as *const i32).cast(), std::mem::size_of::<i32>() as libc::socklen_t)
        },
        "setsockopt",
    )
}

/// Read an int socket option.
pub fn getsockopt_int(fd: i32, level: i32, opt: i32) -> io::Result<i32> {
    let mut v: i32 = 0;
    let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
    // SAFETY: an int option of a socket the caller owns into a local.
    check(unsafe { libc::getsockopt(fd, level, opt, (&mut v as *mut i32).cast(), &mut len) }, "getsockopt")?;
    Ok(v)
}

/// CLOCK_MONOTONIC, ns (the clock the kernel's own timestamps and `clock_nanosleep` use).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleep until CLOCK_MONOTONIC reads `t_ns` (absolute: no drift from the time the call takes).
pub fn sleep_until_ns(t_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (t_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (t_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: absolute sleep on CLOCK_MONOTONIC; EINTR retried.
    while unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) }
        == libc::EINTR
    {}
}
