#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian packages gpubuf's build and test bed need, only those
# missing. Needs root for apt-get; without it, lists what is missing.
set -eu
pkgs="gcc g++ make libc6-dev perl pkgconf python3 cpio gzip xz-utils kmod
      linux-headers-amd64 linux-image-amd64 linux-source-6.1 sparse
      qemu-system-x86 busybox-static libdrm-dev libdlpack-dev dkms debootstrap
      libhsa-runtime-dev hipcc libibverbs-dev ibverbs-providers rdma-core
      iproute2 dpkg-dev debhelper dh-dkms lintian fakeroot e2fsprogs"

missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "gpubuf: missing Debian packages:$missing (run as root to install)" >&2
	exit 1
fi
echo "gpubuf: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
