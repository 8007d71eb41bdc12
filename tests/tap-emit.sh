# SPDX-License-Identifier: MIT
# Sourced by the shell test drivers that number their own TAP lines.
# emit 1|0 TEXT [LOG]: one result; a failure shows LOG's last 30 lines.
# Counts results in n and failures in failed.
n=0
failed=0
emit() {
	n=$((n + 1))
	if [ "$1" = 1 ]; then
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
		if [ -n "${3:-}" ]; then sed 's/^/# /' "$3" | tail -n 30; fi
	fi
}
