#!/bin/sh
# SPDX-License-Identifier: MIT
# gpubuf's Python tests.
#   run-tests.sh build OUT   build libgpubuf (and its CUDA/HSA stand-ins) and
#                            the extension, against the tree's library, into OUT
#   run-tests.sh run OUT     run the pytest suites on what OUT holds and print
#                            TAP (also from a read-only tree: the QEMU guest)
# The backend is the one libgpubuf picks: GPUBUF_BACKEND decides (make check
# sets memfd on the host; the guest sets module). PYTHON (/usr/bin/python3:
# Debian's interpreter, where python3-numpy and python3-torch live) and
# GPUBUF_PYTEST_ARGS (e.g. "-k torch") are honoured.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
python=${PYTHON:-/usr/bin/python3}
mode=${1:-}
out=${2:-$top/build/python}

case $mode in
build)
	lib=$top/libgpubuf/build
	# The stand-ins are built only when the library has CUDA (HSA)
	# support; the device tests then say what is missing.
	make -s --no-print-directory -C "$top/libgpubuf" all &&
		{ make -s --no-print-directory -C "$top/libgpubuf" \
			"$lib/cudastub/libcuda.so.1" "$lib/hsastub/libhsa-runtime64.so.1" ||
			echo "run-tests.sh: CUDA/HSA stand-ins not built" >&2; } &&
		rm -rf "$out" &&
		cd "$here" &&
		GPUBUF_IN_TREE=1 "$python" setup.py -q build --build-base "$out/build" \
			--build-lib "$out/lib" &&
		# setup.py build leaves its egg-info in the source tree.
		rm -rf "$here/gpubuf.egg-info"
	;;
run)
	tap=${TMPDIR:-/tmp}/gpubuf-python.$$.tap
	log=${TMPDIR:-/tmp}/gpubuf-python.$$.log
	pytest_pid=
	trap 'rm -f "$tap" "$log"' EXIT
	# SIGTERM (a suite time limit: the guest's busybox timeout signals
	# this shell only) or SIGINT stops pytest and is a failure, reported
	# with the results so far; the shell must not carry on and find no
	# results from a pytest that never finished.
	stopped() {
		[ -n "$pytest_pid" ] && kill "$pytest_pid" 2>/dev/null
		n=0
		if [ -s "$tap" ]; then
			grep -v '^1\.\.' "$tap"
			n=$(grep -Ec '^(not )?ok ' "$tap")
		fi
		echo "not ok $((n + 1)) - python: stopped by SIG$1 after $n results (a time limit?)"
		echo "1..$((n + 1))"
		tail -n 25 "$log" 2>/dev/null | sed 's/^/# /'
		exit 1
	}
	trap 'stopped TERM' TERM
	trap 'stopped INT' INT
	export PYTHONPATH="$out/lib" PYTHONDONTWRITEBYTECODE=1 GPUBUF_TAP="$tap"
	"$python" - <<'PY' 2>&1 | sed 's/^/# /'
import gpubuf
try:
    import numpy
    np = numpy.__version__
except ImportError:
    np = "absent"
try:
    import torch
    th = torch.__version__
except ImportError:
    th = "absent"
with gpubuf.open() as c:
    print("python: backend %s, libgpubuf %d.%d.%d, NumPy %s, PyTorch %s, "
          "versioned DLPack capsules %s" % ((c.backend,) + gpubuf.library_version()
          + (np, th, "yes" if gpubuf.dlpack_versioned() else "no")))
PY
	# In the background, so that the signal traps run at once.
	# shellcheck disable=SC2086
	"$python" -m pytest -p no:cacheprovider -q -rs ${GPUBUF_PYTEST_ARGS:-} \
		"$here/tests" >"$log" 2>&1 &
	pytest_pid=$!
	wait "$pytest_pid"
	rc=$?
	if [ -s "$tap" ]; then
		cat "$tap"
	else
		echo "not ok 1 - python: pytest reported nothing (exit $rc)"
		echo "1..1"
	fi
	# pytest's own summary, as TAP comments.
	tail -n 25 "$log" | sed 's/^/# /'
	;;
*)
	echo "usage: $0 build|run [OUT]" >&2
	exit 2
	;;
esac
