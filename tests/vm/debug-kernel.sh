#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Build a debug kernel from Debian's linux-source-6.1 (defconfig plus
# tests/vm/debug-kernel.config: KASAN, kmemleak, lockdep, DEBUG_VM,
# DMA-API debug, page_owner, UBSAN), build gpubuf and the probe against it,
# and run every guest suite on it with page_owner and kmemleak checks after
# the suites. Slow: the kernel build takes about 40 minutes on 2 cores the
# first time (kept in $GPUBUF_DEBUG_KERNEL_DIR, default
# /var/tmp/gpubuf-debug-kernel) and the instrumented guest runs several
# times slower than the plain one. Prints TAP.
# Usage: debug-kernel.sh GUEST_TESTS_DIR
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
tests_dir=$1
work=${GPUBUF_DEBUG_KERNEL_DIR:-/var/tmp/gpubuf-debug-kernel}
linux=$work/linux
root=$work/root
jobs=$(($(nproc) + 1))

fail() { echo "not ok 1 - debug kernel: $1"; [ -n "${2:-}" ] && sed 's/^/# /' "$2" | tail -n 30; echo "1..1"; exit 1; }

mkdir -p "$work"
# The stamp holds the fragment the tree was configured with: a changed
# fragment reconfigures the kept tree (and make rebuilds what it changes)
# instead of silently testing an old configuration.
fragment=$top/tests/vm/debug-kernel.config
stamp=$linux/.gpubuf-configured
if [ ! -f "$linux/Makefile" ]; then
	rm -rf "$linux"
	mkdir -p "$linux"
	tar -xf /usr/src/linux-source-6.1.tar.xz -C "$linux" --strip-components=1 ||
		fail "extracting linux-source-6.1"
fi
if ! cmp -s "$fragment" "$stamp"; then
	rm -f "$stamp"
	(cd "$linux" && make -s defconfig &&
		scripts/kconfig/merge_config.sh -m .config "$fragment" &&
		make -s olddefconfig) >"$work/config.log" 2>&1 || fail "configuring" "$work/config.log"
	for opt in KASAN DEBUG_KMEMLEAK PROVE_LOCKING DRM_VGEM HMM_MIRROR MEMCG PAGE_OWNER \
		RDMA_RXE FAULT_INJECTION FAILSLAB FAIL_PAGE_ALLOC FAULT_INJECTION_USERCOPY; do
		grep -Eq "^CONFIG_$opt=[ym]" "$linux/.config" || fail "CONFIG_$opt did not stick"
	done
	cp "$fragment" "$stamp"
fi
make -C "$linux" -j"$jobs" bzImage modules >"$work/build.log" 2>&1 ||
	fail "kernel build" "$work/build.log"
kver=$(cat "$linux/include/config/kernel.release")
rm -rf "$root"
mkdir -p "$root/boot"
make -C "$linux" -s INSTALL_MOD_PATH="$root" modules_install >"$work/install.log" 2>&1 ||
	fail "modules_install" "$work/install.log"
cp "$linux/arch/x86/boot/bzImage" "$root/boot/vmlinuz-$kver"
ln -s "$linux" "$root/kdir"

# gpubuf and the probe, from the committed tree, against this kernel.
rm -rf "$work/gpubuf"
"$top/scripts/export-tree.sh" "$work/gpubuf"
(cd "$work/gpubuf" && make module KDIR="$linux" &&
	make -C "$linux" M="$work/gpubuf/tests/testmod" modules) >"$work/gpubuf.log" 2>&1 ||
	fail "gpubuf.ko build against the debug kernel" "$work/gpubuf.log"

# KASAN makes 28-reserve-measure's fragmentation of 1.3 GiB in 4 KiB holes
# take most of 10 minutes: each suite gets 40 here.
GPUBUF_VM_SYSROOT=$root GPUBUF_VM_KO_DIR=$work/gpubuf GPUBUF_VM_OUT=$work/vm \
	GPUBUF_VM_MEM=4096 GPUBUF_VM_TIMEOUT=${GPUBUF_DEBUG_TIMEOUT:-5400} \
	GPUBUF_VM_SUITE_TIMEOUT=${GPUBUF_VM_SUITE_TIMEOUT:-2400} \
	GPUBUF_VM_APPEND="page_owner=on kmemleak=on" \
	"$top/tests/vm/run.sh" /kdir "$tests_dir" |
	sed -E 's/^(ok|not ok) ([0-9]+) - /\1 \2 - debug kernel: /'
