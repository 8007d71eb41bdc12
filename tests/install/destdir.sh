#!/bin/sh
# SPDX-License-Identifier: MIT
# make install into a DESTDIR installs exactly the expected files (module,
# library with its soname links, headers, gpubuf.pc, tools, every man page,
# udev, sysusers and modules-load.d files, the CDI spec), the README example builds with
# pkg-config against it, and make uninstall with the same variables removes
# every file again. Once with Debian's layout (PREFIX=/usr, multiarch
# LIBDIR), once with the defaults (/usr/local). With each, make
# install-python against that install runs the README's Python one-liner.
# Prints TAP.
# Usage: destdir.sh KDIR
set -u
kdir=$1
top=$(cd "$(dirname "$0")/../.." && pwd)
version=$(cat "$top/VERSION")
kver=$("$top/scripts/kernel-release.sh" "$kdir")
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
		for f in gpubuf.h gpubuf/version.h gpubuf/uapi.h gpubuf/tools.h \
			linux/gpubuf.h; do
			echo "${p#/}/include/$f"
		done
		echo "${p#/}/bin/gpubuf-bench"
		echo "${p#/}/bin/gpubuf-info"
		(cd "$top/man" && ls man1/*.1 man3/*.3 man4/*.4) |
			sed "s|^|${p#/}/share/man/|"
		echo usr/lib/udev/rules.d/60-gpubuf.rules
		echo usr/lib/sysusers.d/gpubuf.conf
		echo usr/lib/modules-load.d/gpubuf.conf
		echo etc/cdi/gpubuf.json
	} | sort
}

# The README's Python install steps against the DESTDIR's libgpubuf (found
# through its gpubuf.pc, as a staged build finds it), then the README's
# one-liner; make uninstall-python removes it again.
# python_layout NAME PREFIX LIBDIR_IN_DESTDIR VARS
python_layout() {
	name=$1 prefix=$2 lib=$3 vars=$4
	py=/usr/bin/python3
	site=$dest$prefix/lib/$($py -c 'import sys; print("python%d.%d" % sys.version_info[:2])')/dist-packages
	# shellcheck disable=SC2086
	if PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest \
		make -s -C "$top" install-python $vars >"$work/$name-python.log" 2>&1; then
		emit 1 "$name: make install-python $vars"
	else
		emit 0 "$name: make install-python $vars" "$work/$name-python.log"
		return
	fi
	files=$(cd "$site/gpubuf" && ls | sed 's/^_gpubuf\..*\.so$/_gpubuf.so/' | tr '\n' ' ')
	ext=$(ls "$site"/gpubuf/_gpubuf*.so)
	if [ "$files" = "__init__.py __init__.pyi _gpubuf.so py.typed safetensors.py " ] &&
		! readelf -d "$ext" | grep -Eq 'RPATH|RUNPATH' &&
		readelf -d "$ext" | grep -q 'NEEDED.*libgpubuf\.so\.'; then
		emit 1 "$name: the package is ${site#"$dest"}/gpubuf/{$files}, the extension needs libgpubuf.so.N, no RPATH"
	else
		{ echo "files: $files"; readelf -d "$ext"; } >"$work/$name-python.files"
		emit 0 "$name: the installed package's files and dynamic section" "$work/$name-python.files"
	fi
	out=$(cd / && LD_LIBRARY_PATH=$lib PYTHONPATH=$site GPUBUF_BACKEND=memfd $py -c \
		'import gpubuf, numpy as np; m = gpubuf.open().empty((4, 4)); np.asarray(m)[:] = 1; print(np.from_dlpack(m).sum())' 2>&1)
	[ "$out" = 16.0 ]
	emit $((! $?)) "$name: the README's Python one-liner prints 16.0 (got: $(echo "$out" | tail -n 1))"
	# shellcheck disable=SC2086
	make -s -C "$top" uninstall-python $vars >>"$work/$name-python.log" 2>&1 &&
		[ ! -e "$site/gpubuf" ]
	emit $((! $?)) "$name: make uninstall-python removes the package" "$work/$name-python.log"
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
	python_layout "$name" "$prefix" "$lib" "$vars"
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

# make dkms-install and dkms-uninstall refuse, before touching anything,
# when the gpubuf-dkms package owns /usr/src/gpubuf-VERSION: a dpkg that
# says so (first in PATH) stands in for the installed package.
dkms_refusal() {
	fake=$work/fake-dpkg
	mkdir -p "$fake"
	printf '#!/bin/sh\n[ "$1" = -S ] && echo "gpubuf-dkms: $2" && exit 0\nexec /usr/bin/dpkg "$@"\n' >"$fake/dpkg"
	chmod +x "$fake/dpkg"
	for t in dkms-install dkms-uninstall; do
		if PATH="$fake:$PATH" make -s -C "$top" "$t" KDIR="$kdir" \
			>"$work/$t-refused.log" 2>&1; then
			emit 0 "make $t refuses when the gpubuf-dkms package owns /usr/src/gpubuf-$version" "$work/$t-refused.log"
		elif grep -q "gpubuf: /usr/src/gpubuf-$version belongs to package gpubuf-dkms; use apt to install or remove it" "$work/$t-refused.log"; then
			emit 1 "make $t refuses when the gpubuf-dkms package owns /usr/src/gpubuf-$version, saying so"
		else
			emit 0 "make $t refuses when the gpubuf-dkms package owns /usr/src/gpubuf-$version, saying so" "$work/$t-refused.log"
		fi
	done
}

rm -rf "$work"
mkdir -p "$work"
dkms_refusal
layout debian /usr "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
layout default /usr/local /usr/local/lib
echo "1..$n"
