#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# make stress: build gpubuf.ko, the test modules and the stress test, boot
# the QEMU guest with the stress test as its only suite for STRESS_SECONDS
# (default 300), print its TAP and "N passed, N failed, N skipped" last.
# Exits 1 on any failure, the guest's dmesg check included.
# Environment: STRESS_SECONDS, STRESS_THREADS (8), STRESS_SEED, KDIR.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
seconds=${STRESS_SECONDS:-300}
threads=${STRESS_THREADS:-8}
out=$top/build/stress
rm -rf "$out"
mkdir -p "$out/tests" "$out/extra/bin" "$out/results"
. tests/vm/suite-lib.sh

log() { echo "== $*" >&2; }
fail() { guest_fail "$*" "$out/results/stress.tap"; }

log "dependencies"
scripts/install-deps.sh stress >"$out/build.log" 2>&1 || fail "Debian packages installed (see $out/build.log)"
kdir=${KDIR:-$(scripts/find-kdir.sh)}
log "build against $kdir"
{
	tests/kernel-source-files.sh &&
	guest_modules "$top" "$kdir" &&
	make -s -C tests/stress OUT="$out/extra/bin" NAME=gpubuf_stress
} >>"$out/build.log" 2>&1 || fail "gpubuf.ko, the test modules and the stress test build (see $out/build.log)"

guest_suite "$out/tests" 85-stress gpubuf_stress --seconds "$seconds" \
	--threads "$threads" ${STRESS_SEED:+--seed "$STRESS_SEED"}

log "QEMU guest (TCG): $threads threads for $seconds s"
start=$(date +%s)
GPUBUF_VM_OUT="$top/build/vm-stress" GPUBUF_VM_EXTRA_DIR="$out/extra" \
	GPUBUF_VM_TIMEOUT=$((seconds + 900)) \
	GPUBUF_VM_SUITE_TIMEOUT=$((seconds + 600)) \
	tests/vm/run.sh "$kdir" "$out/tests" >"$out/results/stress.tap" \
	2>"$out/results/stress.log" || true
grep -q '^1\.\.[0-9]' "$out/results/stress.tap" || {
	echo "not ok - the QEMU guest run produced no results"
	sed 's/^/# /' "$out/results/stress.log"
} >>"$out/results/stress.tap"
# The counts the test printed, from the console log.
sed -n '/^# [a-zA-Z0-9/]/p' "$top/build/vm-stress/console.txt" 2>/dev/null |
	grep -v '^# Totals' || true
cat "$out/results/stress.tap"
echo "# wall time $(($(date +%s) - start)) s (guest boot, run and dmesg check)"
tests/tap-summary.sh "$out/results/stress.tap"
