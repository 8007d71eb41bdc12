#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Run test programs, pass their TAP through, and end with exactly one line
# "N passed, N failed, N skipped". POSIX sh + awk, so it also runs in a
# busybox guest. A program that exits non-zero without reporting a failure
# (crash, sanitizer abort) or reports fewer results than planned counts as
# failed; a program without a TAP plan counts as one test by its exit code.
pass=0 fail=0 skip=0
tmp=${TMPDIR:-/tmp}/gpubuf-tap.$$
trap 'rm -f "$tmp"' EXIT INT TERM
for t in "$@"; do
	echo "# running $t"
	"$t" >"$tmp" 2>&1
	rc=$?
	cat "$tmp"
	set -- $(awk '
		/^ok / { if ($0 ~ /# [Ss][Kk][Ii][Pp]/) s++; else p++ }
		/^not ok / { f++ }
		/^1\.\.[0-9]+/ { plan = substr($0, 4) + 0; has = 1 }
		END { print p + 0, f + 0, s + 0, plan + 0, has + 0 }' "$tmp")
	p=$1 f=$2 s=$3 plan=$4 has=$5
	if [ "$has" = 0 ]; then
		if [ "$rc" = 0 ]; then
			p=1
			echo "ok - $t"
		else
			f=1
			echo "not ok - $t"
		fi
	else
		missing=$((plan - p - f - s))
		if [ "$missing" -gt 0 ]; then
			echo "not ok - $t: $missing planned results missing"
			f=$((f + missing))
		fi
		if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
			echo "not ok - $t: exit status $rc with no failed result"
			f=1
		fi
	fi
	[ "$rc" = 0 ] || echo "# $t: exit status $rc"
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
