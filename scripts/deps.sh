#!/usr/bin/env bash
# System packages the build and `hostsim live` need, from Debian's packages (apt), installed only
# if missing: clang (compiles the BPF programs, crates/live/src/**/bpf/), libelf and zlib headers,
# pkg-config and make (libbpf-sys builds its vendored libbpf), iproute2 (`ip netns`, veth, `tc`),
# ethtool (a veth's offloads, tabata-speed) and
# bpftool (the live tests look for leaked programs), and a Japanese font (IPAex Gothic) that the
# report builder subsets and embeds so that the papers' quotes render on any reader's machine
# (python/hostsim/_fonts.py). Idempotent; needs root or sudo to install.
set -euo pipefail
need=()
command -v clang >/dev/null || need+=(clang)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v make >/dev/null || need+=(make)
command -v ip >/dev/null || need+=(iproute2)
command -v bpftool >/dev/null || need+=(bpftool)
# `tc` (tbf shaper) comes with iproute2; ethtool turns a veth's segmentation offloads off
# (`hostsim live tabata-speed`). Both live in /usr/sbin, which a non-root PATH may lack.
PATH="$PATH:/usr/sbin:/sbin"
command -v tc >/dev/null || need+=(iproute2)
command -v ethtool >/dev/null || need+=(ethtool)
[ -e /usr/include/gelf.h ] || need+=(libelf-dev)
[ -e /usr/include/zlib.h ] || need+=(zlib1g-dev)
[ -e /usr/include/linux/bpf.h ] || need+=(linux-libc-dev)
[ -e /usr/share/fonts/opentype/ipaexfont-gothic/ipaexg.ttf ] || need+=(fonts-ipaexfont-gothic)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
echo "deps: installing ${need[*]} (apt)" >&2
sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
command -v clang >/dev/null || { echo "deps: clang did not install" >&2; exit 1; }
