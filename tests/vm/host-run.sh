#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only
# /gpubuf/host-run in the test guest (tests/vm/run.sh with
# GPUBUF_VM_HOST_ROOT=1): run a program of the host's root file system,
# which init.sh puts together at /host, chrooted there. The program sees the
# guest's /dev (so /dev/gpubuf), /proc, /sys, /tmp and /gpubuf at their usual
# paths; the host's own directories are read-only. The environment passes
# through (GPUBUF_BACKEND, GPUBUF_KO, ...), with Debian's default PATH and
# HOME=/tmp; the working directory is kept when /host has it, else /.
# Usage (a guest suite): exec /gpubuf/host-run /usr/bin/python3 -c '...'
if [ ! -d /host/usr/bin ]; then
	echo "host-run: the host's root file system is not at /host (run.sh needs GPUBUF_VM_HOST_ROOT=1; see the guest setup results)" >&2
	exit 1
fi
if [ $# = 0 ]; then
	echo "usage: host-run PROGRAM [ARG...]" >&2
	exit 2
fi
# GPUBUF_HOST_SUBROOT=/path: a root file system inside the host's (a
# debootstrapped suite of tests/kernel-matrix.sh) instead, with the guest's
# /dev, /proc, /sys and /tmp mounted over its own (read-only) directories.
root=/host
if [ -n "${GPUBUF_HOST_SUBROOT:-}" ]; then
	root=/host$GPUBUF_HOST_SUBROOT
	if [ ! -d "$root/usr/bin" ]; then
		echo "host-run: no root file system at $GPUBUF_HOST_SUBROOT on the host" >&2
		exit 1
	fi
	# busybox has no mountpoint(1); the roots here have no spaces.
	mounted() { grep -q " $1 " /proc/mounts; }
	{ mounted "$root/proc" || mount -t proc proc "$root/proc"; } &&
		{ mounted "$root/sys" || mount -o rbind /sys "$root/sys"; } &&
		{ mounted "$root/dev" || mount -o rbind /dev "$root/dev"; } &&
		{ mounted "$root/tmp" || mount -o bind /tmp "$root/tmp"; } ||
		{ echo "host-run: cannot mount /proc, /sys, /dev, /tmp in $root" >&2; exit 1; }
fi
dir=$(pwd)
[ -d "$root$dir" ] || dir=/
exec chroot "$root" /usr/bin/env -C "$dir" \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/tmp "$@"
