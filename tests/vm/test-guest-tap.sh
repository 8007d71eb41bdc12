#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# guest-tap.awk's verdicts on consoles that did not end well, fed made-up
# console logs: a guest cut off by the host's time limit must fail with
# the console's last lines (the CI report of a hung swiotlb guest showed
# only "qemu exit 124", nothing of where it stopped); a suite whose
# watchdog fired (init.sh) must fail with the kernel's dump; a hung task
# report in dmesg is a splat. Prints TAP.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tap-emit.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tap() { awk -v qemu_rc="$1" -f "$here/guest-tap.awk" "$2" >"$work/out"; }

echo "1..8"

# Cut off inside a suite: the last console line is what it was doing.
printf '%s\n' "@@SUITE-BEGIN 38-trace" "1..2" "ok 1 trace.a" \
	"#  RUN           trace.b ..." >"$work/cut"
tap 124 "$work/cut"
emit "$(grep -q '^not ok .* - guest ran to completion (qemu exit 124); the console.s last lines:' "$work/out" && echo 1 || echo 0)" \
	"a guest the host stopped fails, saying qemu's exit status" "$work/out"
emit "$(grep -q '^# #  RUN           trace.b \.\.\.$' "$work/out" && echo 1 || echo 0)" \
	"that failure shows the console's last line (the test that was running)" "$work/out"

# The watchdog's dump follows its marker.
printf '%s\n' "@@SUITE-BEGIN 38-trace" "1..1" "@@SUITE-STUCK 38-trace" \
	"[  960.1] task:38-trace state:D stack:0 pid:99" \
	"[  960.2]  gpubuf_held_scan+0x1/0x2 [gpubuf]" >"$work/stuck"
tap 124 "$work/stuck"
emit "$(grep -q '^not ok .* - 38-trace: still running a minute past its time limit' "$work/out" && echo 1 || echo 0)" \
	"a suite whose watchdog fired fails by name" "$work/out"
emit "$(grep -q '^# \[  960.2\]  gpubuf_held_scan' "$work/out" && echo 1 || echo 0)" \
	"and carries the blocked task's stack" "$work/out"

# A hung task reported in dmesg fails the dmesg check.
printf '%s\n' "@@SUITE-BEGIN 10-abi" "1..1" "ok 1 abi.a" "@@SUITE-END 10-abi rc=0" \
	"@@DMESG-BEGIN" "[    4.1] gpubuf-tests-begin" \
	"[  130.0] INFO: task 10-abi:77 blocked for more than 120 seconds." \
	"@@DMESG-END" "@@GUEST-DONE" >"$work/hung"
tap 0 "$work/hung"
emit "$(grep -q '^not ok .* - dmesg clean after the tests began' "$work/out" && echo 1 || echo 0)" \
	"a hung task in dmesg is a splat" "$work/out"

# Under fault injection (26-faults' window) the kernel's own WARN when a
# trace event's fields cannot be allocated at module load is excused;
# the same WARN outside the window is not.
warn="[  515.0] WARNING: CPU: 1 PID: 99 at kernel/trace/trace_events.c:2556 event_define_fields+0x1/0x2"
for where in inside outside; do
	{
		printf '%s\n' "@@SUITE-BEGIN 26-faults" "1..1" "ok 1 load" "@@SUITE-END 26-faults rc=0" \
			"@@DMESG-BEGIN" "[    4.1] gpubuf-tests-begin"
		[ $where = inside ] && echo "[  500.0] gpubuf-faults: allocation failure reports expected"
		printf '%s\n' "$warn" "[  515.1] Call Trace:" "[  515.2]  <TASK>" \
			"[  515.3]  trace_module_notify+0x1/0x2" "[  515.4]  </TASK>"
		[ $where = inside ] && echo "[  520.0] gpubuf-faults: allocation failure window closed"
		printf '%s\n' "@@DMESG-END" "@@GUEST-DONE"
	} >"$work/warn-$where"
	tap 0 "$work/warn-$where"
	if [ $where = inside ]; then
		emit "$(grep -q '^ok .* - dmesg clean after the tests began' "$work/out" && echo 1 || echo 0)" \
			"event_define_fields' WARN inside the fault-injection window is excused" "$work/out"
	else
		emit "$(grep -q '^not ok .* - dmesg clean after the tests began' "$work/out" && echo 1 || echo 0)" \
			"the same WARN outside the window fails the dmesg check" "$work/out"
	fi
done

# And a guest that finished cleanly passes all of it (the checks above
# can tell one from the other).
printf '%s\n' "@@SUITE-BEGIN 10-abi" "1..1" "ok 1 abi.a" "@@SUITE-END 10-abi rc=0" \
	"@@DMESG-BEGIN" "[    4.1] gpubuf-tests-begin" "@@DMESG-END" "@@GUEST-DONE" >"$work/good"
tap 0 "$work/good"
emit "$(! grep -q '^not ok' "$work/out" && grep -q '^ok .* - guest ran to completion (qemu exit 0)$' "$work/out" && echo 1 || echo 0)" \
	"a guest that finished cleanly passes" "$work/out"
[ "$failed" = 0 ]
