#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The first, cheap stage of a make target: the part that shows whether the
# target's Debian packages are there, without its slow remainder. Run by
# tests/deps.sh on a PATH of only those packages' programs and by
# tests/deps-bare.sh in a bare Debian 12 root.
#   check-debug: tests/vm/debug-kernel.sh's configuration of linux-source-6.1
#     (defconfig, tests/vm/debug-kernel.config, olddefconfig: flex, bison,
#     gcc), then make prepare (objtool: libelf; timeconst.h: bc) and
#     certs/system_certificates.o (extract-cert: libssl), out of tree
#   lib: make -C libgpubuf without CUDA (nvcc alone would take minutes)
#   module: make module
#   python: make lib as above, then the extension against it, imported
# Exit 0 when the stage passed, 77 for a target without one, else failed.
# WORK keeps the extracted kernel source between runs.
# Usage: deps-stage.sh TARGET WORK
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
target=$1
work=$2
mkdir -p "$work"

case $target in
check-debug)
	# Kconfig, the Makefiles, scripts, tools and x86: 165 MB, not 1.3 GB.
	src=$work/linux-6.1
	tarball=/usr/src/linux-source-6.1.tar.xz
	if [ "$(cat "$src/.stamp" 2>/dev/null)" != "$(ls -l "$tarball")" ]; then
		rm -rf "$src"
		mkdir -p "$src"
		tar -xf "$tarball" -C "$src" --strip-components=1 --anchored \
			--exclude='linux-source-6.1/Documentation/*/*' \
			--exclude='linux-source-6.1/drivers/*.[ch]' \
			--exclude='linux-source-6.1/sound/*.[ch]' \
			--exclude='linux-source-6.1/fs/*.[ch]' \
			--exclude='linux-source-6.1/net/*.[ch]' \
			--exclude='linux-source-6.1/arch/[a-wy]*.[chS]' \
			--exclude='linux-source-6.1/arch/[a-wy]*.dts*' \
			--exclude='linux-source-6.1/tools/testing' \
			--exclude='linux-source-6.1/tools/perf'
		ls -l "$tarball" >"$src/.stamp"
	fi
	out=$work/kernel
	rm -rf "$out"
	mkdir -p "$out"
	cd "$src"
	make -s O="$out" defconfig
	scripts/kconfig/merge_config.sh -m -O "$out" "$out/.config" \
		"$top/tests/vm/debug-kernel.config" >/dev/null
	make -s O="$out" olddefconfig
	make -s -j2 O="$out" prepare
	make -s -j2 O="$out" certs/system_certificates.o
	for f in tools/objtool/objtool certs/extract-cert include/generated/timeconst.h; do
		[ -s "$out/$f" ] || { echo "deps-stage: no $f" >&2; exit 1; }
	done ;;
lib)
	rm -rf "${work:?}/lib"
	make -s -C "$top/libgpubuf" O="$work/lib" CUDA=no ;;
module)
	make -s -C "$top" module ;;
python)
	rm -rf "${work:?}/lib" "$work/python"
	make -s -C "$top/libgpubuf" O="$work/lib" CUDA=no
	cd "$top/bindings/python"
	GPUBUF_IN_TREE=1 GPUBUF_LIB_BUILD="$work/lib" python3 setup.py -q build \
		--build-base "$work/python/build" --build-lib "$work/python/lib"
	rm -rf gpubuf.egg-info
	# Not from here: ./gpubuf, the source package, would shadow the build.
	cd /
	PYTHONPATH="$work/python/lib" GPUBUF_BACKEND=memfd python3 -c \
		'import gpubuf; print(gpubuf.open().zeros((2, 2))[1, 1])' ;;
*)
	exit 77 ;;
esac
