#!/bin/sh
# SPDX-License-Identifier: MIT
#
# One-command GPU check, for a machine with an NVIDIA GPU, its driver and
# the CUDA toolkit, lent for minutes (the gpubuf module need not be
# loadable: buffers come from the memfd backend unless GPUBUF_BACKEND
# says otherwise).
#
#   tests/gpu/run.sh [--quick]
#
# The bench runs at 512 MiB (--quick: 64 MiB; GPUBUF_GPU_SIZE=N: N MiB).
# Checks RLIMIT_MEMLOCK first (the memfd backend locks its buffers), then
# builds libgpubuf once (nvcc runs once), the tools against that build and
# the CUDA test program, all outside the source tree; runs the CUDA tests
# (tests/lib/cuda.c, unsanitized) and one `gpubuf-bench cuda` whose table
# and JSON come from the same run (--json-file); prints a one-screen
# summary. Everything stays under $GPUBUF_GPU_OUT (default
# build/gpu-results): summary.txt, build.log, cuda-tests.tap,
# bench-cuda.txt and bench-cuda.json; builds go to $GPUBUF_GPU_BUILD
# (default build/gpu).
#
# GPUBUF_GPU_STANDIN=1 runs the same against libgpubuf's stand-in driver
# (tests/cudastub; the CUDA tests' launches run on the CPU under
# tests/simt): a rehearsal of the script, not a GPU result.
#
# Exit status: 0 all ran and passed, 1 a build or test failed or the
# memlock limit is too small, 77 there is no usable GPU here (the build
# and the no-driver checks still ran).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${GPUBUF_GPU_OUT:-$top/build/gpu-results}
build=${GPUBUF_GPU_BUILD:-$top/build/gpu}
standin=${GPUBUF_GPU_STANDIN:-0}
size_mib=512
[ "${1:-}" = "--quick" ] && size_mib=64
size_mib=${GPUBUF_GPU_SIZE:-$size_mib}
size=${size_mib}M
: "${CUDA_HOME:=/usr/local/cuda}"
if [ ! -x "$CUDA_HOME/bin/nvcc" ] && command -v nvcc >/dev/null; then
	CUDA_HOME=$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)
fi
export CUDA_HOME GPUBUF_BACKEND=${GPUBUF_BACKEND:-memfd}
mkdir -p "$out" "$build"
(cd "$out" && rm -f summary.txt build.log cuda-tests.tap bench-cuda.txt \
	bench-cuda.json bench-cuda.err)
summary=$out/summary.txt
say() { echo "$*" | tee -a "$summary"; }
fail() {
	say "FAILED: $*"
	say "# results: $out"
	exit 1
}
t0=$(date +%s)

say "# gpubuf GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -r)"
say "# source: $(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)"
say "# toolkit: $("$CUDA_HOME/bin/nvcc" --version 2>/dev/null | tail -n 1)"
if [ "$standin" = 1 ]; then
	say "# STAND-IN: libgpubuf's stand-in driver, kernels on the CPU; not a GPU result"
elif command -v nvidia-smi >/dev/null; then
	say "# gpu: $(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader 2>&1 | head -n 1)"
fi

# The memfd backend mlock()s every buffer: the bench's peak is one buffer
# of --size (VmLck, measured against the stand-in), twice that here for
# safety, plus a few MiB for the tests. Found out now, not as -ENOMEM later.
ulimit -l unlimited 2>/dev/null
memlock=$(ulimit -l)
need_kib=$(((2 * size_mib + 4) * 1024))
say "# memlock limit: $memlock KiB, backend: $GPUBUF_BACKEND"
if [ "$GPUBUF_BACKEND" = memfd ] && [ "$memlock" != unlimited ] &&
	[ "$memlock" -lt "$need_kib" ]; then
	say "# The memfd backend locks its buffers: this run needs about $need_kib KiB of"
	say "# RLIMIT_MEMLOCK. Raise it (as root: ulimit -l unlimited; docker: --ulimit"
	say "# memlock=-1; systemd: LimitMEMLOCK=infinity; limits.d: '<user> - memlock"
	say "# unlimited'), or use --quick (64M), or load gpubuf.ko and set"
	say "# GPUBUF_BACKEND=module (its buffers are not counted there)."
	fail "RLIMIT_MEMLOCK $memlock KiB < $need_kib KiB"
fi

# ---- build, once ------------------------------------------------------------
jobs=$(nproc 2>/dev/null || echo 2)
lib=$build/lib
make -s -C "$top/libgpubuf" O="$lib" CUDA_HOME="$CUDA_HOME" -j"$jobs" all \
	>"$out/build.log" 2>&1 || fail "library build (see $out/build.log)"
grep -q 'CUDA .* off' "$out/build.log" &&
	fail "library built without CUDA: $(grep 'off' "$out/build.log" | head -n 1)"
# The tools link the library just built (LIB_O): no second nvcc run.
make -s -C "$top/tools" O="$build/tools" LIB_O="$lib" CUDA_HOME="$CUDA_HOME" \
	-j"$jobs" all >>"$out/build.log" 2>&1 || fail "tools build (see $out/build.log)"
# Unsanitized: ASan's shadow memory and the driver's address-space
# reservations do not mix by default.
cc -std=gnu11 -O2 -g -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -pthread \
	-I"$top/libgpubuf/include" -I"$lib/include" \
	-DGPUBUF_HAVE_CUDA -DGPUBUF_HAVE_CUDA_KERNELS \
	-idirafter "$CUDA_HOME/include" \
	-o "$build/cuda-test" "$top/tests/lib/cuda.c" "$lib/libgpubuf.a" \
	-pthread -lm -ldl >>"$out/build.log" 2>&1 || fail "test build (see $out/build.log)"
if [ "$standin" = 1 ]; then
	make -s -C "$top/libgpubuf" O="$lib" CUDA_HOME="$CUDA_HOME" \
		"$lib/cudastub/libcuda.so.1" >>"$out/build.log" 2>&1 ||
		fail "stand-in build (see $out/build.log)"
	export LD_LIBRARY_PATH="$lib/cudastub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
t_build=$(($(date +%s) - t0))

# ---- the CUDA tests -----------------------------------------------------------
t1=$(date +%s)
if [ "$standin" = 1 ]; then
	CUSTUB_EXEC=1 "$top/libgpubuf/run-tests.sh" "$build/cuda-test" >"$out/cuda-tests.tap" 2>&1
else
	"$top/libgpubuf/run-tests.sh" "$build/cuda-test" >"$out/cuda-tests.tap" 2>&1
fi
test_rc=$?
t_tests=$(($(date +%s) - t1))
if grep -q '^# not run here: .* needs an NVIDIA driver' "$out/cuda-tests.tap"; then
	say "# built in $t_build s; CUDA tests: $(tail -n 1 "$out/cuda-tests.tap")"
	say "# no usable GPU here: $(grep '^# no CUDA here' "$out/cuda-tests.tap" | head -n 1)"
	say "# results: $out"
	[ "$test_rc" = 0 ] || exit 1
	exit 77
fi

# ---- one bench run: the table on stdout, the JSON from the same run -----------
t2=$(date +%s)
LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	"$build/tools/gpubuf-bench" cuda --size "$size" \
	--json-file "$out/bench-cuda.json" >"$out/bench-cuda.txt" 2>"$out/bench-cuda.err"
bench_rc=$?
t_bench=$(($(date +%s) - t2))

# ---- one screen -------------------------------------------------------------------
say "# build: $t_build s (libgpubuf with nvcc once, tools, test program)"
say "# CUDA tests: $(tail -n 1 "$out/cuda-tests.tap") ($t_tests s)"
grep '^not ok' "$out/cuda-tests.tap" | head -n 5 | tee -a "$summary"
say "# gpubuf-bench cuda --size $size: exit $bench_rc ($t_bench s)"
grep -E '^(cuda: device|(h2d|d2h|zc_read|zc_write|gemv_zerocopy|sgemm_gpubuf|dgemm_gpubuf|gemm_cublas) )' \
	"$out/bench-cuda.txt" | cut -c1-100 | tee -a "$summary"
sed -n '/^# ratios/,$p' "$out/bench-cuda.txt" | grep -v '^#' | tee -a "$summary"
[ "$bench_rc" = 0 ] || tail -n 3 "$out/bench-cuda.err" | tee -a "$summary"
say "# total $(($(date +%s) - t0)) s; results: $out"
[ "$test_rc" = 0 ] && [ "$bench_rc" = 0 ] || exit 1
exit 0
