# SPDX-License-Identifier: MIT
# go test -v (or a test binary's -test.v) output to TAP: one result per
# "--- PASS|FAIL|SKIP: Name" line, subtests included, named with prefix;
# a failure carries the output since the previous result as comments, a
# skip the reason its test logged. rc is the go test exit status: a run
# that failed without a failing result (a build error), or that left
# output after its last result (a panic's trace: the test that panicked
# is "--- FAIL" first, then the trace, and the tests after it never run),
# gets one more "not ok" with that output. n0 results were printed before.
# Runs on busybox awk (the QEMU guest).
BEGIN { n = n0 + 0; fails = 0; reset_output() }
function flush_comments(   i) {
	for (i = 1; i <= nhead; i++)
		print "# " head[i]
	if (dropped > 0)
		print "# ... (" dropped " lines left out)"
	for (i = 1; i <= nbuf; i++)
		print "# " buf[i]
}
function reset_output() {
	nhead = 0; nbuf = 0; dropped = 0
}
{
	line = $0
	if (match(line, /^[ ]*--- (PASS|FAIL|SKIP): /)) {
		rest = substr(line, RLENGTH + 1)
		verdict = line
		sub(/^[ ]*--- /, "", verdict)
		verdict = substr(verdict, 1, 4)
		name = rest
		sub(/ \([0-9.]+s\)$/, "", name)
		n++
		if (verdict == "PASS") {
			print "ok " n " - " prefix name
		} else if (verdict == "SKIP") {
			reason = ""
			for (i = nbuf + nhead; i >= 1 && reason == ""; i--) {
				l = i > nhead ? buf[i - nhead] : head[i]
				if (l ~ /^[ ]+[A-Za-z0-9_]+\.go:[0-9]+: /) {
					reason = l
					sub(/^[ ]+[A-Za-z0-9_]+\.go:[0-9]+: /, "", reason)
				}
			}
			print "ok " n " - " prefix name " # SKIP " reason
		} else {
			fails++
			print "not ok " n " - " prefix name
			flush_comments()
		}
		reset_output()
		next
	}
	if (line ~ /^# /) {		# the suite's own notes (TestMain)
		print line
		next
	}
	if (line ~ /^=== (RUN|PAUSE|CONT|NAME)/ || line ~ /^(PASS|FAIL|ok  |\?   )/)
		next
	# Keep the first 15 lines of output for the next result (a panic's
	# message and the panicking goroutine) and the last 40 (a test's log).
	if (nhead < 15) {
		head[++nhead] = line
		next
	}
	if (nbuf == 40) {
		dropped++
		for (i = 1; i < 40; i++)
			buf[i] = buf[i + 1]
		nbuf = 39
	}
	buf[++nbuf] = line
}
END {
	if (rc != 0 && (fails == 0 || nhead > 0)) {
		n++
		if (fails == 0)
			print "not ok " n " - " prefix "the test program failed without a failing test (exit " rc ")"
		else
			print "not ok " n " - " prefix "the test program ended abnormally after its last result (exit " rc "): later tests did not run"
		flush_comments()
	}
	print "1.." n
}
