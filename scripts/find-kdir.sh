#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Print the kernel build directory to build against: the running kernel's,
# else the newest installed Debian linux-headers-*-amd64 (as in containers,
# where the running kernel has no headers). Prints nothing when none exists.
kver=${1:-$(uname -r)}
if [ -d "/lib/modules/$kver/build" ]; then
	echo "/lib/modules/$kver/build"
	exit 0
fi
ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1
