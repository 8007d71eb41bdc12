#!/bin/sh
# SPDX-License-Identifier: MIT
#
# No test asserts a time or a speed (docs/testing.md, "Timing in tests").
# Looks through every test source for what such a test looks like and
# prints TAP, one result per rule:
#  - C: an ordering assertion (EXPECT_/ASSERT_ LT, LE, GT, GE) on a measured
#    time or speed: a name ending in _ns, _us, _ms, _s or _gbps (the suites'
#    convention for such variables), now_s() or clock_gettime(). Comparing
#    with a literal 0 (ASSERT_LE(0, t_s): "it was measured") is allowed.
#  - any test: a result named "faster", "slower" or "quicker" (code, not
#    comments).
#  - Python: an assert on time.monotonic(), perf_counter() or time.time().
# Each rule is first shown a line it must flag, so that the lint itself can
# fail. Usage: lint-timing.sh [FILE...] (default: the tree's test sources)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
. "$top/tests/tap-emit.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpubuf-lint-timing.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

if [ $# -gt 0 ]; then
	files="$*"
else
	# The tracked test sources; in an unpacked tarball, the same by name.
	files=$(git ls-files 'tests/*.c' 'tests/*.h' 'tests/*.sh' 'tests/*.awk' \
		'tests/*.py' 'bindings/*/tests/*' 'bindings/*/*_test.go' 2>/dev/null) ||
		files=$(find tests bindings -path '*/build' -prune -o -type f \
			\( -name '*.[ch]' -o -name '*.sh' -o -name '*.awk' \
			-o -name '*.py' -o -name '*_test.go' \) -print)
	files=$(printf '%s\n' $files | grep -vx tests/lint-timing.sh)
fi
[ -n "$files" ] || { echo "Bail out! no test sources found"; exit 1; }

# C: ordering assertions, joined across lines until their parentheses
# close. A time is a name with a time suffix, a clock read, or a variable
# the same file assigns from one (t = now_s(), t[i] = pin_ns(p, len)).
c_timed() {
	for f in "$@"; do
		awk -v pass1=1 '
		function timed(e) {
			return e ~ /(^|[^A-Za-z0-9_])[A-Za-z0-9_]*_(ns|us|ms|s|gbps)([^A-Za-z0-9_]|$)/ ||
			       e ~ /clock_gettime/
		}
		# The expression up to its own end: the first , or ; outside
		# parentheses ("double a = 0, b = now_s();" assigns no time to a).
		function expr(e,   i, c, d) {
			for (i = 1; i <= length(e); i++) {
				c = substr(e, i, 1)
				if (c == "(")
					d++
				else if (c == ")")
					d--
				else if ((c == "," || c == ";") && d <= 0)
					return substr(e, 1, i - 1)
			}
			return e
		}
		function check(text, line,   args, v) {
			args = text
			sub(/^[^(]*\(/, "", args)
			if (args ~ /^[ \t]*0[ \t]*,/)
				return
			if (timed(args)) {
				printf "%s:%d: %s\n", FILENAME, line, text
				return
			}
			for (v in var)
				if (args ~ ("(^|[^A-Za-z0-9_])" v "([^A-Za-z0-9_]|$)")) {
					printf "%s:%d: %s (%s is a time)\n", FILENAME, line, text, v
					return
				}
		}
		FNR == 1 && NR != 1 { pass1 = 0; open = 0 }
		pass1 {
			if (match($0, /[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?[ \t]*[-+]?=[^=]/)) {
				lhs = substr($0, RSTART, RLENGTH)
				rhs = expr(substr($0, RSTART + RLENGTH - 1))
				sub(/[ \t\[].*|[-+]?=.*/, "", lhs)
				if (timed(rhs))
					var[lhs] = 1
			}
			next
		}
		{
			if (!open && match($0, /(EXPECT|ASSERT)_(LT|LE|GT|GE)[ \t]*\(/)) {
				open = 1
				text = substr($0, RSTART)
				start = FNR
			} else if (open) {
				text = text " " $0
			} else {
				next
			}
			depth = gsub(/\(/, "(", text) - gsub(/\)/, ")", text)
			if (depth <= 0) {
				check(text, start)
				open = 0
			}
		}' "$f" "$f"
	done
}

# Any test: "faster", "slower", "quicker" outside comments.
named_speed() {
	for f in "$@"; do
		case $f in
		*.c | *.h | *.go)
			sed -e 's|//.*||' -e 's|^[ \t]*/\?\*.*||' "$f" ;;
		*)
			sed -e 's|^[ \t]*#.*||' "$f" ;;
		esac | grep -inE '\b(faster|slower|quicker)\b' | sed "s|^|$f:|"
	done
}

# Python: asserts on a clock.
py_timed() {
	grep -nE '^[ \t]*assert\b.*(monotonic|perf_counter|time\.time|process_time)\(' \
		"$@" /dev/null
}

lint() { # RULE NAME FILES...: emit a result, listing the offending lines
	rule=$1 name=$2
	shift 2
	"$rule" "$@" >"$tmp/$rule.out" 2>&1
	[ -s "$tmp/$rule.out" ] && ok=0 || ok=1
	emit $ok "$name" "$tmp/$rule.out"
}

# Each rule on a line it must flag.
cat >"$tmp/bad.c" <<'EOF'
	t2m = pin_ns(p, len);
	EXPECT_LT(t2m,
		  t4k);
	ksft_test_result(ok, "read is faster than memcpy\n");
EOF
printf 'assert time.monotonic() - t0 < 1.0\n' >"$tmp/bad.py"
for rule in c_timed named_speed py_timed; do
	case $rule in py_timed) bad=$tmp/bad.py ;; *) bad=$tmp/bad.c ;; esac
	[ -n "$("$rule" "$bad")" ]
	emit $((! $?)) "timing lint: rule $rule flags the example it is shown"
done
# ... and not on what is allowed.
cat >"$tmp/good.c" <<'EOF'
	ASSERT_LE(0, touch_s);
	EXPECT_LE(len / 10 * 9, pmd_bytes(p, len));
	/* a debug kernel runs several times slower */
EOF
[ -z "$(c_timed "$tmp/good.c")$(named_speed "$tmp/good.c")" ]
emit $((! $?)) "timing lint: rules pass a measured-at-all check, a structural check and a comment"

c_files= other= py=
for f in $files; do
	case $f in
	*.c | *.h) c_files="$c_files $f" ;;
	*.py) py="$py $f"; other="$other $f" ;;
	*) other="$other $f" ;;
	esac
done
# shellcheck disable=SC2086
lint c_timed "no C test orders a measured time or speed (EXPECT_/ASSERT_ LT/LE/GT/GE)" $c_files
# shellcheck disable=SC2086
lint named_speed "no test result is named faster, slower or quicker" $c_files $other
# shellcheck disable=SC2086
lint py_timed "no Python test asserts on a clock" ${py:-/dev/null}

echo "1..$n"
[ "$failed" = 0 ]
