//! Compiles the XDP program (src/bpf/pbq_xdp.bpf.c) with clang and generates its libbpf-rs
//! skeleton. Needs clang and, for libbpf-sys, libelf and zlib headers: `scripts/deps.sh`
//! installs them from Debian's packages.

use libbpf_cargo::SkeletonBuilder;
use std::path::PathBuf;
use std::process::Command;

const SRC: &str = "src/bpf/pbq_xdp.bpf.c";

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("pbq_xdp.skel.rs");
    if Command::new("clang").arg("--version").output().is_err() {
        panic!(
            "hostsim-live: `clang` not found. It compiles the XDP program {SRC}. \
             Install the build dependencies with `bash scripts/deps.sh` (Debian: clang libelf-dev zlib1g-dev pkg-config make)."
        );
    }
    // The kernel UAPI headers (<linux/bpf.h>) need <asm/types.h> from the multiarch directory,
    // which clang's BPF target does not search by itself.
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = format!("/usr/include/{arch}-linux-gnu");
    SkeletonBuilder::new()
        .source(SRC)
        .clang_args(["-I", &multiarch, "-I", "src/bpf", "-mcpu=v3", "-Wall", "-Werror"])
        .build_and_generate(&out)
        .unwrap_or_else(|e| panic!("hostsim-live: building {SRC}: {e:#}"));
    println!("cargo:rerun-if-changed={SRC}");
    println!("cargo:rerun-if-changed=src/bpf/pbq.h");
}
