#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Count the results of TAP files; print "N passed, N failed, N skipped".
# Exit 1 when anything failed or nothing ran.
awk '
/^ok [0-9]+/ && /# *[Ss][Kk][Ii][Pp]/ { skip++; next }
/^ok [0-9]+/ { pass++; next }
/^not ok [0-9]+/ { fail++; next }
END {
	printf "%d passed, %d failed, %d skipped\n", pass, fail, skip
	exit (fail > 0 || pass + fail == 0) ? 1 : 0
}' "$@"
