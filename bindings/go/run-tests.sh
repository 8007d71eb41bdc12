#!/bin/sh
# SPDX-License-Identifier: MIT
# gpubuf's Go tests.
#   run-tests.sh build OUT   build libgpubuf and its CUDA/HSA stand-ins, then
#                            into OUT: the test binary (go test -c, tag
#                            gpubuf_intree: this tree's libgpubuf), the
#                            example (examples/go, through pkg-config) and a
#                            copy of libgpubuf.so.0 and the stand-ins
#   run-tests.sh host OUT    on this machine: gofmt, go vet, then go test
#                            -race under GODEBUG=cgocheck=2, and the example;
#                            prints TAP
#   run-tests.sh run OUT     run OUT's test binary (needs no Go toolchain: the
#                            QEMU guest) under GODEBUG=cgocheck=2, plain and in
#                            checked mode (GPUBUF_GO_CHECKED=1), and the
#                            example; prints TAP
# The backend is the one libgpubuf picks: GPUBUF_BACKEND decides. Go builds
# offline (GOPROXY=off, no third-party modules) with its caches in
# build/go. GO (go) is honoured.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
mode=${1:-}
out=${2:-$top/build/go}
go=${GO:-go}

goenv() {
	export GOPROXY=off GOFLAGS= GO111MODULE=on GOCACHE="$top/build/go-cache/build" \
		GOPATH="$top/build/go-cache/path" GOTMPDIR= CGO_ENABLED=1
}

# The backend every result names.
backend() {
	case ${GPUBUF_BACKEND:-} in
	module | memfd) echo "$GPUBUF_BACKEND" ;;
	*) [ -e /dev/gpubuf ] && echo module || echo memfd ;;
	esac
}

case $mode in
build)
	goenv
	lib=$top/libgpubuf/build
	make -s --no-print-directory -C "$top/libgpubuf" all || exit 1
	make -s --no-print-directory -C "$top/libgpubuf" \
		"$lib/cudastub/libcuda.so.1" "$lib/hsastub/libhsa-runtime64.so.1" ||
		echo "run-tests.sh: CUDA/HSA stand-ins not built" >&2
	rm -rf "$out"
	mkdir -p "$out/lib" "$out/pkgconfig"
	(cd "$here" && "$go" test -c -tags gpubuf_intree -o "$out/gpubuf.test" .) || exit 1
	cp -L "$lib/libgpubuf.so.0" "$out/lib/"
	for stub in cudastub/libcuda.so.1 hsastub/libhsa-runtime64.so.1; do
		if [ -f "$lib/$stub" ]; then
			mkdir -p "$out/lib/${stub%/*}"
			cp "$lib/$stub" "$out/lib/$stub"
		fi
	done
	# The example as a user builds it, through pkg-config (the package's
	# default cgo flags), here against this tree's library.
	cat >"$out/pkgconfig/gpubuf.pc" <<PC
Name: gpubuf
Description: this tree's libgpubuf, for the Go example
Version: $(cat "$top/VERSION")
Libs: -L$lib -lgpubuf
Cflags: -I$top/libgpubuf/include -I$lib/include
PC
	(cd "$top/examples/go" && PKG_CONFIG_PATH="$out/pkgconfig" \
		"$go" build -o "$out/gpubuf-matrix" .) || exit 1
	;;
host)
	goenv
	b=$(backend)
	n=0
	emit() { # 1|0 TEXT [LOGFILE]
		n=$((n + 1))
		if [ "$1" = 1 ]; then echo "ok $n - go [$b backend]: $2"; else
			echo "not ok $n - go [$b backend]: $2"
			[ -n "${3:-}" ] && sed 's/^/# /' "$3" | tail -n 30
		fi
	}
	log=$out/host.log
	unformatted=$(cd "$here" && gofmt -l . ../../examples/go)
	[ -z "$unformatted" ]; emit $((! $?)) "gofmt -l finds nothing to format${unformatted:+: $unformatted}"
	(cd "$here" && "$go" vet -tags gpubuf_intree ./... && cd "$top/examples/go" &&
		PKG_CONFIG_PATH="$out/pkgconfig" "$go" vet .) >"$log" 2>&1
	emit $((! $?)) "go vet (binding, its tests, the example)" "$log"
	LD_LIBRARY_PATH="$top/libgpubuf/build" "$out/gpubuf-matrix" >"$log" 2>&1
	emit $((! $?)) "the example (examples/go) built through pkg-config runs: $(tail -n 1 "$log")" "$log"
	# The race detector and the strictest cgo pointer checks in one run.
	(cd "$here" && GODEBUG=cgocheck=2 "$go" test -race -p 1 -count=1 -v \
		-tags gpubuf_intree ./...) >"$log" 2>&1
	rc=$?
	awk -v prefix="go [$b backend, -race, cgocheck=2]: " -v rc=$rc -v n0=$n \
		-f "$here/tap.awk" "$log"
	;;
run)
	b=$(backend)
	export GPUBUF_LIB_BUILD="$out/lib" GODEBUG=cgocheck=2
	export LD_LIBRARY_PATH="$out/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	log=${TMPDIR:-/tmp}/gpubuf-go.$$.log
	trap 'rm -f "$log"' EXIT INT TERM
	# The example first: its one line is the plan's first result.
	"$out/gpubuf-matrix" >"$log" 2>&1
	if [ $? = 0 ]; then echo "ok 1 - go [$b backend]: the example runs: $(tail -n 1 "$log")"; else
		echo "not ok 1 - go [$b backend]: the example runs"; sed 's/^/# /' "$log"; fi
	n=1
	for checked in 0 1; do
		tag="cgocheck=2"
		[ $checked = 1 ] && tag="$tag, checked mode"
		(cd "$here" 2>/dev/null || cd /; GPUBUF_GO_CHECKED=$checked "$out/gpubuf.test" \
			-test.v -test.count=1) >"$log" 2>&1
		rc=$?
		awk -v prefix="go [$b backend, $tag]: " -v rc=$rc -v n0=$n \
			-f "$here/tap.awk" "$log" >"$log.tap"
		# Every run but the last drops its plan; the last counts them all.
		if [ $checked = 1 ]; then cat "$log.tap"; else
			grep -v '^1\.\.' "$log.tap"
			n=$(grep -c '^\(not \)\{0,1\}ok ' "$log.tap")
			n=$((n + 1))
		fi
		rm -f "$log.tap"
	done
	;;
*)
	echo "usage: $0 build|host|run [OUT]" >&2
	exit 2
	;;
esac
