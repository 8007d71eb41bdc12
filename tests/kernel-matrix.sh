#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Build gpubuf against other Debian suites' kernels and run every guest suite
# on them. Each suite gets a debootstrap --variant=minbase root under
# $GPUBUF_MATRIX_DIR/SUITE (default /var/tmp/gpubuf-matrix, kept between runs;
# not inside the tree, where kbuild's clean would delete the root's modules)
# with its own compiler, headers and
# kernel image; the committed tree is built there with W=1 (any warning
# fails), then tests/vm/run.sh boots that kernel. Prints TAP.
# Usage: kernel-matrix.sh GUEST_TESTS_DIR SUITE... (e.g. trixie sid)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
tests_dir=$1
shift
mirror=${GPUBUF_DEBIAN_MIRROR:-http://deb.debian.org/debian}
matrix=${GPUBUF_MATRIX_DIR:-/var/tmp/gpubuf-matrix}
. "$top/tests/tap-emit.sh"

# relay TAP_FILE: its results renumbered into ours, named after $suite.
relay() {
	while IFS= read -r line; do
		case $line in
		"ok "*|"not ok "*)
			status=${line%% [0-9]*}
			text=${line#* - }
			emit "$([ "$status" = ok ] && echo 1 || echo 0)" "$suite: $text"
			;;
		"# "*": measured: "*)
			# What a suite measured (guest-tap.awk), for docs/kernel.md.
			echo "# $suite: ${line#\# }"
			;;
		esac
	done <"$1"
}

# The Python binding with the suite's own Python, NumPy, PyTorch and
# DLPack, on the memfd backend in the chroot: trixie's and sid's DLPack
# (1.0, 1.3) make versioned capsules, which their NumPy 2 and PyTorch 2
# ask for. Not on a suite whose NumPy predates from_dlpack (bullseye's
# 1.19): said as a comment, not counted.
python_suite() {
	mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
	chroot "$root" sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends python3-dev python3-setuptools python3-numpy \
		python3-pytest python3-torch" >"$log.py" 2>&1
	# The format's own writer, for the safetensors loader's test against
	# real files: trixie and later have it.
	chroot "$root" sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends python3-safetensors" >>"$log.py" 2>&1 ||
		echo "# $suite: no python3-safetensors here: the loader's test against its files skips"
	if ! chroot "$root" python3 -c 'import numpy; numpy.from_dlpack' >>"$log.py" 2>&1; then
		echo "# $suite: Python tests not run: $(chroot "$root" python3 -c \
			'import numpy; print("NumPy", numpy.__version__)' 2>&1) has no from_dlpack"
		umount "$root/proc" 2>/dev/null
		return
	fi
	chroot "$root" sh -c "cd /src && bindings/python/run-tests.sh build /tmp/gpubuf-python" \
		>>"$log.py" 2>&1
	st=$?
	[ $st = 0 ] || umount "$root/proc" 2>/dev/null
	emit $((! st)) "$suite: the Python extension builds with $(chroot "$root" python3 --version 2>&1)" "$log.py"
	[ $st = 0 ] || return
	chroot "$root" sh -c "cd /src && GPUBUF_BACKEND=memfd bindings/python/run-tests.sh run /tmp/gpubuf-python" \
		>"$log.py.tap" 2>&1
	umount "$root/proc" 2>/dev/null
	grep '^# python:' "$log.py.tap" | sed "s/^# /# $suite: /"
	relay "$log.py.tap"
	grep -q '^1\.\.[0-9]' "$log.py.tap" || emit 0 "$suite: the Python tests printed no plan" "$log.py.tap"
}

# Each suite's Vulkan test program (59-lib-vulkan-SUITE, below) is the
# sanitized build of libgpubuf's make check, so it runs with that target's
# ASAN_OPTIONS (libgpubuf/Makefile says why intercept_tls_get_addr=0:
# bullseye's GCC 10 runtime needs it).
asan=$(sed -n 's/^[[:space:]]*ASAN_OPTIONS=\([^ ]*\) .*/\1/p' \
	"$top/libgpubuf/Makefile" | head -n 1)

for suite in "$@"; do
	root=$matrix/$suite
	log=$matrix/$suite.log
	mkdir -p "$matrix"
	if [ ! -f "$root/.gpubuf-ready" ]; then
		rm -rf "$root"
		# perl: W=1 runs kernel-doc, which needs more than perl-base.
		if debootstrap --variant=minbase \
			--include=make,kmod,perl,linux-headers-amd64,linux-image-amd64 \
			"$suite" "$root" "$mirror" >"$log" 2>&1; then
			touch "$root/.gpubuf-ready"
		else
			emit 0 "$suite: debootstrap with headers and image" "$log"
			continue
		fi
	fi
	# A development suite's Release file can be past its Valid-Until on
	# the mirror (sid's was, by 28 days, on 2026-12-04), and apt then
	# refuses to update the root: the root only builds and tests, so its
	# apt does not check that date.
	echo 'Acquire::Check-Valid-Until "false";' \
		>"$root/etc/apt/apt.conf.d/99gpubuf-matrix"
	kdir=$(ls -d "$root"/usr/src/linux-headers-*-amd64 | sort -V | tail -n 1)
	kdir=${kdir#"$root"}

	rm -rf "$root/src"
	"$top/scripts/export-tree.sh" "$root/src"
	# objtool of newer kernels reads /proc.
	mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
	chroot "$root" sh -c "cd /src && make module W=1 KDIR=$kdir && \
		make -C $kdir M=/src/tests/testmod W=1 modules" >"$log.build" 2>&1
	st=$?
	if [ $st = 0 ] && ! grep -E 'warning:|error:' "$log.build" >/dev/null; then
		emit 1 "$suite: gpubuf.ko and the probe build with W=1 against ${kdir##*/}"
	else
		emit 0 "$suite: gpubuf.ko and the probe build with W=1 against ${kdir##*/}" "$log.build"
		umount "$root/proc" 2>/dev/null
		continue
	fi
	# The library with this suite's toolchain; apt is a no-op once installed.
	# With the suite's Vulkan: its lavapipe imports dma-bufs from Mesa 24.1
	# on (trixie, sid), which bookworm's cannot.
	# A root kept from an earlier run may have stale package lists: update
	# and try again. Its Vulkan must be there, or the Vulkan tests would
	# quietly not run.
	pkgs="gcc g++ libc6-dev libdlpack-dev libdrm-dev pkgconf python3 \
		libvulkan-dev glslang-tools spirv-tools mesa-vulkan-drivers \
		vulkan-validationlayers"
	chroot "$root" sh -c "apt-get install -y -qq --no-install-recommends $pkgs" \
		>"$log.lib" 2>&1 ||
		chroot "$root" sh -c "apt-get update -qq &&
			apt-get install -y -qq --no-install-recommends $pkgs" >>"$log.lib" 2>&1
	[ -f "$root/usr/include/vulkan/vulkan.h" ] &&
		[ -x "$root/usr/bin/glslangValidator" ] &&
		ls "$root"/usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1
	emit $((! $?)) "$suite: the suite's Vulkan headers, glslangValidator and lavapipe are installed" "$log.lib"
	# libgpubuf uses DLPack 0.6's names; a suite with an older dlpack.h
	# (bullseye: 0.2) gets bookworm's header package, headers only.
	dlpack_note=
	if ! grep -Eq '^#define DLPACK_(VERSION ([6-9][0-9]|[1-9][0-9][0-9])|MAJOR_VERSION)' \
		"$root/usr/include/dlpack/dlpack.h" 2>/dev/null; then
		(cd "$root/tmp" && { apt-get download -q libdlpack-dev ||
			{ apt-get update -qq && apt-get download -q libdlpack-dev; }; } &&
			chroot "$root" sh -c 'dpkg -i /tmp/libdlpack-dev_*.deb') >>"$log.lib" 2>&1 &&
			touch "$root/.gpubuf-host-dlpack"
	fi
	[ -f "$root/.gpubuf-host-dlpack" ] && dlpack_note=" and bookworm's DLPack"
	# The machine's sysfs, as on the host: the topology tests resolve real
	# devices there (drm:/dev/null has no device link).
	mountpoint -q "$root/sys" || mount -t sysfs sysfs "$root/sys"
	chroot "$root" sh -c "gcc --version | head -n 1 &&
		make -s --no-print-directory -C /src/libgpubuf check" >"$log.lib.run" 2>&1
	st=$?
	cat "$log.lib.run" >>"$log.lib"
	umount "$root/sys" 2>/dev/null
	umount "$root/proc" 2>/dev/null
	emit "$([ $st = 0 ] && echo 1 || echo 0)" \
		"$suite: libgpubuf host tests with $(head -n 1 "$log.lib.run" | grep -o 'gcc.*' || echo 'the suite compiler')$dlpack_note: $(tail -n 1 "$log.lib.run")" "$log.lib"
	grep -h '^#define' "$root/src/kmod/gpubuf_compat_probed.h" | sed "s/^/# $suite: /"
	python_suite

	# The suite's own Vulkan test program (built by the check above) in
	# the guest too, chrooted into the suite's root on the host's root
	# file system: module buffers imported as dma-bufs where its lavapipe
	# takes them.
	suite_tests=$matrix/tests-$suite
	rm -rf "$suite_tests"
	mkdir -p "$suite_tests"
	cp "$tests_dir"/* "$suite_tests/"
	if [ -x "$root/src/libgpubuf/build/tests/vulkan" ] &&
		[ "${GPUBUF_VM_HOST_ROOT:-}" = 1 ]; then
		printf '%s\n' '#!/bin/sh' \
			"ASAN_OPTIONS=$asan GPUBUF_HOST_SUBROOT=$root exec /gpubuf/host-run /src/libgpubuf/build/tests/vulkan" \
			>"$suite_tests/59-lib-vulkan-$suite"
		chmod +x "$suite_tests/59-lib-vulkan-$suite"
	fi
	GPUBUF_VM_SYSROOT=$root GPUBUF_VM_KO_DIR=$root/src \
		GPUBUF_VM_OUT=$matrix/vm-$suite \
		"$top/tests/vm/run.sh" "$kdir" "$suite_tests" >"$log.tap" 2>"$log.vm"
	if ! grep -q '^1\.\.[0-9]' "$log.tap"; then
		emit 0 "$suite: the guest run produced no results" "$log.vm"
		continue
	fi
	relay "$log.tap"

	# The storage suite (tests/storage, prepared by check.sh): an NVMe
	# namespace and ext4 on virtio-blk DMA-ing into module buffers with
	# this kernel's drivers, plain and through a strict vIOMMU; it asserts
	# the io_uring form each kernel takes (plain or registered buffers).
	if [ -n "${GPUBUF_MATRIX_STORAGE:-}" ]; then
		for run in plain iommu; do
			opts=
			[ $run = iommu ] && opts=GPUBUF_VM_IOMMU=1
			# shellcheck disable=SC2086
			env $opts GPUBUF_VM_SYSROOT="$root" GPUBUF_VM_KO_DIR="$root/src" \
				GPUBUF_VM_OUT="$matrix/vm-$suite-storage-$run" \
				GPUBUF_VM_EXTRA_DIR="$GPUBUF_MATRIX_STORAGE/extra" \
				GPUBUF_VM_DISKS="nvme:$GPUBUF_MATRIX_STORAGE/raw.img virtio:$GPUBUF_MATRIX_STORAGE/ext4.img" \
				GPUBUF_VM_MODULES="nvme virtio_pci virtio_blk crc32c_generic ext4" \
				GPUBUF_VM_NIC= GPUBUF_VM_HOST_FILES= GPUBUF_VM_HOST_ROOT= \
				"$top/tests/vm/run.sh" "$kdir" "$GPUBUF_MATRIX_STORAGE/tests" \
				>"$log.storage-$run.tap" 2>"$log.storage-$run.vm"
			plain=$suite
			suite="$suite, storage, $run"
			if grep -q '^1\.\.[0-9]' "$log.storage-$run.tap"; then
				grep '^# .*by O_DIRECT$' "$matrix/vm-$plain-storage-$run/console.txt" |
					sed -n '1s/^# \(.*\)/# '"$suite"': \1/p'
				relay "$log.storage-$run.tap"
			else
				emit 0 "$suite: the guest run produced no results" "$log.storage-$run.vm"
			fi
			suite=$plain
		done
	fi

	# The suite's Vulkan test once more in a swiotlb=force guest, where
	# every DMA mapping bounces: the dma-buf imports' syncs around each
	# dispatch run there (dmabuf_operands_synced_around_dispatch).
	if [ -x "$suite_tests/59-lib-vulkan-$suite" ]; then
		sw_tests=$matrix/tests-$suite-swiotlb
		rm -rf "$sw_tests"
		mkdir -p "$sw_tests"
		cp "$suite_tests/59-lib-vulkan-$suite" \
			"$sw_tests/59-lib-vulkan-$suite-swiotlb"
		GPUBUF_VM_APPEND=swiotlb=force GPUBUF_VM_SYSROOT=$root \
			GPUBUF_VM_KO_DIR=$root/src \
			GPUBUF_VM_OUT=$matrix/vm-$suite-swiotlb \
			"$top/tests/vm/run.sh" "$kdir" "$sw_tests" \
			>"$log.swiotlb.tap" 2>"$log.swiotlb.vm"
		if grep -q '^1\.\.[0-9]' "$log.swiotlb.tap"; then
			plain=$suite
			suite="$suite, swiotlb=force"
			relay "$log.swiotlb.tap"
			suite=$plain
		else
			emit 0 "$suite: the swiotlb=force guest run produced no results" "$log.swiotlb.vm"
		fi
	fi
done
echo "1..$n"
