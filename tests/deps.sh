#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Does scripts/install-deps.sh install what each make target runs? For
# every target, on a PATH holding only the programs of a bare Debian 12
# plus that target's packages (tests/deps-sandbox.sh):
#   - each command the table declares for the target is found;
#   - the first stage (tests/deps-stage.sh) of check-debug (the debug
#     kernel's configuration, make prepare and certs/ on linux-source-6.1)
#     and of lib, with only the packages' headers too;
#   - and a control: check-debug's packages without flex must fail to
#     configure with "flex: not found", as on a bare machine, or the
#     sandbox is not restricting anything.
# Not covered: commands a script runs without declaring them outside the
# two stages run here, libraries at link time, perl or python modules,
# programs called by absolute path, and everything after the stages (the
# kernel's full build, QEMU boots): only a run on a bare system
# (tests/deps-bare.sh, make check-deps) sees those. Prints TAP.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
work=$top/build/deps
deps=$top/scripts/install-deps.sh
. "$top/tests/tap-emit.sh"
start=$(date +%s)
rm -rf "$work/sb" "$work/out"
mkdir -p "$work/sb" "$work/out"

# A target's packages, with the table's placeholders as apt would see them.
packages() { # TARGET [DROP]
	"$deps" --list "$1" | while read -r p; do
		case $p in
		"${2:-}") ;;
		@kernel-headers) echo linux-headers-amd64 ;;
		@build-depends)
			sed -n '/^Build-Depends:/,/^[^ ]/p' "$top/debian/control" |
				sed 's/^Build-Depends://; /^[A-Z]/d' | tr ',' '\n' |
				sed 's/(.*//; s/[[:space:]]//g; /^$/d' ;;
		*) echo "$p" ;;
		esac
	done
}
sandbox() { # DIR TARGET [DROP] [--headers]
	# shellcheck disable=SC2046
	"$top/tests/deps-sandbox.sh" ${4:-} "$1" $(packages "$2" "${3:-}") >"$1.log" 2>&1
}

targets=$("$deps" --targets | tr '\n' ' ')

# Each make target of the Makefile's list has a package list and calls the
# installer first: in its recipe (make deps) or in the script it runs.
for t in $(sed -n 's/^#   make \([a-z-]*\).*/\1/p' "$top/Makefile"); do
	[ "$t" = clean ] && continue
	case " $targets " in *" $t "*) ;; *)
		emit 0 "make $t: install-deps.sh has no package list for it"
		continue ;;
	esac
	recipe=$(make -s -n -C "$top" "$t" 2>/dev/null | head -n 20)
	how=
	case $recipe in
	*scripts/install-deps.sh*) how="its recipe" ;;
	*)
		# The script it runs calls install-deps.sh for it, itself or
		# through root_preflight (tests/root-preflight.sh).
		for f in $(echo "$recipe" | grep -oE '(tests|scripts)/[A-Za-z0-9/_.-]+\.sh' | sort -u); do
			{ grep -q 'install-deps\.sh' "$top/$f" && grep -qw -- "$t" "$top/$f"; } ||
				grep -qE "^[[:space:]]*root_preflight $t( |$)" "$top/$f" &&
				how=$f
		done ;;
	esac
	emit "$([ -n "$how" ] && echo 1 || echo 0)" \
		"make $t installs its packages first (${how:-no call of install-deps.sh $t found})"
done
# shellcheck disable=SC2086
"$deps" $targets >"$work/install.log" 2>&1
emit $((! $?)) "install-deps.sh installs the packages of every target ($targets)" "$work/install.log"

for t in $targets; do
	sb=$work/sb/$t
	if ! sandbox "$sb" "$t"; then
		emit 0 "$t: a bare system plus its packages" "$sb.log"
		continue
	fi
	lost=
	for c in $("$deps" --commands "$t"); do
		PATH=$sb/bin command -v "$c" >/dev/null || lost="$lost $c"
	done
	emit "$([ -z "$lost" ] && echo 1 || echo 0)" \
		"$t: a bare system plus its packages has every command it runs${lost:+; missing:$lost}"
done

# stage SANDBOX TARGET: tests/deps-stage.sh with only the sandbox's programs.
stage() {
	env -i HOME="${HOME:-/root}" LC_ALL=C PATH="$work/sb/$1/bin" \
		"$top/tests/deps-stage.sh" "$2" "$work/stage" >"$work/out/$1.log" 2>&1
}

if sandbox "$work/sb/check-debug-h" check-debug "" --headers; then
	stage check-debug-h check-debug
	emit $((! $?)) "check-debug: with only its packages' programs and headers, linux-source-6.1 configures with the debug fragment and builds objtool, timeconst.h and extract-cert" \
		"$work/out/check-debug-h.log"
else
	emit 0 "check-debug: a bare system plus its packages, with headers" "$work/sb/check-debug-h.log"
fi
# The control: without flex, as on a bare machine.
if sandbox "$work/sb/noflex-h" check-debug flex --headers; then
	stage noflex-h check-debug
	st=$?
	[ $st != 0 ] && [ $st != 77 ] && grep -q 'flex: not found' "$work/out/noflex-h.log"
	emit $((! $?)) "control: check-debug's packages without flex fail to configure with 'flex: not found'" \
		"$work/out/noflex-h.log"
else
	emit 0 "control: a sandbox without flex" "$work/sb/noflex-h.log"
fi
# The optional layers are off here: their headers are not lib's.
if sandbox "$work/sb/lib-h" lib "" --headers; then
	stage lib-h lib
	emit $((! $?)) "lib: with only its packages' programs and headers, make lib builds" "$work/out/lib-h.log"
else
	emit 0 "lib: a bare system plus its packages, with headers" "$work/sb/lib-h.log"
fi
echo "1..$n"
echo "# deps.sh took $(($(date +%s) - start)) s"
[ "$failed" = 0 ]
