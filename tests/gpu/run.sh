#!/bin/sh
# SPDX-License-Identifier: MIT
#
# One-command GPU check, for a machine with an NVIDIA GPU, its driver and
# the CUDA toolkit (the gpubuf module need not be loadable: buffers come
# from the memfd backend unless GPUBUF_BACKEND says otherwise).
#
#   tests/gpu/run.sh [--quick]
#
# Builds libgpubuf (kernels by the toolkit's nvcc) and the tools outside
# the source tree, runs the CUDA tests (tests/lib/cuda.c, unsanitized),
# then a short `gpubuf-bench cuda`, and prints a summary. Everything it
# prints also goes to $GPUBUF_GPU_OUT (default build/gpu-results): the TAP
# log, the bench JSON and table, and summary.txt.
#
# Exit status: 0 all ran and passed, 1 a build or test failed, 77 there is
# no usable GPU here (the build and the no-driver checks still ran).
# On one H200 it is meant to finish well within 8 minutes.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${GPUBUF_GPU_OUT:-$top/build/gpu-results}
build=${GPUBUF_GPU_BUILD:-$top/build/gpu}
size=512M
[ "${1:-}" = "--quick" ] && size=64M
: "${CUDA_HOME:=/usr/local/cuda}"
if [ ! -x "$CUDA_HOME/bin/nvcc" ] && command -v nvcc >/dev/null; then
	CUDA_HOME=$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)
fi
export CUDA_HOME GPUBUF_BACKEND=${GPUBUF_BACKEND:-memfd}
mkdir -p "$out" "$build"
summary=$out/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
fail() { say "FAILED: $*"; exit 1; }

say "# gpubuf GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -r)"
say "# source: $(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)"
say "# toolkit: $("$CUDA_HOME/bin/nvcc" --version 2>/dev/null | tail -n 1)"
if command -v nvidia-smi >/dev/null; then
	say "# gpu: $(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader 2>&1 | head -n 1)"
fi

# Page-locking the memfd backend's buffers needs RLIMIT_MEMLOCK room.
ulimit -l unlimited 2>/dev/null
say "# memlock limit: $(ulimit -l), backend: $GPUBUF_BACKEND"

t0=$(date +%s)
jobs=$(nproc 2>/dev/null || echo 2)
make -s -C "$top/libgpubuf" O="$build/lib" CUDA_HOME="$CUDA_HOME" \
	-j"$jobs" all >"$out/build.log" 2>&1 || fail "library build (see $out/build.log)"
grep -q 'CUDA .* off' "$out/build.log" && fail "library built without CUDA: $(grep 'off' "$out/build.log")"
make -s -C "$top/tools" CUDA_HOME="$CUDA_HOME" -j"$jobs" all \
	>>"$out/build.log" 2>&1 || fail "tools build (see $out/build.log)"

# The CUDA tests, unsanitized: ASan's shadow memory and the driver's
# address-space reservations do not mix by default.
cc -std=gnu11 -O2 -g -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -pthread \
	-I"$top/libgpubuf/include" -I"$build/lib/include" \
	-DGPUBUF_HAVE_CUDA -DGPUBUF_HAVE_CUDA_KERNELS \
	-idirafter "$CUDA_HOME/include" \
	-o "$build/cuda-test" "$top/tests/lib/cuda.c" "$build/lib/libgpubuf.a" \
	-pthread -lm -ldl >>"$out/build.log" 2>&1 || fail "test build (see $out/build.log)"
say "# built in $(($(date +%s) - t0)) s"

t1=$(date +%s)
"$top/libgpubuf/run-tests.sh" "$build/cuda-test" >"$out/cuda-tests.tap" 2>&1
test_rc=$?
cat "$out/cuda-tests.tap"
result=$(tail -n 1 "$out/cuda-tests.tap")
say "# CUDA tests: $result ($(($(date +%s) - t1)) s)"
if grep -q '^# not run here: .* needs an NVIDIA driver' "$out/cuda-tests.tap"; then
	say "# no usable GPU here: $(grep '^# no CUDA here' "$out/cuda-tests.tap" | head -n 1)"
	[ "$test_rc" = 0 ] || exit 1
	exit 77
fi

t2=$(date +%s)
bench=$top/tools/build/gpubuf-bench
# The tools link the tree's shared libgpubuf (tools/Makefile).
export LD_LIBRARY_PATH="$top/libgpubuf/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$bench" cuda --size "$size" >"$out/bench-cuda.txt" 2>&1
bench_rc=$?
"$bench" cuda --size "$size" --json >"$out/bench-cuda.json" 2>"$out/bench-cuda.json.err"
cat "$out/bench-cuda.txt"
say "# gpubuf-bench cuda --size $size: exit $bench_rc ($(($(date +%s) - t2)) s)"
sed -n '/^# ratios/,$p' "$out/bench-cuda.txt" >>"$summary"
say "# total $(($(date +%s) - t0)) s"
[ "$test_rc" = 0 ] && [ "$bench_rc" = 0 ] || exit 1
exit 0
