#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# make check-deps: what tests/deps.sh approximates, on a real bare system.
# For each TARGET, in a fresh copy of a debootstrap --variant=minbase
# bookworm root holding a copy of the committed tree: scripts/install-deps.sh
# TARGET, then every command the table declares for it, then the target's
# first stage (tests/deps-stage.sh). Needs root and the Debian mirror; slow
# (each target downloads and installs its packages). Prints TAP.
# Usage: deps-bare.sh [TARGET...]   (default: check-debug lib module python)
# Environment: GPUBUF_DEPS_DIR, the pristine root's tarball and the work
# root (default /var/tmp/gpubuf-deps); GPUBUF_DEPS_INSTALLER, an installer
# to run instead of the tree's (to show an older one failing);
# GPUBUF_DEBIAN_MIRROR; GPUBUF_DEPS_APT_CACHE, .debs copied into the
# root's apt cache to spare downloads (default: this machine's
# /var/cache/apt/archives; empty for none): apt still picks the packages.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${GPUBUF_DEPS_DIR:-/var/tmp/gpubuf-deps}
mirror=${GPUBUF_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$dir/root
. "$top/tests/tap-emit.sh"
. "$top/tests/root-preflight.sh"
[ $# -gt 0 ] || set -- check-debug lib module python

finish() {
	umount "$root/proc" 2>/dev/null
	echo "1..$n"
	[ "$failed" = 0 ]
	exit
}
root_preflight check-deps "debootstrap, chroot" "debootstrap installed"
mkdir -p "$dir"
if [ ! -f "$dir/minbase.tar" ]; then
	rm -rf "$dir/minbase"
	if debootstrap --variant=minbase bookworm "$dir/minbase" "$mirror" >"$dir/debootstrap.log" 2>&1; then
		tar -C "$dir/minbase" -cf "$dir/minbase.tar.tmp" . && mv "$dir/minbase.tar.tmp" "$dir/minbase.tar"
		rm -rf "$dir/minbase"
	else
		emit 0 "debootstrap --variant=minbase bookworm" "$dir/debootstrap.log"
		finish
	fi
fi

# in_root LOG COMMAND: run COMMAND in the root's /src, with a plain root
# environment.
in_root() {
	log=$1
	shift
	chroot "$root" env -i HOME=/root LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		sh -c "cd /src && $*" >"$log" 2>&1
}

for t in "$@"; do
	t0=$(date +%s)
	umount "$root/proc" 2>/dev/null
	rm -rf --one-file-system "$root"
	mkdir -p "$root"
	tar -C "$root" -xf "$dir/minbase.tar"
	"$top/scripts/export-tree.sh" "$root/src"
	if [ -n "${GPUBUF_DEPS_INSTALLER:-}" ]; then
		cp "$GPUBUF_DEPS_INSTALLER" "$root/src/scripts/install-deps.sh"
	fi
	cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
	cache=${GPUBUF_DEPS_APT_CACHE-/var/cache/apt/archives}
	if [ -n "$cache" ] && ls "$cache"/*.deb >/dev/null 2>&1; then
		# Links where they can be; debootstrap left some of the same names.
		link=
		[ "$(stat -c %d "$cache")" = "$(stat -c %d "$root/var/cache/apt/archives")" ] && link=-l
		cp -f $link "$cache"/*.deb "$root/var/cache/apt/archives/"
	fi
	mount -t proc proc "$root/proc"
	in_root "$dir/$t-install.log" "scripts/install-deps.sh $t"
	emit $((! $?)) "$t: install-deps.sh $t on a bare Debian 12${GPUBUF_DEPS_INSTALLER:+ (installer $GPUBUF_DEPS_INSTALLER)}" \
		"$dir/$t-install.log"
	cmds=$("$top/scripts/install-deps.sh" --commands "$t" | tr '\n' ' ')
	in_root "$dir/$t-commands.log" \
		"for c in $cmds; do command -v \$c >/dev/null || echo \"missing: \$c\"; done"
	! grep -q . "$dir/$t-commands.log"
	emit $((! $?)) "$t: every command it declares is there" "$dir/$t-commands.log"
	in_root "$dir/$t-stage.log" "tests/deps-stage.sh $t /work"
	st=$?
	if [ $st != 77 ]; then
		emit $((! st)) "$t: its first stage (tests/deps-stage.sh $t) passes" "$dir/$t-stage.log"
	fi
	echo "# $t: $(($(date +%s) - t0)) s"
done
finish
