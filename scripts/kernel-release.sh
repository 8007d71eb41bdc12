#!/bin/sh
# SPDX-License-Identifier: MIT
# Print the release of the kernel built in KDIR (what its modules' vermagic
# and /lib/modules/RELEASE say), from its include/generated/utsrelease.h.
# Without that file (not a kernel build tree) it prints nothing and fails
# as sed does, with sed's message; callers that have a fallback (the
# Makefile: uname -r) silence it and apply their own.
# Usage: kernel-release.sh KDIR
set -u
exec sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$1/include/generated/utsrelease.h"
