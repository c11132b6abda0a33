//! Compiles the BPF programs (`src/bpf/*.bpf.c`, the shared generator, and each paper's
//! `src/<paper id>/bpf/*.bpf.c`) with clang and generates their libbpf-rs skeletons: the
//! live-frames traffic generator, the ozaki-pbq XDP program (with its cgroup hooks),
//! goda-wakeups' scheduler tracepoints and segment-train recorder, tabata-speed's arrival recorder and takeuchi-symbiose's
//! router and sink programs. Needs
//! clang and, for libbpf-sys, libelf and zlib headers: `scripts/deps.sh` installs them from
//! Debian's packages.

use libbpf_cargo::SkeletonBuilder;
use std::path::PathBuf;
use std::process::Command;

/// (source, skeleton file, headers it includes): the shared generator at the top, each paper's
/// programs in its folder.
const PROGRAMS: [(&str, &str, &[&str]); 6] = [
    // The live-frames traffic generator (src/gen.rs).
    ("src/bpf/gen.bpf.c", "gen.skel.rs", &["src/bpf/gen.h"]),
    // ozaki-pbq's priority drop (XDP) and its bind/close/connect hooks.
    ("src/ozaki_pbq/bpf/pbq_xdp.bpf.c", "pbq_xdp.skel.rs", &["src/ozaki_pbq/bpf/pbq.h"]),
    // goda-wakeups' wake-up recorder (tp_btf sched_waking/sched_wakeup/sched_migrate_task,
    // src/goda_rfs/wake.rs).
    ("src/goda_rfs/bpf/wake_tp.bpf.c", "wake_tp.skel.rs", &["src/goda_rfs/bpf/wake.h"]),
    // goda-wakeups' segment-train recorder (tp_btf net_dev_queue/netif_receive_skb, the pacing
    // timer's expiry, softirq entry/exit: src/goda_rfs/trains.rs).
    ("src/goda_rfs/bpf/trains_tp.bpf.c", "trains_tp.skel.rs", &["src/goda_rfs/bpf/trains.h"]),
    // tabata-speed's arrival recorder (tcx ingress, src/tabata_speed/arrivals.rs).
    ("src/tabata_speed/bpf/arrivals_tc.bpf.c", "arrivals_tc.skel.rs", &["src/tabata_speed/bpf/arrivals.h"]),
    // takeuchi-symbiose's router input (pass, cpumap or XSKMAP redirect), checksum-checking sink
    // and NET_RX softirq clock (src/takeuchi_symbiose/experiment.rs).
    ("src/takeuchi_symbiose/bpf/symb.bpf.c", "symb.skel.rs", &["src/takeuchi_symbiose/bpf/symb.h"]),
];

fn main() {
    if Command::new("clang").arg("--version").output().is_err() {
        panic!(
            "hostsim-live: `clang` not found. It compiles the BPF programs in src/bpf/. \
             Install the build dependencies with `bash scripts/deps.sh` (Debian: clang libelf-dev zlib1g-dev pkg-config make)."
        );
    }
    // The kernel UAPI headers (<linux/bpf.h>) need <asm/types.h> from the multiarch directory,
    // which clang's BPF target does not search by itself.
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = format!("/usr/include/{arch}-linux-gnu");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for (src, skel, headers) in PROGRAMS {
        SkeletonBuilder::new()
            .source(src)
            .clang_args(["-I", &multiarch, "-I", "src/bpf", "-mcpu=v3", "-Wall", "-Werror"])
            .build_and_generate(out_dir.join(skel))
            .unwrap_or_else(|e| panic!("hostsim-live: building {src}: {e:#}"));
        println!("cargo:rerun-if-changed={src}");
        for h in headers {
            println!("cargo:rerun-if-changed={h}");
        }
    }
}
