# SPDX-License-Identifier: MIT
# Sourced, after tests/tap-emit.sh, by the targets that build a Debian
# system as root (check-deps: tests/deps-bare.sh; check-install:
# tests/install/check-install.sh), which define finish (plan, exit).
# root_preflight TARGET WHY DEPS_TEST: unless this runs as root (needed for
# WHY) and scripts/install-deps.sh TARGET finds or installs what TARGET
# needs, one failed result (... needs root, or DEPS_TEST) and finish.
# shellcheck disable=SC2154 # top: the caller's
root_preflight() {
	if [ "$(id -u)" != 0 ]; then
		emit 0 "$1 needs root ($2)"
		finish
	fi
	"$top/scripts/install-deps.sh" "$1" >&2 || { emit 0 "$3"; finish; }
}
