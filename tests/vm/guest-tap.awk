# SPDX-License-Identifier: GPL-2.0-only
# Turn the guest console log into one TAP stream: every suite's results
# prefixed with the suite name, a check per suite that it completed its
# plan, and a check that dmesg shows no splat after the tests began.
function emit(ok, text) {
	n++
	print (ok ? "ok " : "not ok ") n " - " text
}
# The console's last lines, and everything after a suite's watchdog fired
# (init.sh: blocked tasks and CPU stacks), for a guest that did not finish.
{ tail[NR % 40] = $0 }
stuck && stuckn < 400 { stucklog = stucklog "\n# " $0; stuckn++ }
/^@@SUITE-STUCK / { stuck = $2 }
/^@@SETUP-FAIL/ { emit(0, "guest setup: " substr($0, 14)) ; next }
/^@@SUITE-BEGIN / { suite = $2; plan = -1; seen = 0; failed = 0; insuite = 1; next }
/^@@SUITE-END / {
	rc = $3; sub("rc=", "", rc)
	# A non-zero exit must be explained by a failed result.
	emit(plan >= 0 && seen == plan && (rc == 0 || failed),
	     suite ": completed its plan (" seen "/" plan " results, exit " rc ")")
	insuite = 0; next
}
# What a suite measured (TH_LOG "measured: ...") goes into the stream as a
# comment, so that logs of every run keep the numbers docs/ quotes.
insuite && /^# .*:measured: / { line = $0; sub(/^# .*:measured: /, "", line); print "# " suite ": measured: " line; next }
insuite && /^1\.\.[0-9]+/ { plan = substr($1, 4) + 0; next }
insuite && /^(not )?ok [0-9]+/ {
	line = $0
	ok = (line ~ /^ok /)
	failed += !ok
	sub(/^(not )?ok [0-9]+ (- )?/, "", line)
	if (line ~ /^# [Ss][Kk][Ii][Pp]/)
		line = "# SKIP " substr(line, 8)
	seen++
	n++
	print (ok ? "ok " : "not ok ") n " - " suite ": " line
	next
}
# kmemleak (debug kernels only): a leaked object whose allocation backtrace
# passes through gpubuf fails; others are the kernel's and are shown only.
/^@@KMEMLEAK-BEGIN/ { inleak = 1; kmemleak = 1; next }
/^@@KMEMLEAK-END/ { inleak = 0; if (obj != "") leakobj(); next }
function leakobj() {
	if (obj ~ /gpubuf/)
		ourleaks = ourleaks obj
	else
		otherleaks++
	obj = ""
}
inleak && /^unreferenced object/ { if (obj != "") leakobj() }
inleak { obj = obj "\n# " $0; next }
/^@@PAGE-OWNER / { page_owner = $2; sub("gpubuf_pages=", "", page_owner); if (page_owner == "") page_owner = "missing"; next }
/^@@DMESG-BEGIN/ { indmesg = 1; next }
/^@@DMESG-END/ { indmesg = 0; oomend(); warnend(); next }
indmesg && /gpubuf-tests-begin/ { after = 1; next }
# A deliberate OOM kill (tests/stress) is announced on /dev/kmsg with the
# memory cgroup it is meant for, and the window closed once the victim is
# reaped. The call trace of an OOM report inside the window is held back,
# and excused only when the report's summary line names that cgroup as the
# one out of memory; every other splat line inside it still counts.
indmesg && after && /gpubuf-stress: oom-kill expected in memcg / { oom_memcg = $NF; next }
indmesg && after && /gpubuf-stress: oom-kill window closed/ { oom_memcg = ""; oomend(); next }
function oomend() {
	if (inoom)
		splat = splat oomheld
	inoom = 0; oomheld = ""
}
indmesg && after && oom_memcg != "" && /invoked oom-killer:/ { oomend(); inoom = 1; next }
indmesg && after && inoom && /oom-kill:constraint=/ {
	if (index($0, "oom-kill:constraint=CONSTRAINT_MEMCG,") &&
	    index($0, ",oom_memcg=" oom_memcg ",")) {
		oomkills++
		inoom = 0; oomheld = ""
	}
	oomend()
	next
}
indmesg && after && inoom && /Call Trace/ { oomheld = oomheld "\n# " $0; next }
# Systematic fault injection (26-faults) fails the kernel's own allocations
# too: the module loader's vmalloc() reports each failure (warn_alloc())
# with a call trace, jump_label_module_notify() WARNs when it cannot
# allocate the module's jump entries ("Failed to allocate memory:
# jump_label may not work properly", then jump_label_del_module() on the
# unwind), and event_define_fields() WARNs once (WARN_ON_ONCE, then
# "error code is -12") when a trace event's field cannot be allocated as
# the module's tracepoints are added. Inside the window the suite announces on /dev/kmsg, those
# reports are excused unless a frame of one names gpubuf (gpubuf's own
# allocations must fail quietly); every other splat line still counts.
indmesg && after && /gpubuf-faults: allocation failure reports expected/ { injwin = 1; next }
indmesg && after && /gpubuf-faults: allocation failure window closed/ { warnend(); injwin = 0; next }
function warnend() {
	if (inwarn && warnours)
		splat = splat warnheld
	inwarn = 0; warnours = 0; warnheld = ""
}
indmesg && after && injwin && /(vmalloc error: |page allocation failure: |WARNING: CPU: [0-9]+ PID: [0-9]+ at kernel\/(jump_label|trace\/trace_events)\.c:)/ {
	warnend(); inwarn = 1; warnheld = "\n# " $0; warnours = /gpubuf/; next
}
indmesg && after && inwarn && /<\/TASK>/ { warnend(); next }
indmesg && after && inwarn && /gpubuf/ && !/Modules linked in:/ { warnours = 1 }
indmesg && after && inwarn && /Call Trace/ { warnheld = warnheld "\n# " $0; next }
indmesg && after && /(BUG:|WARNING:|Oops|blocked for more than|kernel BUG|general protection|Call Trace|possible circular locking|RCU stall|rcu_sched self-detected|UBSAN|KASAN|refcount_t|list_del corruption|Bad page)/ {
	splat = splat "\n# " $0
}
/^@@GUEST-DONE/ { done = 1 }
END {
	if (stuck != "")
		emit(0, stuck ": still running a minute past its time limit (the kernel's dump of blocked tasks and CPUs follows)" stucklog)
	if (!done) {
		for (i = NR - 39; i <= NR; i++)
			if (i > 0)
				last = last "\n# " tail[i % 40]
		emit(0, "guest ran to completion (qemu exit " qemu_rc "); the console's last lines:" last)
	} else
		emit(1, "guest ran to completion (qemu exit " qemu_rc ")")
	# Seen but not a number (the guest could not read it) is a failure.
	if (page_owner != "")
		emit(page_owner ~ /^[0-9]+$/ && page_owner == 0,
		     "page_owner: no buffer page allocated by gpubuf left (" page_owner " allocations)")
	if (kmemleak)
		emit(ourleaks == "", "kmemleak: nothing leaked by gpubuf (" otherleaks + 0 " other kernel objects reported)" ourleaks)
	if (done) {
		if (!after)
			emit(0, "dmesg clean after the tests began (marker missing)")
		else if (splat != "")
			emit(0, "dmesg clean after the tests began" splat)
		else
			emit(1, "dmesg clean after the tests began" \
			     (oomkills ? " (" oomkills " announced OOM kills in the test's memory cgroup)" : ""))
	}
	print "1.." n
}
