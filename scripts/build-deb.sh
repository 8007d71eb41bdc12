#!/bin/sh
# SPDX-License-Identifier: MIT
# make deb: build gpubuf's Debian packages (gpubuf-dkms, libgpubuf0,
# libgpubuf-dev, gpubuf-tools, python3-gpubuf) with dpkg-buildpackage from a clean copy of
# the committed tree in build/deb/gpubuf-VERSION, then run lintian over
# them. The packages and lintian's report are left in build/deb. Installs
# Debian's packaging tools and the build dependencies first (as root;
# without root it fails naming what is missing).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
version=$(cat "$top/VERSION")
out=$top/build/deb
src=$out/gpubuf-$version

# Debian's packaging tools and debian/control's Build-Depends.
"$top/scripts/install-deps.sh" deb

changelog_version=$(cd "$top" && dpkg-parsechangelog -S Version)
if [ "$changelog_version" != "$version" ]; then
	echo "gpubuf: debian/changelog is at $changelog_version, VERSION at $version" >&2
	exit 1
fi

rm -rf "$out"
"$top/scripts/export-tree.sh" "$src"
(cd "$src" && dpkg-buildpackage -us -uc) >"$out/build.log" 2>&1 || {
	tail -n 40 "$out/build.log" >&2
	echo "gpubuf: dpkg-buildpackage failed (log: $out/build.log)" >&2
	exit 1
}
# What libgpubuf was built without, as its Makefile reported it.
off=$(grep -E '^libgpubuf: .* off' "$out/build.log" | sort -u)
if [ -n "$off" ]; then
	echo "$off" >&2
else
	echo "gpubuf: libgpubuf built with CUDA, HSA and DRM support" >&2
fi

changes=$out/gpubuf_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).changes
# Warnings and errors fail the build; what remains at info level is
# listed, and each override in debian/*lintian-overrides says why.
lintian --fail-on error,warning --info --display-level '>=info' \
	"$changes" >"$out/lintian.txt" 2>&1 || {
	cat "$out/lintian.txt" >&2
	echo "gpubuf: lintian found errors or warnings" >&2
	exit 1
}
sed 's/^/lintian: /' "$out/lintian.txt" >&2
for p in gpubuf-dkms_${version}_all libgpubuf0_${version}_amd64 \
	libgpubuf-dev_${version}_amd64 gpubuf-tools_${version}_amd64 \
	python3-gpubuf_${version}_amd64; do
	[ -f "$out/$p.deb" ] || { echo "gpubuf: $p.deb was not built" >&2; exit 1; }
	echo "$out/$p.deb"
done
