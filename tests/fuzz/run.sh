#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# make fuzz: build gpubuf.ko, the test modules and the fuzzer, boot a QEMU
# guest whose only suite is the fuzzer, and print its TAP (with the
# guest's dmesg check: any BUG, WARNING, Oops, KASAN or lockdep report
# fails) and a last line "N passed, N failed, N skipped". Exit 1 on failure.
# Environment: FUZZ_CALLS (1000000), FUZZ_SEED (random; printed),
# FUZZ_THREADS (4); KDIR, the kernel to build for and boot (default: the
# installed Debian headers' kernel); FUZZ_SYSROOT, a root file system
# holding another kernel (boot/, lib/modules, and kdir, its build tree),
# e.g. the debug kernel's /var/tmp/gpubuf-debug-kernel/root: the modules
# are then built from an export of this tree in FUZZ_KO_DIR (default
# build/fuzz-ko), and the guest boots with page_owner and kmemleak on;
# FUZZ_OUT, the work directory (build/fuzz-vm); FUZZ_TIMEOUT, seconds the
# guest may run (default 3600).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
calls=${FUZZ_CALLS:-1000000}
threads=${FUZZ_THREADS:-4}
seed=${FUZZ_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
sysroot=${FUZZ_SYSROOT:-}
out=${FUZZ_OUT:-$top/build/fuzz-vm}
tests=$out/tests
extra=$out/extra
timeout_s=${FUZZ_TIMEOUT:-3600}
. tests/vm/suite-lib.sh

scripts/install-deps.sh fuzz >&2 || guest_fail "Debian packages installed"
if [ -n "$sysroot" ]; then
	kdir=/kdir
	kos=${FUZZ_KO_DIR:-$top/build/fuzz-ko}
	rm -rf "$kos"
	scripts/export-tree.sh "$kos"
	guest_modules "$kos" "$sysroot$kdir" >&2 ||
		guest_fail "gpubuf.ko and the test modules build for $sysroot$kdir"
	mem=3072
	append="page_owner=on kmemleak=on"
else
	kdir=${KDIR:-$(scripts/find-kdir.sh)}
	kos=$top
	guest_modules "$kos" "$kdir" >&2 ||
		guest_fail "gpubuf.ko and the test modules build for $kdir"
	mem=2048
	append=
fi
rm -rf "$tests" "$extra"
mkdir -p "$tests" "$extra/bin"
make -s -C tests/fuzz OUT="$extra/bin" >&2 || guest_fail "the fuzzer builds"
guest_suite "$tests" 80-fuzz gpubuf_fuzz --calls "$calls" --seed "$seed" \
	--threads "$threads"

echo "# make fuzz: $calls calls, seed $seed, $threads threads, kernel ${sysroot:+$sysroot}$kdir" >&2
start=$(date +%s)
GPUBUF_VM_OUT=$out GPUBUF_VM_EXTRA_DIR=$extra GPUBUF_VM_KO_DIR=$kos \
	GPUBUF_VM_SYSROOT=$sysroot GPUBUF_VM_MEM=$mem GPUBUF_VM_APPEND="$append" \
	GPUBUF_VM_TIMEOUT=$timeout_s GPUBUF_VM_SUITE_TIMEOUT=$timeout_s \
	tests/vm/run.sh "$kdir" "$tests" >"$out.tap" || true
# The fuzzer's own comments (seed, counts by kind, violations), then TAP.
sed -n '/^@@SUITE-BEGIN 80-fuzz/,/^@@SUITE-END/{/^#/p;}' "$out/console.txt" 2>/dev/null || true
cat "$out.tap"
echo "# guest run took $(($(date +%s) - start)) s; console log in $out/console.txt"
grep -q '^1\.\.[1-9]' "$out.tap" || guest_fail "the guest produced no results"
tests/tap-summary.sh "$out.tap"
