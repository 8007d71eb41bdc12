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
dir=$(pwd)
[ -d "/host$dir" ] || dir=/
exec chroot /host /usr/bin/env -C "$dir" \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/tmp "$@"
