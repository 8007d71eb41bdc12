#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# make check: install what is missing, lint the kernel code, build the
# module, the probe module and every test, run the library's host tests,
# boot the QEMU guest with all suites, and sum every TAP result into
# "N passed, N failed, N skipped" (the last line; exit 1 on any failure).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
results=$top/build/results
guest_tests=$top/build/guest-tests
rm -rf "$results" "$guest_tests"
mkdir -p "$results" "$guest_tests"

log() { echo "== $*" >&2; }

# The project's own builds treat warnings as errors; a plain "make" of the
# library or the tools does not (a user's or a distribution's flags).
WERROR=${WERROR--Werror}
export WERROR

# A build step that fails is a failed result, not a silent stop.
steps=0
step() { # name command...
	name=$1
	shift
	steps=$((steps + 1))
	if "$@" >"$results/step-$steps.log" 2>&1; then
		echo "ok $steps - $name" >>"$results/00-build.tap"
		return 0
	fi
	echo "not ok $steps - $name" >>"$results/00-build.tap"
	sed 's/^/# /' "$results/step-$steps.log" | tail -n 30 >>"$results/00-build.tap"
	log "FAILED: $name (see $results/step-$steps.log)"
	return 1
}

finish() {
	echo "1..$steps" >>"$results/00-build.tap"
	for f in "$results"/*.tap; do
		echo "# --- ${f##*/}"
		cat "$f"
	done
	tests/tap-summary.sh "$results"/*.tap
	exit $?
}

log "dependencies"
# make check-kernels and check-debug need more than make check.
deps_targets="check${GPUBUF_KERNEL_SUITES:+ check-kernels}${GPUBUF_DEBUG_KERNEL:+ check-debug}"
# shellcheck disable=SC2086
step "Debian packages installed ($deps_targets)" scripts/install-deps.sh $deps_targets || finish
# Every target's package list against what the target runs (tests/deps.sh).
tests/deps.sh >"$results/05-deps.tap" 2>&1
kdir=${KDIR:-$(scripts/find-kdir.sh)}
log "kernel build directory: $kdir"
step "kernel source files for the harness and checkpatch" \
	tests/kernel-source-files.sh || finish
step "compat probes against $kdir" make -s probe KDIR="$kdir" || finish

step "dkms.conf PACKAGE_VERSION equals VERSION" \
	grep -qx "PACKAGE_VERSION=\"$(cat VERSION)\"" dkms.conf

log "kmod lint (W=1, sparse, checkpatch --strict)"
tests/lint-kmod.sh "$kdir" >"$results/10-kmod-lint.tap" 2>&1
# No test asserts a time or a speed (docs/testing.md).
tests/lint-timing.sh >"$results/11-timing-lint.tap" 2>&1
# How a guest's console becomes results: cut-off guests and stuck suites fail.
sh tests/vm/test-guest-tap.sh >"$results/12-guest-tap.tap" 2>&1

log "build"
step "gpubuf.ko builds" make -s module KDIR="$kdir" || finish
step "test modules (gpubuf_pinprobe.ko, gpubuf_fakeabi.ko) build" \
	make -s -C "$kdir" M="$top/tests/testmod" modules || finish
log "install and packages"
tests/install/destdir.sh "$kdir" >"$results/15-install-destdir.tap" 2>&1
if step "make deb: gpubuf-dkms, libgpubuf0, libgpubuf-dev, gpubuf-tools, python3-gpubuf; lintian clean" \
	scripts/build-deb.sh; then
	step "DKMS builds gpubuf.ko from the gpubuf-dkms package's source" \
		tests/dkms-build.sh "$kdir" "build/deb/gpubuf-dkms_$(cat VERSION)_all.deb"
	# What check-install's offline image must carry for them, checked
	# here, where a new dependency is cheap to catch.
	# shellcheck disable=SC2046
	tests/install/deps-guard.sh $(for p in $(sed -n 's/^Package: *//p' debian/control); do
		ls build/deb/"${p}_$(cat VERSION)"_*.deb; done) >"$results/16-deb-deps.tap" 2>&1
fi
step "kselftest suites build" make -s -C tests/selftests OUT="$guest_tests" || finish
numa_tests=$top/build/guest-tests-numa
rm -rf "$numa_tests"
step "kselftest suites of the two-node guest build" \
	make -s -C tests/selftests numa OUT="$numa_tests"
# Buffers near devices on both nodes (29-near: dynamic, for libibverbs)
# and gpubuf-info --topology there (29-near-info).
step "near-the-device suite of the two-node guest builds" \
	make -s -C tests/rdma near OUT="$numa_tests"
cp tests/tools/near-guest.sh "$numa_tests/29-near-info"
# A short fuzzer run (its default 50000 calls) with the suites; make fuzz
# runs a long one.
step "fuzzer builds" make -s -C tests/fuzz OUT="$guest_tests" NAME=80-fuzz || finish
# A short stress run (25 s by default) between the suites and 90-unload.
step "stress test builds" make -s -C tests/stress OUT="$guest_tests" NAME=85-stress || finish
# The RDMA suite links libibverbs dynamically (it dlopen()s its provider).
step "RDMA suite builds (dynamic, libibverbs)" \
	make -s -C tests/rdma OUT="$guest_tests" NAME=45-rdma

if [ -f libgpubuf/Makefile ]; then
	log "libgpubuf host tests"
	# run-tests.sh turns crashes and missing results into "not ok" lines.
	make -s --no-print-directory -C libgpubuf check \
		>"$results/20-libgpubuf-host.tap" 2>&1 ||
		echo "not ok - make -C libgpubuf check failed" >>"$results/20-libgpubuf-host.tap"
	# Distributions package with -flto, which drops top-level .symver
	# directives: the versioned exports must survive it.
	rm -rf "$top/build/lib-lto"
	step "libgpubuf builds with -flto and exports what libgpubuf.map promises" \
		sh -c 'make -s -C libgpubuf O="$1" CFLAGS="-O2 -flto" &&
			libgpubuf/check-symbols.sh "$1/libgpubuf.so.$2"' \
		sh "$top/build/lib-lto" "$(cat VERSION)"
	# A user's or a distribution's own flags: no -Werror there, and the
	# shared library links with CFLAGS (a sanitizer's runtime). GCC 12
	# at -O1 used to stop on -Werror=maybe-uninitialized in hsa/.
	rm -rf "$top/build/lib-userflags"
	step "libgpubuf builds with a user's CFLAGS (-O1 -g -fsanitize=address,undefined)" \
		sh -c 'make -s -C libgpubuf O="$1" WERROR= \
			CFLAGS="-O1 -g -fsanitize=address,undefined" all' \
		sh "$top/build/lib-userflags"
	# Without a CUDA toolkit the library still builds, says so once,
	# exports the same symbols and its CUDA calls answer -EOPNOTSUPP.
	rm -rf "$top/build/lib-nocuda"
	step "libgpubuf builds without a CUDA toolkit and says so once" \
		sh -c 'make -C libgpubuf O="$1" CUDA_HOME=/nonexistent all tests >"$1.log" 2>&1 &&
			[ "$(grep -c "CUDA support off: no /nonexistent/include/cuda.h" "$1.log")" = 1 ] &&
			libgpubuf/check-symbols.sh "$1/libgpubuf.so.$2" &&
			GPUBUF_BACKEND=memfd libgpubuf/run-tests.sh "$1/tests/cuda"' \
		sh "$top/build/lib-nocuda" "$(cat VERSION)"
	# Without libhsa-runtime-dev's headers likewise: one line, the same
	# exports, HSA calls answer -EOPNOTSUPP (CUDA off too, to skip nvcc).
	rm -rf "$top/build/lib-nohsa"
	step "libgpubuf builds without HSA headers and says so once" \
		sh -c 'make -C libgpubuf O="$1" HSA_INCLUDE=/nonexistent CUDA=no all tests >"$1.log" 2>&1 &&
			[ "$(grep -c "HSA support off: no /nonexistent/hsa/hsa.h" "$1.log")" = 1 ] &&
			libgpubuf/check-symbols.sh "$1/libgpubuf.so.$2" &&
			GPUBUF_BACKEND=memfd libgpubuf/run-tests.sh "$1/tests/hsa" "$1/tests/dlpack"' \
		sh "$top/build/lib-nohsa" "$(cat VERSION)"
	# Without libvulkan-dev's headers, and without glslangValidator: one
	# line each, the same exports; the Vulkan calls answer -EOPNOTSUPP
	# (all of them, or GEMV/GEMM), and the Vulkan test program's
	# device-free cases pass.
	rm -rf "$top/build/lib-novulkan" "$top/build/lib-noglslang"
	step "libgpubuf builds without Vulkan headers, and without glslangValidator, and says so once" \
		sh -c 'make -C libgpubuf O="$1" VULKAN_INCLUDE=/nonexistent CUDA=no HSA=no all tests >"$1.log" 2>&1 &&
			[ "$(grep -c "Vulkan support off: no /nonexistent/vulkan/vulkan.h" "$1.log")" = 1 ] &&
			libgpubuf/check-symbols.sh "$1/libgpubuf.so.$3" &&
			GPUBUF_BACKEND=memfd libgpubuf/run-tests.sh "$1/tests/vulkan" &&
			make -C libgpubuf O="$2" GLSLANG=/nonexistent/glslangValidator CUDA=no HSA=no all >"$2.log" 2>&1 &&
			[ "$(grep -c "Vulkan kernels off: no /nonexistent/glslangValidator" "$2.log")" = 1 ] &&
			! nm "$2/libgpubuf.a" | grep -q gpubuf_vk_spirv &&
			libgpubuf/check-symbols.sh "$2/libgpubuf.so.$3"' \
		sh "$top/build/lib-novulkan" "$top/build/lib-noglslang" "$(cat VERSION)"
	# Without hipcc the library still builds, says so once, embeds no
	# AMD code object and exports the same symbols.
	rm -rf "$top/build/lib-nohipcc"
	step "libgpubuf builds without hipcc and says so once" \
		sh -c 'make -C libgpubuf O="$1" HIPCC=/nonexistent/hipcc all >"$1.log" 2>&1 &&
			[ "$(grep -c "HSA kernels off: no /nonexistent/hipcc" "$1.log")" = 1 ] &&
			! nm "$1/libgpubuf.a" | grep -q gpubuf_hsa_codes &&
			libgpubuf/check-symbols.sh "$1/libgpubuf.so.$2"' \
		sh "$top/build/lib-nohipcc" "$(cat VERSION)"
	step "libgpubuf guest tests build" \
		make -s -C libgpubuf tests-static OUT="$guest_tests" PREFIX_TESTS=50-lib- || finish
	# Without libdrm's headers the library still builds, says so once,
	# exports the same symbols and its DRM calls answer as documented.
	rm -rf "$top/build/lib-nodrm"
	step "libgpubuf builds without libdrm's headers and says so once" \
		sh -c 'make -C libgpubuf O="$1" CUDA=no DRM_INCLUDE=/nonexistent all tests >"$1.log" 2>&1 &&
			[ "$(grep -c "DRM support off: no /nonexistent/xf86drm.h" "$1.log")" = 1 ] &&
			libgpubuf/check-symbols.sh "$1/libgpubuf.so.$2" &&
			GPUBUF_BACKEND=memfd libgpubuf/run-tests.sh "$1/tests/drm"' \
		sh "$top/build/lib-nodrm" "$(cat VERSION)"
	# libgpubuf dlopen()s libdrm.so.2 and libdrm_amdgpu.so.1, so ldd of
	# 50-lib-drm does not name them: the guest gets them from the host.
	# A second run puts a stand-in libdrm.so.2 without libdrm's functions
	# first on LD_LIBRARY_PATH and expects -ENODEV. The stand-in goes to
	# /gpubuf/drmstub through the extra-files directory (below): a host path
	# could be under /tmp, which the guest hides under its own tmpfs.
	drm_stub=$top/build/drmstub
	rm -rf "$drm_stub"
	step "stand-in libdrm.so.2 for the no-libdrm guest run builds" \
		sh -c 'mkdir -p "$1" && ${CC:-cc} -shared -fPIC -Wl,-soname,libdrm.so.2 -o "$1/libdrm.so.2" -x c /dev/null' \
		sh "$drm_stub" || finish
	printf '%s\n' '#!/bin/sh' \
		"LD_LIBRARY_PATH=/gpubuf/drmstub GPUBUF_TEST_NO_LIBDRM=1 exec /gpubuf/tests/50-lib-drm" \
		>"$guest_tests/51-lib-drm-no-libdrm"
	chmod +x "$guest_tests/51-lib-drm-no-libdrm"
	drm_libs=
	for l in libdrm.so.2 libdrm_amdgpu.so.1; do
		drm_libs="$drm_libs $(realpath -s "$(${CC:-cc} -print-file-name=$l)")"
	done
	drm_host_files="$drm_libs"
fi

# The Python binding against the tree's libgpubuf, on the memfd backend
# here (gpubuf.ko cannot be loaded on the host); the guest runs the same
# tests on the module backend (65-python, below).
python_ok=
if [ -f bindings/python/run-tests.sh ]; then
	log "Python binding host tests (memfd backend)"
	# Private names come and go between CPython releases: 3.13 removed
	# _PyLong_AsInt, and the extension then failed to build on trixie.
	step "the Python extension calls no private CPython function (_Py...)" \
		sh -c '! grep -nE "(^|[^A-Za-z0-9_])_Py[A-Za-z0-9_]*[[:space:]]*\(" bindings/python/src/*.c'
	if step "Python extension builds against the tree's libgpubuf" \
		bindings/python/run-tests.sh build "$top/build/python"; then
		python_ok=1
		GPUBUF_BACKEND=memfd bindings/python/run-tests.sh run "$top/build/python" \
			>"$results/22-python-host.tap" 2>&1
	fi
	# The runner itself: stopped by a time limit, it must fail.
	sh bindings/python/test-run-tests.sh >"$results/22-python-runner.tap" 2>&1
fi

# The Go binding against the tree's libgpubuf, on the memfd backend here,
# under the race detector and GODEBUG=cgocheck=2 (with gofmt, go vet and
# the example); the guest runs the same test binary on the module backend
# (66-go, below), so it needs no Go toolchain.
go_ok=
if [ -f bindings/go/run-tests.sh ]; then
	log "Go binding host tests (memfd backend, -race, cgocheck=2)"
	if step "Go test binary and example build against the tree's libgpubuf" \
		bindings/go/run-tests.sh build "$top/build/go"; then
		go_ok=1
		GPUBUF_BACKEND=memfd bindings/go/run-tests.sh host "$top/build/go" \
			>"$results/23-go-host.tap" 2>&1
	fi
fi

# MPI over libgpubuf buffers, two ranks on this machine (memfd backend,
# UCX's shared-memory transports): the cluster's test program and the
# distributed GEMM example. make check-cluster runs them between two
# guests over soft-RoCE, with the zero-copy checks.
if [ -f tests/cluster/Makefile ]; then
	log "MPI on the host (two ranks, memfd backend)"
	if step "MPI test program and examples/mpi_gemm.c build (mpicc)" \
		make -s -C tests/cluster OUT="$top/build/cluster-host"; then
		tests/cluster/host.sh "$top/build/cluster-host" test >"$results/24-mpi-host.tap" 2>&1
		tests/cluster/host.sh "$top/build/cluster-host" gemm >"$results/24-mpi-gemm-host.tap" 2>&1
	fi
	# examples/mpi_gemm.py: the same GEMM through mpi4py and the extension.
	if [ -n "$python_ok" ]; then
		tests/cluster/host.sh "$top/build/cluster-host" gemm-py "$top/build/python/lib" \
			>"$results/24-mpi-gemm-py-host.tap" 2>&1
	fi
fi

if [ -f tools/Makefile ]; then
	log "tools host tests"
	make -s --no-print-directory -C tools check >"$results/25-tools-host.tap" 2>&1 ||
		echo "not ok - make -C tools check failed" >>"$results/25-tools-host.tap"
	# The guest runs every file in its tests directory: the tools go to
	# /gpubuf/bin through the extra-files directory, their test to tests.
	rm -rf "$top/build/guest-extra"
	rm -rf "$top/build/tools-nodrm"
	step "tools build without libdrm's drm.h, say so once, and the drm mode says why" \
		sh -c 'make -C tools O="$1" DRM_UAPI_INCLUDE=/nonexistent >"$1.log" 2>&1 &&
			[ "$(grep -c "drm mode off: no /nonexistent/drm.h" "$1.log")" = 1 ] &&
			{ LD_LIBRARY_PATH=libgpubuf/build GPUBUF_BACKEND=memfd \
				"$1/gpubuf-bench" drm >"$1.out" 2>&1; [ $? = 77 ]; } &&
			grep -q "drm: unavailable: gpubuf-bench was built without libdrm" "$1.out"' \
		sh "$top/build/tools-nodrm"
	step "tools build static for the guest" \
		make -s -C tools static OUT="$top/build/guest-extra/bin" || finish
	cp tests/tools/guest.sh "$guest_tests/70-tools"
	export GPUBUF_VM_EXTRA_DIR="$top/build/guest-extra"
fi

# The HSA bookkeeping tests again in the guest, on module buffers: dynamic
# programs that find the stand-in runtime in /gpubuf/hsastub (RUNPATH).
if [ -f libgpubuf/Makefile ]; then
	step "HSA stand-in tests build for the guest" \
		make -s -C libgpubuf hsastub-guest OUT="$guest_tests" \
			LIBOUT="$top/build/guest-extra/hsastub" PREFIX_TESTS=52-hsa-stub- &&
		export GPUBUF_VM_EXTRA_DIR="$top/build/guest-extra"
	# The CUDA stand-in's too: only there can its read-only dma-buf cases run.
	if [ -f libgpubuf/build/cudastub/libcuda.so.1 ]; then
		step "CUDA stand-in tests build for the guest" \
			make -s -C libgpubuf cudastub-guest OUT="$guest_tests" \
				LIBOUT="$top/build/guest-extra/cudastub" PREFIX_TESTS=53-cuda-stub- &&
			export GPUBUF_VM_EXTRA_DIR="$top/build/guest-extra"
	fi
	mkdir -p "$top/build/guest-extra/drmstub"
	cp "$drm_stub/libdrm.so.2" "$top/build/guest-extra/drmstub/"
	export GPUBUF_VM_EXTRA_DIR="$top/build/guest-extra"
	# The amdgpu path on vgem, with stand-ins for libdrm and libdrm_amdgpu
	# (tests/amdgpustub), twice: a libdrm_amdgpu with and one without
	# amdgpu_device_initialize2. The program moves beside them (run
	# without them, it has nothing to test).
	if step "stand-in libdrm and libdrm_amdgpu for the guest's amdgpu runs build" \
		make -s -C libgpubuf amdgpustub-guest LIBOUT="$top/build/guest-extra"; then
		mv "$guest_tests/50-lib-amdgpu" "$top/build/guest-extra/amdgpustub/test-amdgpu"
		for run in amdgpustub:56-lib-amdgpu amdgpustub-old:57-lib-amdgpu-libdrm-2.4.114; do
			printf '%s\n' '#!/bin/sh' \
				"LD_LIBRARY_PATH=/gpubuf/${run%%:*} exec /gpubuf/amdgpustub/test-amdgpu" \
				>"$guest_tests/${run#*:}"
			chmod +x "$guest_tests/${run#*:}"
		done
	fi
fi

# The Vulkan tests again in the guest (58-lib-vulkan), on the module
# backend: the host's Vulkan loader, lavapipe and validation layer run
# there from the host's root file system (GPUBUF_VM_HOST_ROOT), the test
# program travels in the initramfs.
vm_host_root=
if [ -f libgpubuf/Makefile ] &&
	step "Vulkan test program for the guest builds" \
		make -s -C libgpubuf hostroot-guest OUT="$top/build/guest-extra/hostroot"; then
	printf '%s\n' '#!/bin/sh' \
		'# The Vulkan tests on the module backend, with the host'"'"'s Vulkan (tests/check.sh).' \
		'exec /gpubuf/host-run /gpubuf/hostroot/test-vulkan' \
		>"$guest_tests/58-lib-vulkan"
	# The C library failures of tests/lib/faults.c on the module backend,
	# with the import of a module dma-buf and the DRM import on vgem.
	printf '%s\n' '#!/bin/sh' \
		'exec /gpubuf/host-run /gpubuf/hostroot/test-faults' \
		>"$guest_tests/59-lib-faults"
	# Two Vulkan devices splitting one GEMM over module buffers.
	printf '%s\n' '#!/bin/sh' \
		'exec /gpubuf/host-run /gpubuf/hostroot/test-multi_device' \
		>"$guest_tests/58-lib-multi-device"
	chmod +x "$guest_tests/58-lib-vulkan" "$guest_tests/59-lib-faults" \
		"$guest_tests/58-lib-multi-device"
	export GPUBUF_VM_EXTRA_DIR="$top/build/guest-extra"
	vm_host_root=1
fi

# gpubuf-bench's hsa mode on the stand-in runtime in the guest (70-tools):
# the dynamic build, as a static one cannot dlopen.
if [ -f tools/Makefile ] && [ -f "$top/build/guest-extra/hsastub/libhsa-runtime64.so.1" ]; then
	# It links the shared libgpubuf (tools/Makefile), which ldd cannot
	# find on the host for run.sh to carry: it travels beside the tool.
	step "dynamic gpubuf-bench for the guest's HSA stand-in run" \
		sh -c 'mkdir -p "$1" && cp tools/build/gpubuf-bench "$1/" &&
			cp -L libgpubuf/build/libgpubuf.so.0 "$1/"' sh \
		"$top/build/guest-extra/hsa-bin"
fi

# gpubuf-bench rdma --serve/--peer on soft-RoCE in the guest (46-bench-rdma):
# the dynamic build, as a static one cannot dlopen libibverbs (which the
# rxe provider below brings along), libgpubuf beside it, and the stand-in
# peer from tests/rdma that tries what the server's rkeys allow.
if [ -f tools/Makefile ] &&
	step "gpubuf-bench rdma guest suite: dynamic gpubuf-bench and the stand-in peer" \
		sh -c 'mkdir -p "$1" && cp tools/build/gpubuf-bench "$1/" &&
			cp -L libgpubuf/build/libgpubuf.so.0 "$1/" &&
			make -s -C tests/rdma bench-peer OUT="$1"' sh \
		"$top/build/guest-extra/rdma-bin"; then
	cp tests/tools/rdma-guest.sh "$guest_tests/46-bench-rdma"
	export GPUBUF_VM_EXTRA_DIR="$top/build/guest-extra"
fi

# The Python tests again in the guest, on the module backend (65-python):
# the host's Python, NumPy and PyTorch run there from the host's root file
# system (GPUBUF_VM_HOST_ROOT: a read-only virtio-9p share), while the
# extension, its tests and libgpubuf travel in the initramfs, so that the
# guest needs no host path (a clone under /tmp would be hidden by the
# guest's own /tmp).
if [ -n "$python_ok" ]; then
	pyg=$top/build/guest-extra/python
	rm -rf "$pyg"
	mkdir -p "$pyg/libgpubuf"
	cp -r "$top/build/python/lib" bindings/python/tests bindings/python/run-tests.sh "$pyg/"
	rm -rf "$pyg/tests/__pycache__"
	cp -L libgpubuf/build/libgpubuf.so.0 "$pyg/libgpubuf/"
	for stub in cudastub/libcuda.so.1 hsastub/libhsa-runtime64.so.1; do
		if [ -f "libgpubuf/build/$stub" ]; then
			mkdir -p "$pyg/libgpubuf/${stub%/*}"
			cp "libgpubuf/build/$stub" "$pyg/libgpubuf/$stub"
		fi
	done
	printf '%s\n' '#!/bin/sh' \
		'# The Python tests on the module backend, with the host'"'"'s Python (tests/check.sh).' \
		'LD_LIBRARY_PATH=/gpubuf/python/libgpubuf GPUBUF_LIB_BUILD=/gpubuf/python/libgpubuf \' \
		'	exec /gpubuf/host-run /bin/sh /gpubuf/python/run-tests.sh run /gpubuf/python' \
		>"$guest_tests/65-python"
	chmod +x "$guest_tests/65-python"
	export GPUBUF_VM_EXTRA_DIR="$top/build/guest-extra"
	vm_host_root=1
fi

# The Go tests again in the guest, on the module backend (66-go): the test
# binary built on the host, the example, libgpubuf and the stand-ins travel
# in the initramfs; busybox runs the script and its TAP converter.
if [ -n "$go_ok" ]; then
	gog=$top/build/guest-extra/go
	rm -rf "$gog"
	cp -r "$top/build/go" "$gog"
	cp bindings/go/run-tests.sh bindings/go/tap.awk "$gog/"
	printf '%s\n' '#!/bin/sh' \
		'# The Go tests on the module backend (tests/check.sh).' \
		'exec /bin/sh /gpubuf/go/run-tests.sh run /gpubuf/go' \
		>"$guest_tests/66-go"
	chmod +x "$guest_tests/66-go"
	export GPUBUF_VM_EXTRA_DIR="$top/build/guest-extra"
fi

# Boot a guest on the suites in TESTS_DIR, with VAR=VALUE settings for
# tests/vm/run.sh; its TAP goes to TAP with PREFIX before each description.
# A run that printed no plan is a failure, with run.sh's messages.
guest_run() { # TAP TESTS_DIR PREFIX [VAR=VALUE...]
	tap=$1 dir=$2 prefix=$3
	shift 3
	env "$@" tests/vm/run.sh "$kdir" "$dir" 2>"$tap.log" |
		sed -E "s/^((not )?ok [0-9]+ - )/\\1$prefix/" >"$tap"
	grep -q '^1\.\.[0-9]' "$tap" || {
		echo "not ok - the QEMU guest run ${prefix}produced no results"
		sed 's/^/# /' "$tap.log"
	} >>"$tap"
}

# Soft-RoCE for 45-rdma and 46-bench-rdma: an e1000 NIC for rdma_rxe to
# bind to, the modules it needs (crc32_generic: rxe of 6.1 asks the crypto
# API for crc32, which the guest cannot autoload), the rxe provider
# libibverbs dlopen()s, its driver file, and iproute2's rdma tool for
# "rdma link add".
rxe_provider=$(ls /usr/lib/*/libibverbs/librxe-rdmav*.so 2>/dev/null | head -n 1)
vm_nic=1
vm_modules="${vm_modules:-} e1000 crc32_generic rdma_rxe ib_uverbs"
vm_host_files="${drm_host_files:-} ${rxe_provider:-/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so}
	/etc/libibverbs.d/rxe.driver $(command -v rdma || echo /usr/bin/rdma)"

log "QEMU guest (TCG): $(ls "$guest_tests" | tr '\n' ' ')"
guest_run "$results/50-guest.tap" "$guest_tests" "" \
	GPUBUF_VM_NIC="$vm_nic" GPUBUF_VM_MODULES="$vm_modules" \
	GPUBUF_VM_HOST_FILES="$vm_host_files" GPUBUF_VM_HOST_ROOT="$vm_host_root"

# The DMA suites again with every mapping bounce-buffered, as in SEV/TDX
# confidential guests: swiotlb=force caps what one DMA mapping may span.
log "QEMU guest (TCG), swiotlb=force: DMA suites"
swiotlb_tests=$top/build/guest-tests-swiotlb
rm -rf "$swiotlb_tests"
mkdir -p "$swiotlb_tests"
cp "$guest_tests"/20-mem "$guest_tests"/30-gpu-path "$guest_tests"/35-dma \
	"$guest_tests"/38-trace "$swiotlb_tests"/
guest_run "$results/55-guest-swiotlb.tap" "$swiotlb_tests" "swiotlb=force: " \
	GPUBUF_VM_OUT="$top/build/vm-swiotlb" GPUBUF_VM_APPEND=swiotlb=force \
	GPUBUF_VM_EXTRA_DIR=

# A real block device DMA-ing into gpubuf.ko's buffers (tests/storage): an
# emulated NVMe namespace holding a pattern raw and an ext4 file system on
# a virtio-blk disk, read with gpubuf_read_file(); plain, with every DMA
# bounced (swiotlb=force), and through a strict vIOMMU.
storage=$top/build/storage
if step "the storage suite's program and disk images" sh -c '
	rm -rf "$1" && mkdir -p "$1/extra/storage" "$1/tests" "$1/fs" &&
	make -s -C libgpubuf storage-guest OUT="$1/extra/storage" &&
	cp tests/storage/guest.sh "$1/tests/57-storage" &&
	"$1/extra/storage/storage_guest" --make "$1/raw.img" 67108864 &&
	"$1/extra/storage/storage_guest" --make "$1/fs/data.bin" 16778000 &&
	mkfs.ext4 -q -F -b 4096 -d "$1/fs" "$1/ext4.img" 64M' sh "$storage"; then
	storage_ok=1
	for run in plain swiotlb iommu; do
		case $run in
		plain) opts= ;;
		swiotlb) opts=GPUBUF_VM_APPEND=swiotlb=force ;;
		iommu) opts=GPUBUF_VM_IOMMU=1 ;;
		esac
		log "QEMU guest (TCG), NVMe and virtio-blk disks: $run"
		# shellcheck disable=SC2086
		guest_run "$results/57-guest-storage-$run.tap" "$storage/tests" "storage, $run: " \
			GPUBUF_VM_OUT="$top/build/vm-storage-$run" \
			GPUBUF_VM_EXTRA_DIR="$storage/extra" \
			GPUBUF_VM_DISKS="nvme:$storage/raw.img virtio:$storage/ext4.img" \
			GPUBUF_VM_MODULES="nvme virtio_pci virtio_blk crc32c_generic ext4" $opts
	done
fi

# Two NUMA nodes with memory (one CPU each): where the reserve's pages come
# from under memory policies, cpusets and explicit nodes; and devices on
# each node's PCI Express expander bridge (an e1000e with soft-RoCE and a
# virtio-gpu on node 1, a bochs-display on node 0): buffers near them.
# The static tools (guest-extra/bin) give gpubuf-info --topology there.
log "QEMU guest (TCG), two NUMA nodes: $(ls "$numa_tests" | tr '\n' ' ')"
guest_run "$results/56-guest-numa.tap" "$numa_tests" "two nodes: " \
	GPUBUF_VM_OUT="$top/build/vm-numa" GPUBUF_VM_NUMA=1 GPUBUF_VM_MEM=2048 \
	GPUBUF_VM_NUMA_DEVICES=1 \
	GPUBUF_VM_MODULES="e1000e virtio_pci virtio-gpu bochs crc32_generic rdma_rxe ib_uverbs" \
	GPUBUF_VM_HOST_FILES="$vm_host_files" \
	GPUBUF_VM_EXTRA_DIR="$top/build/guest-extra"

# Other Debian kernels (make check-kernels): needs the network to debootstrap.
if [ -n "${GPUBUF_KERNEL_SUITES:-}" ]; then
	log "kernel matrix: $GPUBUF_KERNEL_SUITES"
	# shellcheck disable=SC2086
	GPUBUF_VM_NIC="$vm_nic" GPUBUF_VM_MODULES="$vm_modules" \
		GPUBUF_VM_HOST_FILES="$vm_host_files" GPUBUF_VM_HOST_ROOT="$vm_host_root" \
		GPUBUF_MATRIX_STORAGE=${storage_ok:+$storage} \
		tests/kernel-matrix.sh "$guest_tests" $GPUBUF_KERNEL_SUITES \
		>"$results/60-kernel-matrix.tap"
fi

# A KASAN/kmemleak/lockdep kernel built here (make check-debug): slow.
if [ -n "${GPUBUF_DEBUG_KERNEL:-}" ]; then
	log "debug kernel (KASAN, kmemleak, lockdep, page_owner)"
	GPUBUF_VM_NIC="$vm_nic" GPUBUF_VM_MODULES="$vm_modules" \
		GPUBUF_VM_HOST_FILES="$vm_host_files" GPUBUF_VM_HOST_ROOT="$vm_host_root" \
		tests/vm/debug-kernel.sh "$guest_tests" >"$results/70-debug-kernel.tap"
fi
finish
