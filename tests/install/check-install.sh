#!/bin/sh
# SPDX-License-Identifier: MIT
# make check-install: install gpubuf into a booted Debian 12 system the way
# its users do, and check the result from inside it. Prints TAP and a final
# "N passed, N failed" line.
#
#   packages: apt-get installs every package of debian/control that make
#     deb built (DKMS builds the module in the guest; the image holds their
#     dependencies, Recommends included) -> reboot: the checks of guest.sh
#     (module loaded at boot, /dev/gpubuf root:gpubuf 0660, a user in the
#     group and one outside it, pkg-config example, Python with NumPy and
#     DLPack, the Prometheus timer scraped by node_exporter, a podman
#     container given /dev/gpubuf through CDI and one not), then a kernel
#     update from
#     bookworm-backports -> reboot into the new kernel: the same checks,
#     then apt-get purge and a search for anything left behind.
#   make install: the source tree's make install -> reboot: the same checks,
#     make uninstall, then make dkms-install / dkms-uninstall; nothing left.
#
# Each boot is QEMU (TCG) on a copy of the image from image.sh, with systemd
# as init; gpubuf-check.service runs the boot's steps from a second disk and
# powers off. The kernel booted is the newest in the image's /boot, as a
# boot loader would pick. Logs: $GPUBUF_INSTALL_DIR/work (default
# /var/tmp/gpubuf-install/work).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tests/install
dir=${GPUBUF_INSTALL_DIR:-/var/tmp/gpubuf-install}
work=$dir/work
version=$(cat "$top/VERSION")
timeout_s=${GPUBUF_INSTALL_TIMEOUT:-1800}
start=$(date +%s)
. "$top/tests/tap-emit.sh"
. "$top/tests/root-preflight.sh"
finish() {
	echo "1..$n"
	echo "# check-install took $(($(date +%s) - start)) s"
	echo "$((n - failed)) passed, $failed failed"
	[ "$failed" = 0 ]
	exit
}

root_preflight check-install "debootstrap, dkms in the guest image" \
	"build dependencies installed"

rm -rf "$work"
mkdir -p "$work"
# The packages are debian/control's: a new one is installed and removed
# like the others without a change here.
packages=$(sed -n 's/^Package: *//p' "$top/debian/control" | tr '\n' ' ')
set -- $packages
count=$#
if "$top/scripts/build-deb.sh" >"$work/debs.list" 2>"$work/make-deb.log" &&
	[ "$(wc -l <"$work/debs.list")" = "$count" ]; then
	emit 1 "make deb builds the $count packages of debian/control: $packages"
else
	emit 0 "make deb builds the $count packages of debian/control: $packages"
	sed 's/^/# /' "$work/make-deb.log" | tail -n 30
	finish
fi
# shellcheck disable=SC2046
if img=$("$here/image.sh" $(cat "$work/debs.list")); then
	emit 1 "Debian 12 image with systemd, udev, dkms, linux-image and headers, and the packages' dependencies offline"
else
	emit 0 "Debian 12 image with systemd, udev, dkms, linux-image and headers, and the packages' dependencies offline"
	finish
fi

# boot RUN LABEL STEP...: boot RUN's image once and run the steps.
boot() {
	run=$1 label=$2
	shift 2
	disk=$work/$run.img
	b=$work/$run-$label
	mkdir -p "$b/data/out"
	kver=$(debugfs -R 'ls /boot' "$disk" 2>/dev/null | tr -s ' ' '\n' |
		sed -n 's/^vmlinuz-//p' | sort -V | tail -n 1)
	debugfs -R "dump /boot/vmlinuz-$kver $b/vmlinuz" "$disk" 2>/dev/null
	debugfs -R "dump /boot/initrd.img-$kver $b/initrd" "$disk" 2>/dev/null
	if [ ! -s "$b/vmlinuz" ] || [ ! -s "$b/initrd" ]; then
		emit 0 "$run/$label: a kernel and initrd in the image's /boot"
		return 1
	fi
	cp "$here/guest.sh" "$here/cdi_check.c" "$b/data/"
	mkdir -p "$b/data/examples"
	cp "$top/examples/matrix_dlpack.c" "$b/data/examples/"
	case " $* " in *" install-debs "*)
		mkdir -p "$b/data/debs"
		xargs cp -t "$b/data/debs" <"$work/debs.list" ;;
	esac
	case " $* " in *" make-install "*)
		"$top/scripts/export-tree.sh" "$b/data/src" ;;
	esac
	{
		echo "export VERSION=$version KVER=$kver NEW_KVER=${new_kver:-}"
		echo "export PACKAGES='$packages'"
		echo "exec sh /run/gpubuf-check/guest.sh $*"
	} >"$b/data/step.sh"
	mkfs.ext4 -q -F -d "$b/data" "$b/data.img" 1G >/dev/null 2>&1
	t0=$(date +%s)
	timeout "$timeout_s" qemu-system-x86_64 -accel tcg,thread=multi \
		-m 3072 -smp 2 -display none -monitor none -no-reboot \
		-serial "file:$b/console.txt" -kernel "$b/vmlinuz" \
		-initrd "$b/initrd" \
		-append "root=/dev/vda rw console=ttyS0 panic=-1 gpubuf_check" \
		-drive "file=$disk,format=raw,if=virtio" \
		-drive "file=$b/data.img,format=raw,if=virtio" >"$b/qemu.log" 2>&1
	echo "# $run/$label: booted $kver, $(($(date +%s) - t0)) s"
	rm -rf "$b/out"
	debugfs -R "rdump /out $b" "$b/data.img" 2>/dev/null
	if [ ! -f "$b/out/done" ]; then
		emit 0 "$run/$label: the guest finished its steps ($*)"
		tail -n 30 "$b/console.txt" | sed 's/^/# /'
		return 1
	fi
	while IFS= read -r line; do
		case $line in
		"ok - "*) emit 1 "$run/$label ($kver): ${line#ok - }" ;;
		"not ok - "*) emit 0 "$run/$label ($kver): ${line#not ok - }" ;;
		*) echo "$line" ;;
		esac
	done <"$b/out/tap"
}

new_kver=
cp --sparse=always "$img" "$work/packages.img"
if boot packages 1-install snapshot install-debs &&
	boot packages 2-checks checks-dkms kernel-update; then
	new_kver=$(cat "$work/packages-2-checks/out/new-kver")
	boot packages 3-new-kernel checks-dkms remove-debs
fi
rm -f "$work/packages.img"

new_kver=
cp --sparse=always "$img" "$work/make.img"
if boot make 1-install snapshot make-install; then
	boot make 2-checks checks-make make-uninstall dkms-install
fi
rm -f "$work/make.img"
finish
