#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Boot the Debian kernel matching KDIR under QEMU (TCG: this machine has no
# usable KVM) with a busybox initramfs holding gpubuf.ko, the test-only
# modules (pin probe, importer, fake ABI), vgem and its dependencies, and
# every suite in $VM_TESTS_DIR. Prints the guest's results as one TAP
# stream on stdout; the console log is kept in build/vm/console.txt.
# Usage: run.sh KDIR TESTS_DIR
# Environment: GPUBUF_VM_SYSROOT, a root file system (a debootstrap chroot)
# holding KDIR, /boot and /lib/modules of another kernel; GPUBUF_VM_KO_DIR,
# the tree where gpubuf.ko and the tests/testmod modules were built
# for it (default: this tree); GPUBUF_VM_OUT, the work directory;
# GPUBUF_VM_MEM, guest MiB (3072: the 2 MiB-mapping suite maps 1 GiB
# buffers next to 1 GiB of anonymous memory); GPUBUF_VM_EXTRA_DIR, files added under
# /gpubuf in the guest; GPUBUF_VM_APPEND, extra kernel command line (e.g.
# gpubuf.demo=1, which runs /gpubuf/demo.sh instead of the suites);
# GPUBUF_VM_HOST_FILES, host files (libraries a program dlopen()s, their
# configuration) copied to the same paths in the guest, with the shared
# libraries they need; GPUBUF_VM_NIC=1 gives the guest an e1000 NIC on a
# QEMU user network (soft-RoCE needs a network device to bind to);
# GPUBUF_VM_NUMA=1 gives the guest two NUMA nodes, one CPU (in a socket
# of its own, so the guest logs no topology warning) and half the memory
# each; GPUBUF_VM_NUMA_DEVICES=1 adds PCI Express expander bridges, one
# per node, carrying devices the guest drives: on node 1 an e1000e on a
# user network (soft-RoCE binds to it) and a virtio-gpu, on node 0 a
# bochs-display (carry e1000e, virtio-gpu and bochs), and a third node
# with a CPU and no memory, with a bochs-display of its own;
# GPUBUF_VM_DISKS="nvme:IMAGE virtio:IMAGE", raw disk images attached as an
# emulated NVMe controller's namespace or a virtio-blk disk (the storage
# suite); GPUBUF_VM_IOMMU=1, an Intel vIOMMU with the guest's IOMMU on and
# strict;
# GPUBUF_VM_NETDEV, QEMU arguments for the guest's network instead (the
# two-guest cluster's socket link, tests/cluster/run.sh);
# GPUBUF_VM_MODULES, more modules of the guest kernel to carry (modprobe
# them in the guest; built-in ones need no entry; ones this kernel does
# not have are left out with a note on stderr); GPUBUF_VM_SUITE_TIMEOUT,
# seconds one suite may run in the guest (default 900); GPUBUF_VM_HOST_ROOT=1
# shares this machine's / with the guest, read-only (virtio-9p, mount tag
# hostroot, with the modules to mount it and gpubuf.hostroot=1 on the kernel
# command line): init.sh builds /host from it, and a suite runs a host
# program there with /gpubuf/host-run (tests/vm/host-run.sh), e.g.
# "exec /gpubuf/host-run /usr/bin/python3 -m pytest ...".
set -eu
kdir=$1
tests_dir=$2
top=$(cd "$(dirname "$0")/../.." && pwd)
sysroot=${GPUBUF_VM_SYSROOT:-}
kos=${GPUBUF_VM_KO_DIR:-$top}
out=${GPUBUF_VM_OUT:-$top/build/vm}
kver=$("$top/scripts/kernel-release.sh" "$sysroot$kdir")
vmlinuz=$sysroot/boot/vmlinuz-$kver
moddir=/lib/modules/$kver
timeout_s=${GPUBUF_VM_TIMEOUT:-1500}
mem=${GPUBUF_VM_MEM:-3072}

for f in "$vmlinuz" "$sysroot$moddir/modules.dep" /bin/busybox; do
	if [ ! -e "$f" ]; then
		echo "not ok 1 - guest prerequisites: $f missing (linux-image-$kver, busybox-static)"
		echo "1..1"
		exit 1
	fi
done

rm -rf "$out/root"
mkdir -p "$out/root/bin" "$out/root/gpubuf/tests" "$out/root$moddir"
cp /bin/busybox "$out/root/bin/busybox"
cp "$top/tests/vm/init.sh" "$out/root/init"
chmod 755 "$out/root/init"
cp "$kos/gpubuf.ko" "$kos/tests/testmod/gpubuf_pinprobe.ko" \
	"$kos/tests/testmod/gpubuf_fakeabi.ko" \
	"$kos/tests/testmod/gpubuf_importer.ko" "$out/root/gpubuf/"
if [ -n "$(ls -A "$tests_dir")" ]; then
	cp "$tests_dir"/* "$out/root/gpubuf/tests/"
fi
if [ -n "${GPUBUF_VM_EXTRA_DIR:-}" ]; then
	cp -r "$GPUBUF_VM_EXTRA_DIR"/. "$out/root/gpubuf/"
fi
# The host's root file system in the guest: the 9p client, its virtio
# transport and the virtio PCI bus it sits on (built in on some kernels).
host_root_mods=
host_root_append=
if [ "${GPUBUF_VM_HOST_ROOT:-0}" = 1 ]; then
	host_root_mods="virtio_pci 9pnet_virtio 9p"
	host_root_append=" gpubuf.hostroot=1"
	cp "$top/tests/vm/host-run.sh" "$out/root/gpubuf/host-run"
	chmod 755 "$out/root/gpubuf/host-run"
fi

# Dynamically linked programs run in the guest with the host's loader and
# libraries, copied to their host paths (the guest has no other libc).
# ldd is run only on ELF files; ldd of a static one prints no paths.
host_libs() { # FILE: the paths of the shared libraries FILE needs
	ldd "$1" 2>/dev/null | sed -n 's|.*=> \(/[^ ]*\) .*|\1|p; s|^[[:space:]]*\(/[^ ]*\) (.*|\1|p'
}
carry() { # HOST_PATH: copy it, and the file a symlink names, into the guest
	[ -e "$out/root$1" ] && return 0
	mkdir -p "$out/root$(dirname "$1")"
	cp -L "$1" "$out/root$1"
}
elves=$(find "$out/root/gpubuf" -type f -perm -u+x -exec sh -c \
	'head -c 4 "$1" | grep -q "ELF" && echo "$1"' sh {} \;)
for f in $elves ${GPUBUF_VM_HOST_FILES:-}; do
	case $f in "$out"/*) ;; *)
		[ -e "$f" ] || { echo "not ok 1 - guest file $f missing on the host"; echo "1..1"; exit 1; }
		case $f in /tmp/*)
			echo "not ok 1 - guest file $f: the guest mounts a tmpfs over /tmp, which would hide it"
			echo "1..1"; exit 1 ;;
		esac
		carry "$f" ;;
	esac
	for lib in $(host_libs "$f"); do
		carry "$lib"
	done
done

# vgem, the modules named in GPUBUF_VM_MODULES, and what modules.dep says
# they need.
cp "$sysroot$moddir/modules.dep" "$sysroot$moddir/modules.builtin" "$out/root$moddir/" 2>/dev/null || true
mods=
for name in vgem ${GPUBUF_VM_MODULES:-} $host_root_mods; do
	line=$(grep -E "/$name\.ko(\.[a-z]+)?:" "$sysroot$moddir/modules.dep" | tr -d ':')
	# An extra module this kernel lacks (built in, renamed, not configured)
	# is left out: the suite that needs it reports what is missing.
	if [ -z "$line" ] && [ "$name" != vgem ]; then
		echo "run.sh: $name not in $moddir/modules.dep, not carried" >&2
		continue
	fi
	[ -n "$line" ] || { echo "not ok 1 - guest module $name not in $moddir/modules.dep"; echo "1..1"; exit 1; }
	mods="$mods $line"
done
for m in $(echo "$mods" | tr ' ' '\n' | sort -u); do
	mkdir -p "$out/root$moddir/$(dirname "$m")"
	cp "$sysroot$moddir/$m" "$out/root$moddir/$m"
done

(cd "$out/root" && find . | cpio -o -H newc --quiet | gzip -1) > "$out/initrd.gz"

nic="-nic none"
[ "${GPUBUF_VM_NIC:-0}" = 1 ] && nic="-nic user,model=e1000"
[ -n "${GPUBUF_VM_NETDEV:-}" ] && nic=$GPUBUF_VM_NETDEV
# multidevs=remap: / spans several host file systems, whose inode numbers
# would otherwise collide in the guest's 9p inode cache.
set --
if [ "${GPUBUF_VM_NUMA:-0}" = 1 ]; then
	half=$((mem / 2))
	set -- -object memory-backend-ram,id=m0,size=${half}M \
		-object memory-backend-ram,id=m1,size=$((mem - half))M \
		-numa node,nodeid=0,cpus=0,memdev=m0 \
		-numa node,nodeid=1,cpus=1,memdev=m1
fi
# With devices: a third node with a CPU and no memory, nearer node 1
# (15) than node 0 (25), whose expander bridge carries a bochs-display.
if [ "${GPUBUF_VM_NUMA_DEVICES:-0}" = 1 ]; then
	set -- "$@" -numa node,nodeid=2,cpus=2 \
		-numa dist,src=0,dst=1,val=20 -numa dist,src=0,dst=2,val=25 \
		-numa dist,src=1,dst=2,val=15 \
		-device pxb-pcie,id=pxb2,bus_nr=96,numa_node=2,bus=pcie.0 \
		-device pcie-root-port,id=near2a,bus=pxb2,chassis=61,slot=0 \
		-device bochs-display,bus=near2a
fi
if [ "${GPUBUF_VM_NUMA_DEVICES:-0}" = 1 ]; then
	set -- "$@" \
		-device pxb-pcie,id=pxb1,bus_nr=64,numa_node=1,bus=pcie.0 \
		-device pcie-root-port,id=near1a,bus=pxb1,chassis=41,slot=0 \
		-device pcie-root-port,id=near1b,bus=pxb1,chassis=42,slot=1 \
		-netdev user,id=near1net -device e1000e,netdev=near1net,bus=near1a \
		-device virtio-gpu-pci,bus=near1b \
		-device pxb-pcie,id=pxb0,bus_nr=32,numa_node=0,bus=pcie.0 \
		-device pcie-root-port,id=near0a,bus=pxb0,chassis=31,slot=0 \
		-device bochs-display,bus=near0a
fi
# Disks: GPUBUF_VM_DISKS="nvme:IMAGE virtio:IMAGE ...", raw images the
# guest sees as /dev/nvme0n1, /dev/vda, ... in that order of each kind.
n_disk=0
for d in ${GPUBUF_VM_DISKS:-}; do
	n_disk=$((n_disk + 1))
	case ${d%%:*} in
	nvme) set -- "$@" -drive "file=${d#*:},if=none,id=disk$n_disk,format=raw" \
		-device "nvme,serial=gpubuf$n_disk,drive=disk$n_disk" ;;
	virtio) set -- "$@" -drive "file=${d#*:},if=none,id=disk$n_disk,format=raw" \
		-device "virtio-blk-pci,drive=disk$n_disk" ;;
	*) echo "not ok 1 - GPUBUF_VM_DISKS: unknown kind in $d"; echo "1..1"; exit 1 ;;
	esac
done
# GPUBUF_VM_IOMMU=1: an Intel vIOMMU, strict, that every DMA goes through.
iommu=
if [ "${GPUBUF_VM_IOMMU:-0}" = 1 ]; then
	iommu="-device intel-iommu,intremap=off"
	GPUBUF_VM_APPEND="${GPUBUF_VM_APPEND:-} intel_iommu=on iommu.strict=1"
fi
[ -n "$host_root_mods" ] && set -- "$@" \
	-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
	-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot
set +e
smp=2
[ "${GPUBUF_VM_NUMA:-0}" = 1 ] && smp=2,sockets=2
[ "${GPUBUF_VM_NUMA_DEVICES:-0}" = 1 ] && smp=3,sockets=3
timeout "$timeout_s" qemu-system-x86_64 -machine q35 -cpu max -smp "$smp" -m "$mem" \
	-accel tcg -kernel "$vmlinuz" -initrd "$out/initrd.gz" \
	-append "console=ttyS0 quiet loglevel=3 panic=-1 oops=panic ${GPUBUF_VM_APPEND:-}${GPUBUF_VM_SUITE_TIMEOUT:+ gpubuf.suite_timeout=$GPUBUF_VM_SUITE_TIMEOUT}$host_root_append" \
	-nographic -no-reboot -monitor none -serial stdio $iommu $nic "$@" \
	</dev/null >"$out/console.log" 2>&1
qemu_rc=$?
set -e
tr -d '\r' <"$out/console.log" >"$out/console.txt"
awk -v qemu_rc="$qemu_rc" -f "$top/tests/vm/guest-tap.awk" "$out/console.txt"
