#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Print the kernel build directory to build against. Given a kernel release
# (DKMS passes one), only that kernel's /lib/modules/KVER/build. Otherwise
# the running kernel's, else the newest installed Debian
# linux-headers-*-amd64 (as in containers, where the running kernel has no
# headers). Prints nothing when none exists.
if [ -n "${1:-}" ]; then
	[ -d "/lib/modules/$1/build" ] && echo "/lib/modules/$1/build"
	exit 0
fi
kver=$(uname -r)
if [ -d "/lib/modules/$kver/build" ]; then
	echo "/lib/modules/$kver/build"
	exit 0
fi
ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1
