#!/bin/sh
# SPDX-License-Identifier: MIT
# Build (once) the Debian 12 system that make check-install boots: a
# debootstrap root with systemd as init, udev, AppArmor (the kernel
# recommends it; a Debian installer system has it), dkms, Debian's kernel image
# and headers, a compiler, pkg-config and DLPack's header (the README
# example includes it), what an operator runs beside gpubuf (Debian's
# prometheus-node-exporter, which reads gpubuf-tools' textfile, and podman
# with crun, which reads gpubuf-dkms' CDI spec), two users (alice, who will join
# group gpubuf, and bob, who will not), and the bookworm-backports kernel
# packages downloaded but not installed, so the guest can take a kernel
# update offline. What the given .debs need (their Depends and Recommends,
# as apt resolves them for a user's "apt-get install ./*.deb") is
# downloaded into apt's cache too, since the guest has no network.
# Written as an ext4 image; kept under $GPUBUF_INSTALL_DIR (default
# /var/tmp/gpubuf-install) and rebuilt when this script or the packages'
# dependencies change.
# Usage: image.sh DEB...   (prints the image's path)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${GPUBUF_INSTALL_DIR:-/var/tmp/gpubuf-install}
mirror=${GPUBUF_DEBIAN_MIRROR:-http://deb.debian.org/debian}
[ $# -gt 0 ] || { echo "usage: image.sh DEB..." >&2; exit 2; }
deps=$(for deb in "$@"; do dpkg-deb -f "$deb" Package Depends Recommends; done)
key=$( (cat "$here/image.sh" "$here/gpubuf-check.service"; echo "$deps") |
	sha256sum | cut -c1-16)
img=$dir/base-$key.img
if [ -f "$img" ]; then
	echo "$img"
	exit 0
fi
mkdir -p "$dir"
root=$dir/root
log=$dir/image.log
umount "$root/proc" 2>/dev/null || true
rm -rf --one-file-system "$root" "$dir"/base-*.img
echo "gpubuf: building the check-install image (debootstrap, log: $log)" >&2
debootstrap --variant=minbase \
	--include=systemd,systemd-sysv,udev,dbus,apparmor,kmod,initramfs-tools,dkms,linux-image-amd64,linux-headers-amd64,gcc,libc6-dev,make,pkgconf,libdlpack-dev,fakeroot,procps,sudo,e2fsprogs,prometheus-node-exporter,podman,crun,conmon,netavark \
	bookworm "$root" "$mirror" >"$log" 2>&1 ||
	{ tail -n 20 "$log" >&2; exit 1; }

cat >"$root/etc/apt/sources.list" <<SRC
deb $mirror bookworm main
deb $mirror bookworm-backports main
SRC
# Initramfs images built in the guest (the kernel update's) hold only the
# modules this machine needs: "most" costs minutes of emulated CPU each.
sed -i 's/^MODULES=.*/MODULES=dep/' "$root/etc/initramfs-tools/initramfs.conf"
echo gpubuf-check >"$root/etc/hostname"
echo '/dev/vda / ext4 defaults 0 1' >"$root/etc/fstab"
cp "$here/gpubuf-check.service" "$root/etc/systemd/system/"
mount -t proc proc "$root/proc"
trap 'umount "$root/proc" 2>/dev/null || true' EXIT
mkdir -p "$root/tmp/gpubuf-debs"
cp "$@" "$root/tmp/gpubuf-debs/"
# The kernel update the guest will install: a bookworm user's
# "apt install -t bookworm-backports linux-image-amd64 linux-headers-amd64",
# downloaded here (the guest has no network) and left in apt's cache.
chroot "$root" sh -ec '
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --download-only -t bookworm-backports \
		linux-image-amd64 linux-headers-amd64
	# Everything the packages need, Recommends included, as apt would
	# fetch it for them; the packages themselves come with the test.
	apt-get install -y -qq --download-only /tmp/gpubuf-debs/*.deb
	rm -rf /tmp/gpubuf-debs
	useradd -m -s /bin/sh alice
	useradd -m -s /bin/sh bob
	systemctl enable gpubuf-check.service
	# Nothing that would compete with the check for the emulated CPU,
	# or write state of its own while the check lists the file system
	# (podman-restart at boot makes its network locks in /etc).
	systemctl mask apt-daily.timer apt-daily-upgrade.timer \
		e2scrub_all.timer fstrim.timer systemd-tmpfiles-clean.timer \
		podman-restart.service podman-auto-update.timer \
		podman-auto-update.service podman.socket podman.service \
		2>/dev/null || true
	passwd -l root' >>"$log" 2>&1 || { tail -n 20 "$log" >&2; exit 1; }
umount "$root/proc"
trap - EXIT
mkfs.ext4 -q -F -L gpubufroot -d "$root" "$img.tmp" 8G >>"$log" 2>&1
mv "$img.tmp" "$img"
rm -rf "$root"
echo "$img"
