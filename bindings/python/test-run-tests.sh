#!/bin/sh
# SPDX-License-Identifier: MIT
# run-tests.sh's own behaviour when it is stopped: a suite time limit (the
# QEMU guest's busybox timeout sends SIGTERM to the script alone) must end
# in a failed result with the results so far, not in a pass. Before the
# fix the script removed its files on SIGTERM, let pytest finish, and then
# reported "pytest reported nothing (exit 0)": 65-python on the debug
# kernel. A stand-in interpreter plays pytest (one result, then a long
# sleep), so this takes about a second. Prints TAP.
set -u
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/python" <<'PY'
#!/bin/sh
# python - (the version banner) or python -m pytest ...
if [ "$1" = - ]; then
	cat >/dev/null
	echo "python: stand-in"
	exit 0
fi
echo "ok 1 - python [stand-in]: first" >"$GPUBUF_TAP"
echo $$ >"${TMPDIR:?}/pytest.pid"
exec sleep 30
PY
chmod +x "$work/python"

echo "1..3"
PYTHON=$work/python TMPDIR=$work sh "$here/run-tests.sh" run "$work/out" >"$work/tap" 2>&1 &
pid=$!
# Until the stand-in has written its result (at most 10 s).
i=0
while ! grep -qs '^ok 1' "$work"/gpubuf-python.*.tap && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
kill -TERM $pid
wait $pid
rc=$?
sed 's/^/# /' "$work/tap"

if [ $rc != 0 ] && grep -q '^not ok 2 - python: stopped by SIGTERM after 1 results' "$work/tap"; then
	echo "ok 1 - SIGTERM: a failed result after the one so far, exit $rc"
else
	echo "not ok 1 - SIGTERM: a failed result after the one so far (exit $rc)"
fi
if grep -q '^ok 1 - python \[stand-in\]: first' "$work/tap" && grep -q '^1\.\.2$' "$work/tap" &&
	[ "$(grep -c '^1\.\.' "$work/tap")" = 1 ]; then
	echo "ok 2 - the result so far is kept, with one plan for both"
else
	echo "not ok 2 - the result so far is kept, with one plan for both"
fi
# The stand-in must be gone once the script has returned.
p=$(cat "$work/pytest.pid" 2>/dev/null)
if [ -n "$p" ] && ! kill -0 "$p" 2>/dev/null &&
	[ -z "$(ls "$work"/gpubuf-python.* 2>/dev/null)" ]; then
	echo "ok 3 - pytest is stopped, not waited for, and the script's files are removed"
else
	echo "not ok 3 - pytest is stopped, not waited for, and the script's files are removed (pid ${p:-unknown})"
	[ -n "$p" ] && kill "$p" 2>/dev/null
fi
