#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Build gpubuf the way DKMS users will: from a copy of the committed tree,
# through dkms.conf, into a private DKMS tree, for KDIR's kernel release.
# Usage: dkms-build.sh KDIR
set -eu
kdir=$1
top=$(cd "$(dirname "$0")/.." && pwd)
version=$(cat "$top/VERSION")
kver=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$kdir/include/generated/utsrelease.h")
work=$top/build/dkms
rm -rf "$work"
mkdir -p "$work/src/gpubuf-$version" "$work/tree"
# What a release tarball holds: the committed files (or the work tree when
# this is not a git checkout).
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$top" ls-files -z | (cd "$top" && xargs -0 cp --parents -t "$work/src/gpubuf-$version")
else
	cp -r "$top"/. "$work/src/gpubuf-$version"
	rm -rf "$work/src/gpubuf-$version/build"
fi
if [ ! -d "/lib/modules/$kver/build" ]; then
	echo "dkms needs /lib/modules/$kver/build (linux-headers-$kver)" >&2
	exit 1
fi
dkms build -m gpubuf -v "$version" -k "$kver" \
	--sourcetree "$work/src" --dkmstree "$work/tree"
ko=$(find "$work/tree/gpubuf/$version/$kver" -name 'gpubuf.ko*' | head -n 1)
[ -n "$ko" ] || { echo "dkms produced no gpubuf.ko" >&2; exit 1; }
modinfo "$ko" | grep -q "^vermagic: *$kver " || { modinfo "$ko" >&2; exit 1; }
modinfo -F version "$ko" | grep -qx "$version"
