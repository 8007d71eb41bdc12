# SPDX-License-Identifier: GPL-2.0-only
# Sourced, from the top of the tree, by the targets that boot the QEMU
# guest (tests/vm/run.sh) with one suite of their own: make fuzz
# (tests/fuzz/run.sh) and make stress (tests/stress/run.sh).

# guest_fail REASON [TAP]: REASON as the only result, failed, on stdout
# (and in TAP), then the summary line; exit 1.
guest_fail() {
	printf 'not ok 1 - %s\n1..1\n' "$1" | tee "${2:-/dev/null}"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
}

# guest_modules KOS KDIR: gpubuf.ko and the test modules (tests/testmod)
# of the tree KOS, built for KDIR; run.sh takes both from there
# (GPUBUF_VM_KO_DIR).
guest_modules() {
	(cd "$1" && make -s module KDIR="$2" &&
		make -s -C "$2" M="$1/tests/testmod" modules)
}

# guest_suite TESTS_DIR NAME PROGRAM [ARG...]: the suite NAME runs
# /gpubuf/bin/PROGRAM with ARGs. The guest runs every file of TESTS_DIR,
# without arguments; the program travels in the extra files' bin/
# (GPUBUF_VM_EXTRA_DIR).
guest_suite() {
	gs_file=$1/$2
	shift 2
	printf '%s\n' '#!/bin/sh' "exec /gpubuf/bin/$*" >"$gs_file"
	chmod +x "$gs_file"
}
