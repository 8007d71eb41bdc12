#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Build gpubuf the way DKMS users will, through dkms.conf, into a private
# DKMS tree, for KDIR's kernel release: from the module source that the
# gpubuf-dkms package ships (its /usr/src/gpubuf-VERSION) when given the
# package, else from what make dkms-source installs (DKMS_SOURCES).
# Usage: dkms-build.sh KDIR [gpubuf-dkms_VERSION_all.deb]
set -eu
kdir=$1
deb=${2:-}
top=$(cd "$(dirname "$0")/.." && pwd)
version=$(cat "$top/VERSION")
kver=$("$top/scripts/kernel-release.sh" "$kdir")
work=$top/build/dkms
rm -rf "$work"
mkdir -p "$work/root" "$work/tree"
if [ -n "$deb" ]; then
	dpkg-deb -x "$deb" "$work/root"
else
	make -s -C "$top" dkms-source DESTDIR="$work/root"
fi
if [ ! -d "/lib/modules/$kver/build" ]; then
	echo "dkms needs /lib/modules/$kver/build (linux-headers-$kver)" >&2
	exit 1
fi
dkms build -m gpubuf -v "$version" -k "$kver" \
	--sourcetree "$work/root/usr/src" --dkmstree "$work/tree"
ko=$(find "$work/tree/gpubuf/$version/$kver" -name 'gpubuf.ko*' | head -n 1)
[ -n "$ko" ] || { echo "dkms produced no gpubuf.ko" >&2; exit 1; }
modinfo "$ko" | grep -q "^vermagic: *$kver " || { modinfo "$ko" >&2; exit 1; }
modinfo -F version "$ko" | grep -qx "$version"
