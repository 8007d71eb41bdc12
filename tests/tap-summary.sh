#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Count the results of TAP files; print "N passed, N failed, N skipped".
# Exit 1 when anything failed or nothing ran.
# The test number is optional in TAP: "not ok - reason" is a result too.
awk '
/^ok( |$)/ && /# *[Ss][Kk][Ii][Pp]/ { skip++; next }
/^ok( |$)/ { pass++; next }
/^not ok( |$)/ { fail++; next }
END {
	printf "%d passed, %d failed, %d skipped\n", pass, fail, skip
	exit (fail > 0 || pass + fail == 0) ? 1 : 0
}' "$@"
