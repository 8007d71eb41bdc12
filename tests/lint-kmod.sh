#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# W=1, sparse (C=2) and checkpatch --strict over the kernel code. Prints TAP;
# any warning fails its check. Usage: lint-kmod.sh KDIR
set -u
kdir=$1
top=$(cd "$(dirname "$0")/.." && pwd)
logs=$top/build/lint
mkdir -p "$logs"
cd "$top" || exit 1
"$top/tests/kernel-source-files.sh" || exit 1

n=0
failed=0
report() { # status name log
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		failed=1
		echo "not ok $n - $2"
		sed 's/^/# /' "$3" | tail -n 40
	fi
}

# Our own objects only: filter the kernel's "Skipping BTF" chatter.
warnings() { grep -E 'warning:|error:' "$1" | grep -v '^Skipping BTF'; }

kbuild() { make -s -C "$kdir" M="$top" "$@"; }

"$top/scripts/kbuild-clean.sh" "$kdir" >/dev/null 2>&1
kbuild W=1 modules >"$logs/w1.log" 2>&1
st=$?
[ $st = 0 ] && ! warnings "$logs/w1.log" >/dev/null; report $? "kmod builds with W=1 and no warning" "$logs/w1.log"

kbuild C=2 CF="-D__CHECK_ENDIAN__" modules >"$logs/sparse.log" 2>&1
st=$?
[ $st = 0 ] && ! warnings "$logs/sparse.log" >/dev/null; report $? "kmod is sparse (C=2) clean" "$logs/sparse.log"

perl "$top/build/linux-source/scripts/checkpatch.pl" --strict --no-tree \
	--show-types --terse -f kmod/*.c kmod/*.h include/uapi/linux/gpubuf.h \
	tests/testmod/*.c tests/testmod/*.h >"$logs/checkpatch.log" 2>&1
# checkpatch's exit status ignores CHECK-level findings; --strict wants none.
! grep -qE ': (ERROR|WARNING|CHECK):' "$logs/checkpatch.log"
report $? "checkpatch --strict clean (kmod, uapi, test modules)" "$logs/checkpatch.log"

echo "1..$n"
exit $failed
