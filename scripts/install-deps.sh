#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian packages a make target needs, only those missing.
# Needs root for apt-get; without it, lists what is missing and fails.
#
# Usage: install-deps.sh [TARGET...]      install (default target: check)
#        install-deps.sh --list TARGET... the packages, one a line
#        install-deps.sh --commands TARGET...  the commands the packages
#                                        must provide (tests/deps.sh)
#        install-deps.sh --targets       the known targets
#
# Every package list is in the table below and nowhere else. A line is
# "TARGET pkg PACKAGE [why]", "TARGET cmd COMMAND..." (a command the
# target's scripts run, which its packages must provide; tests/deps.sh
# checks that on a PATH holding only those packages' programs) or
# "TARGET uses TARGET..." (everything of those targets too). Two
# placeholders: @kernel-headers (linux-headers-amd64 when no kernel was
# chosen and none is found) and @build-depends (debian/control's, through
# apt-get build-dep). A new make target, say bench, adds its lines here
# ("bench uses check", "bench pkg ...", "bench cmd ...") and runs
# "scripts/install-deps.sh bench" before anything else. Programs of a bare
# Debian 12 (debootstrap --variant=minbase: Priority required, and apt)
# need no line.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)

table() {
	cat <<'EOF'
# make module, make probe: kbuild against KDIR.
module   pkg make
module   pkg gcc
module   pkg @kernel-headers  linux-headers-amd64, only when no KDIR or KVER is given and find-kdir.sh finds none
module   cmd make gcc
probe    uses module
# make lib: libgpubuf. libdrm, HSA, hipcc, CUDA and Vulkan are optional there
# (nvcc, when a CUDA toolkit is found, also wants g++).
lib      pkg make
lib      pkg gcc
lib      pkg libc6-dev
lib      pkg libdlpack-dev    dlpack/dlpack.h: the DLPack export is always built
lib      pkg liburing-dev     io_uring for gpubuf_read_file() (without it: pread/pwrite only)
lib      cmd make gcc ar
# make python, make install-python: the CPython extension over libgpubuf.
# NumPy and PyTorch are optional for it (make check's tests use them).
python   uses lib
python   pkg python3          the interpreter the extension is built for
python   pkg python3-dev      Python.h
python   pkg python3-setuptools setup.py
python   cmd python3
install-python uses python
install-python cmd install
uninstall-python pkg make
uninstall-python pkg python3  PYTHON_SITEDIR comes from the interpreter
uninstall-python cmd make python3
# make install / uninstall; the DKMS variants.
install  uses module lib
install  pkg kmod             depmod after the module is installed
install  cmd install depmod
uninstall pkg make
uninstall pkg kmod            depmod after the module is removed
uninstall cmd make depmod
dkms-install uses install
dkms-install pkg dkms
dkms-install cmd dkms
dkms-uninstall uses uninstall
dkms-uninstall pkg dkms
dkms-uninstall cmd dkms
# make lint: W=1, sparse, checkpatch.
lint     uses module
lint     pkg sparse
lint     pkg linux-source-6.1 checkpatch.pl and kselftest_harness.h come from its tarball
lint     pkg xz-utils         tar unpacks linux-source-6.1.tar.xz with xz
lint     pkg perl             checkpatch.pl needs more than perl-base
lint     cmd sparse perl xz
# make deb; debian/control's Build-Depends are installed with apt-get build-dep.
deb      pkg dpkg-dev
deb      pkg debhelper
deb      pkg dh-dkms
deb      pkg lintian
deb      pkg fakeroot
deb      pkg build-essential
deb      pkg @build-depends   debian/control's Build-Depends, through apt-get build-dep
deb      cmd dpkg-buildpackage dpkg-checkbuilddeps dh lintian fakeroot
# make check: lint, build, packages, install tests, the QEMU guest.
check    uses lint lib install deb python
check    pkg g++              the C++ check of gpubuf.h and the GPU kernels run on the CPU (tests/simt)
check    pkg pkgconf          pkg-config builds the README example
check    pkg python3          libgpubuf's test generators
check    pkg cpio             the guest's initramfs
check    pkg gzip
check    pkg linux-headers-amd64
check    pkg linux-image-amd64 the guest boots Debian's own kernel
check    pkg qemu-system-x86
check    pkg busybox-static   the guest's userland
check    pkg libdrm-dev       the DRM layer and its guest test
check    pkg libhsa-runtime-dev the HSA layer
check    pkg hipcc            the AMD code objects
check    pkg libibverbs-dev   the soft-RoCE suite
check    pkg ibverbs-providers the rxe provider carried into the guest
check    pkg rdma-core
check    pkg iproute2         rdma link add in the guest
check    pkg dkms             tests/dkms-build.sh
check    pkg python3-pytest   the Python binding's tests
check    pkg python3-numpy    NumPy sharing gpubuf memory
check    pkg python3-torch    PyTorch sharing gpubuf memory
check    pkg openmpi-bin      two MPI ranks on the host over gpubuf memory (tests/cluster/host.sh)
check    pkg libopenmpi-dev   mpicc for the MPI test program and examples/mpi_gemm.c
check    pkg python3-mpi4py   examples/mpi_gemm.py, the distributed GEMM from Python
check    pkg golang-go        the Go binding: go test -race, go vet, gofmt (Go 1.19)
check    pkg libvulkan-dev    the Vulkan layer's headers and the loader
check    pkg glslang-tools    glslangValidator: the Vulkan shaders to SPIR-V
check    pkg spirv-tools      spirv-val: the SPIR-V is checked at build time
check    pkg mesa-vulkan-drivers lavapipe, the Vulkan driver on the CPU the tests run on
check    pkg vulkan-validationlayers VK_LAYER_KHRONOS_validation for one test
check    pkg libopenblas0-pthread OpenBLAS: gpubuf-bench vulkan's CPU anchor row
check    pkg prometheus-node-exporter gpubuf-info --prometheus scraped through its textfile collector
check    pkg bpftrace         the module's tracepoints read by bpftrace in the guest
check    pkg systemd          systemd-analyze security scores the packages' Prometheus unit
check    pkg e2fsprogs        mkfs.ext4 -d: the storage suite's file system image
check    cmd qemu-system-x86_64 busybox cpio gzip ldd g++ pkg-config python3 dkms dpkg-deb rdma timeout glslangValidator spirv-val go gofmt systemd-analyze mkfs.ext4
# make check-kernels: make check, then debootstrapped suites.
check-kernels uses check
check-kernels pkg debootstrap
check-kernels cmd debootstrap chroot mount mountpoint
# make check-cluster: two QEMU guests joined by a UDP socket link, Open MPI
# over UCX on soft-RoCE between them (tests/cluster/run.sh).
check-cluster uses module lib python
check-cluster pkg linux-headers-amd64
check-cluster pkg linux-image-amd64 the guests boot Debian's own kernel
check-cluster pkg qemu-system-x86
check-cluster pkg busybox-static the guests' userland
check-cluster pkg cpio
check-cluster pkg gzip
check-cluster pkg libdrm-dev     drm.h for the test helpers
check-cluster pkg libibverbs-dev gpubuf-bench rdma
check-cluster pkg ibverbs-providers the rxe provider
check-cluster pkg rdma-core
check-cluster pkg iproute2        rdma link add in the guests
check-cluster pkg openmpi-bin     mpirun and orted, run from the host's root in the guests
check-cluster pkg libopenmpi-dev  mpicc for the MPI test and the distributed GEMM example
check-cluster pkg python3-numpy   examples/mpi_gemm.py's local multiply
check-cluster pkg python3-mpi4py  examples/mpi_gemm.py between the guests
check-cluster pkg ucx-utils       ucx_info: the UCX build and transports the docs name
check-cluster pkg perftest        ib_write_bw, the anchor gpubuf-bench rdma is compared with
check-cluster cmd qemu-system-x86_64 busybox cpio gzip mpicc mpirun rdma ib_write_bw ucx_info
# make check-debug: make check, then a kernel built from linux-source-6.1.
# No dwarves: tests/vm/debug-kernel.config leaves DEBUG_INFO off, so there
# is no BTF for pahole to make; no openssl either, modules are not signed.
check-debug uses check
check-debug pkg flex          kconfig's lexer (scripts/kconfig/lexer.l)
check-debug pkg bison         kconfig's parser (scripts/kconfig/parser.y)
check-debug pkg bc            include/generated/timeconst.h
check-debug pkg libelf-dev    gelf.h: objtool (CONFIG_OBJTOOL, ORC unwinder)
check-debug pkg libssl-dev    openssl headers: certs/extract-cert (SYSTEM_TRUSTED_KEYRING)
check-debug cmd flex bison bc tar xz perl make gcc ld
# make check-install: make deb, a debootstrapped image booted in QEMU.
check-install uses deb
check-install pkg debootstrap
check-install pkg e2fsprogs   mkfs.ext4 -d and debugfs (required today, named anyway)
check-install pkg qemu-system-x86
check-install cmd debootstrap mkfs.ext4 debugfs qemu-system-x86_64 chroot timeout
# make demo: the tools here, or gpubuf.ko and the guest under QEMU.
demo     uses module lib
demo     pkg linux-headers-amd64
demo     pkg linux-image-amd64
demo     pkg qemu-system-x86
demo     pkg busybox-static
demo     pkg cpio
demo     pkg libvulkan-dev    the vulkan mode's headers
demo     pkg glslang-tools    libgpubuf's Vulkan shaders
demo     pkg spirv-tools
demo     pkg mesa-vulkan-drivers lavapipe: a Vulkan device where there is no GPU
demo     cmd qemu-system-x86_64 busybox cpio gzip
# make fuzz, make stress: gpubuf.ko, the test modules and the fuzzer or
# the stress test (kselftest programs) in the QEMU guest, as make check
# builds them.
fuzz     uses check
fuzz     cmd qemu-system-x86_64 busybox cpio gzip timeout
stress   uses check
stress   cmd qemu-system-x86_64 busybox cpio gzip timeout
# make check-deps: the slow proof in a fresh debootstrapped root.
check-deps pkg debootstrap
check-deps cmd debootstrap chroot mount
EOF
}

# rows KIND TARGET...: the KIND column of TARGET and what it uses, sorted.
rows() {
	kind=$1
	shift
	r=$(table | awk -v kind="$kind" -v want="$*" '
		/^#/ || NF < 3 { next }
		{ n[$1]++; t[$1, n[$1]] = $0 }
		function walk(tg,   i, f, k, m) {
			if (seen[tg]++) return
			if (!(tg in n)) { print "gpubuf: unknown target " tg > "/dev/stderr"; bad = 1; return }
			for (i = 1; i <= n[tg]; i++) {
				m = split(t[tg, i], f, " ")
				if (f[2] == "uses") for (k = 3; k <= m; k++) walk(f[k])
				else if (f[2] == kind && kind == "pkg") out[f[3]] = 1
				else if (f[2] == kind) for (k = 3; k <= m; k++) out[f[k]] = 1
			}
		}
		END {
			split(want, w, " ")
			for (i in w) walk(w[i])
			if (bad) exit 1
			for (p in out) print p
		}') || exit 1
	[ -z "$r" ] || printf '%s\n' "$r" | sort
}

case ${1:-} in
--targets)
	table | awk '!/^#/ && NF { print $1 }' | uniq
	exit 0 ;;
--list)
	shift
	rows pkg "$@"
	exit ;;
--commands)
	shift
	rows cmd "$@"
	exit ;;
-*)
	echo "usage: install-deps.sh [--list|--commands] [TARGET...] | --targets" >&2
	exit 2 ;;
esac
[ $# -gt 0 ] || set -- check

pkgs=$(rows pkg "$@") || exit 1
missing=
build_dep=
for p in $pkgs; do
	case $p in
	@build-depends)
		build_dep=1
		continue ;;
	@kernel-headers)
		# The caller chose a kernel, or one is there: nothing to add.
		[ -z "${KDIR:-}${KVER:-}" ] || continue
		[ -z "$("$top/scripts/find-kdir.sh")" ] || continue
		p=linux-headers-amd64 ;;
	esac
	case " $missing " in *" $p "*) continue ;; esac
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
# dpkg-checkbuilddeps is dpkg-dev's, which may be among the missing.
if [ -n "$build_dep" ] && [ -z "$missing" ] &&
	(cd "$top" && dpkg-checkbuilddeps >/dev/null 2>&1); then
	build_dep=
fi
[ -z "$missing$build_dep" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "gpubuf: missing Debian packages for $*:$missing${build_dep:+ (and the Build-Depends of debian/control)}; run as root to install" >&2
	exit 1
fi
echo "gpubuf: installing for $*:$missing${build_dep:+ and the Build-Depends of debian/control}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ -n "$missing" ]; then
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
if [ -n "$build_dep" ] && ! (cd "$top" && dpkg-checkbuilddeps >/dev/null 2>&1); then
	apt-get build-dep -y -qq "$top" >/dev/null
fi
