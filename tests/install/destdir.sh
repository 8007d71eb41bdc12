#!/bin/sh
# SPDX-License-Identifier: MIT
# make install into a DESTDIR installs exactly the expected files (module,
# library with its soname links, headers, gpubuf.pc, tools, every man page,
# udev, sysusers and modules-load.d files), the README example builds with
# pkg-config against it, and make uninstall with the same variables removes
# every file again. Once with Debian's layout (PREFIX=/usr, multiarch
# LIBDIR), once with the defaults (/usr/local). Prints TAP.
# Usage: destdir.sh KDIR
set -u
kdir=$1
top=$(cd "$(dirname "$0")/../.." && pwd)
version=$(cat "$top/VERSION")
kver=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$kdir/include/generated/utsrelease.h")
work=$top/build/destdir-test
. "$top/tests/tap-emit.sh"

# Files (and links) under DIR, relative, sorted; depmod's indexes are not
# the install's own.
installed_files() {
	(cd "$1" && find . -type f -o -type l) | sed 's|^\./||' |
		grep -v "^lib/modules/$kver/modules\." | sort
}

# expected PREFIX LIBDIR: the files make install must write, sorted.
expected() {
	p=$1 l=$2
	{
		echo "lib/modules/$kver/updates/gpubuf.ko"
		for f in libgpubuf.so.$version libgpubuf.so.${version%%.*} \
			libgpubuf.so libgpubuf.a pkgconfig/gpubuf.pc; do
			echo "${l#/}/$f"
		done
		for f in gpubuf.h gpubuf/version.h gpubuf/uapi.h linux/gpubuf.h; do
			echo "${p#/}/include/$f"
		done
		echo "${p#/}/bin/gpubuf-bench"
		echo "${p#/}/bin/gpubuf-info"
		(cd "$top/man" && ls man1/*.1 man3/*.3 man4/*.4) |
			sed "s|^|${p#/}/share/man/|"
		echo usr/lib/udev/rules.d/60-gpubuf.rules
		echo usr/lib/sysusers.d/gpubuf.conf
		echo usr/lib/modules-load.d/gpubuf.conf
	} | sort
}

# layout NAME PREFIX LIBDIR
layout() {
	name=$1 prefix=$2 libdir=$3
	dest=$work/$name
	rm -rf "$dest"
	vars="DESTDIR=$dest PREFIX=$prefix LIBDIR=$libdir KDIR=$kdir"
	# shellcheck disable=SC2086
	if make -s -C "$top" install $vars >"$work/$name-install.log" 2>&1; then
		emit 1 "$name: make install $vars"
	else
		emit 0 "$name: make install $vars" "$work/$name-install.log"
		return
	fi
	expected "$prefix" "$libdir" >"$work/$name.want"
	installed_files "$dest" >"$work/$name.got"
	if diff -u "$work/$name.want" "$work/$name.got" >"$work/$name.diff"; then
		emit 1 "$name: installs exactly the $(wc -l <"$work/$name.want") expected files"
	else
		emit 0 "$name: installs exactly the $(wc -l <"$work/$name.want") expected files" "$work/$name.diff"
	fi
	lib=$dest$libdir
	if [ "$(readlink "$lib/libgpubuf.so.${version%%.*}")" = "libgpubuf.so.$version" ] &&
		[ "$(readlink "$lib/libgpubuf.so")" = "libgpubuf.so.${version%%.*}" ] &&
		objdump -p "$lib/libgpubuf.so.$version" |
		grep -q "SONAME *libgpubuf.so.${version%%.*}$"; then
		emit 1 "$name: soname libgpubuf.so.${version%%.*}, links .so.${version%%.*} -> .so.$version, .so -> .so.${version%%.*}"
	else
		emit 0 "$name: soname and links"
	fi
	# The README example, compiled as a user would, against this tree.
	if PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR=$lib/pkgconfig \
		PKG_CONFIG_SYSROOT_DIR=$dest sh -c "cc -Werror -o '$work/$name-example' \
		'$top/examples/matrix_dlpack.c' \$(pkg-config --cflags --libs gpubuf)" \
		>"$work/$name-example.log" 2>&1 &&
		LD_LIBRARY_PATH=$lib GPUBUF_BACKEND=memfd "$work/$name-example" \
		>>"$work/$name-example.log" 2>&1; then
		emit 1 "$name: the README example builds with pkg-config --cflags --libs gpubuf and runs"
	else
		emit 0 "$name: the README example builds with pkg-config --cflags --libs gpubuf and runs" "$work/$name-example.log"
	fi
	# shellcheck disable=SC2086
	if make -s -C "$top" uninstall $vars >"$work/$name-uninstall.log" 2>&1; then
		emit 1 "$name: make uninstall $vars"
	else
		emit 0 "$name: make uninstall $vars" "$work/$name-uninstall.log"
	fi
	installed_files "$dest" >"$work/$name.left"
	if [ ! -s "$work/$name.left" ]; then
		emit 1 "$name: make uninstall leaves no file"
	else
		emit 0 "$name: make uninstall leaves no file" "$work/$name.left"
	fi
}

rm -rf "$work"
mkdir -p "$work"
layout debian /usr "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
layout default /usr/local /usr/local/lib
echo "1..$n"
