#!/bin/sh
# SPDX-License-Identifier: MIT
# The cheap half of make check-install, run by make check: every Depends and
# Recommends of the built packages must resolve in Debian 12, from where
# check-install's image (tests/install/image.sh) fetches them into its
# offline archive; a dependency Debian 12 lacks fails here, not after the
# slow boot. apt resolves the packages as for a user's "apt-get install
# ./*.deb" (Recommends included) on a system with nothing installed (an
# empty dpkg status), against this machine's Debian 12 package lists. The
# check is first shown a copy of the last package that depends on a package
# Debian does not have, which it must refuse, so that it can fail. Prints TAP.
# Usage: deps-guard.sh DEB...
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/tap-emit.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpubuf-deps-guard.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
[ $# -gt 0 ] || { echo "Bail out! usage: deps-guard.sh DEB..."; exit 1; }
# apt takes a .deb for a file only by a path with a slash in front.
for d in "$@"; do
	shift
	set -- "$@" "$(cd "$(dirname "$d")" && pwd)/$(basename "$d")"
done
: >"$tmp/status"

# resolves LOG DEB...: apt finds every dependency of the packages.
resolves() {
	log=$1
	shift
	apt-get install --simulate -o Dir::State::status="$tmp/status" \
		-o Debug::NoLocking=1 -o APT::Install-Recommends=true "$@" >"$log" 2>&1
}

# The control: the last package, with one more Recommends nobody has.
last=$(eval "echo \${$#}")

dpkg-deb -R "$last" "$tmp/bad" &&
	sed -i '/^Recommends:/d; /^Depends:/a Recommends: gpubuf-no-such-package' \
		"$tmp/bad/DEBIAN/control" &&
	dpkg-deb -b "$tmp/bad" "$tmp/bad.deb" >/dev/null 2>&1 ||
	{ echo "Bail out! could not build the control package from $last"; exit 1; }
if resolves "$tmp/bad.log" "$tmp/bad.deb"; then
	emit 0 "control: a package recommending gpubuf-no-such-package is refused" "$tmp/bad.log"
else
	emit 1 "control: a package recommending gpubuf-no-such-package is refused"
fi

if resolves "$tmp/all.log" "$@"; then
	emit 1 "the Depends and Recommends of $(for d in "$@"; do basename "$d"; done | tr '\n' ' ')resolve in Debian 12 ($(grep -c '^Inst' "$tmp/all.log") packages on an empty system)"
else
	emit 0 "the Depends and Recommends of the built packages resolve in Debian 12" "$tmp/all.log"
fi
for d in "$@"; do
	name=$(dpkg-deb -f "$d" Package)
	echo "# $name: Depends: $(dpkg-deb -f "$d" Depends); Recommends: $(dpkg-deb -f "$d" Recommends)"
done
echo "1..$n"
[ "$failed" = 0 ]
