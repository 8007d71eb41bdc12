# SPDX-License-Identifier: MIT
# go test -v (or a test binary's -test.v) output to TAP: one result per
# "--- PASS|FAIL|SKIP: Name" line, subtests included, named with prefix;
# a failure carries the output since the previous result as comments, a
# skip the reason its test logged. rc is the go test exit status: a run
# that failed without a failing result (a crash, a panic, a build error)
# is one "not ok" with the output's end. n0 results were printed before.
# Runs on busybox awk (the QEMU guest).
BEGIN { n = n0 + 0; nbuf = 0; fails = 0 }
function flush_comments(   i) {
	for (i = 1; i <= nbuf; i++)
		print "# " buf[i]
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
			for (i = nbuf; i >= 1; i--)
				if (buf[i] ~ /^[ ]+[A-Za-z0-9_]+\.go:[0-9]+: /) {
					reason = buf[i]
					sub(/^[ ]+[A-Za-z0-9_]+\.go:[0-9]+: /, "", reason)
					break
				}
			print "ok " n " - " prefix name " # SKIP " reason
		} else {
			fails++
			print "not ok " n " - " prefix name
			flush_comments()
		}
		nbuf = 0
		next
	}
	if (line ~ /^# /) {		# the suite's own notes (TestMain)
		print line
		next
	}
	if (line ~ /^=== (RUN|PAUSE|CONT|NAME)/ || line ~ /^(PASS|FAIL|ok  |\?   )/)
		next
	# Keep the last 40 lines of output for the next result.
	if (nbuf == 40) {
		for (i = 1; i < 40; i++)
			buf[i] = buf[i + 1]
		nbuf = 39
	}
	buf[++nbuf] = line
}
END {
	if (rc != 0 && fails == 0) {
		n++
		print "not ok " n " - " prefix "the test program failed without a failing test (exit " rc ")"
		flush_comments()
	}
	print "1.." n
}
