#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Extract the few files gpubuf's tests take from Debian's linux-source-6.1
# (kselftest harness, checkpatch) into build/linux-source/, once.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
dest=$top/build/linux-source
tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1)
stamp=$dest/.extracted

[ -f "$stamp" ] && exit 0
if [ -z "$tarball" ]; then
	echo "linux-source-6.1 is not installed (apt-get install linux-source-6.1)" >&2
	exit 1
fi
mkdir -p "$dest"
tar -xf "$tarball" -C "$dest" --strip-components=1 --wildcards \
	'*/tools/testing/selftests/kselftest.h' \
	'*/tools/testing/selftests/kselftest_harness.h' \
	'*/scripts/checkpatch.pl' \
	'*/scripts/spelling.txt' \
	'*/scripts/const_structs.checkpatch'
touch "$stamp"
