#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# make check-cluster: two QEMU guests (TCG), node1 and node2, each with
# gpubuf.ko and soft-RoCE (rdma_rxe) on its own e1000 NIC, joined by QEMU's
# UDP socket netdev on 127.0.0.1 and nothing else. node1 starts Debian's
# Open MPI across both (gb-rsh as the rsh agent, tests/cluster/gb_rsh.c),
# UCX moves the messages over rxe. Suites (tests/cluster/node.sh):
#   node1: 40-net, 41-mpi (two-sided, datatype, one-sided, zero copy, pack
#          counts), 41-mpi-get-zcopy (zero copy with UCX_RNDV_SCHEME=get_zcopy),
#          41-mpi-uncached (zero copy's control: UCX's registration caches off),
#          42-ucx-protocol, 43-pfnmap-control, 44-mpi-gemm (C),
#          44-mpi-gemm-py (mpi4py), 45-rdma-bench, 49-stop
#   node2: 40-net, 41-serve
# Prints both guests' TAP (prefixed node1:/node2:) and
# "N passed, N failed, N skipped" last; exits 1 on any failure.
# Environment: KDIR; GPUBUF_CLUSTER_PORT (UDP port base, default 47710:
# node1 listens on it, node2 on the next).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
out=$top/build/cluster
rm -rf "$out"
mkdir -p "$out/node1" "$out/node2" "$out/extra/cluster/bin" "$out/results"
. tests/vm/suite-lib.sh

log() { echo "== $*" >&2; }
fail() { guest_fail "$*" "$out/results/cluster.tap"; }

log "dependencies"
scripts/install-deps.sh check-cluster >"$out/build.log" 2>&1 ||
	fail "Debian packages installed (see $out/build.log)"
kdir=${KDIR:-$(scripts/find-kdir.sh)}
log "build against $kdir"
{
	guest_modules "$top" "$kdir" &&
	make -s -C tests/cluster OUT="$out/extra/cluster/bin" &&
	make -s -C tools &&
	cp tools/build/gpubuf-bench "$out/extra/cluster/bin/" &&
	cp -L libgpubuf/build/libgpubuf.so.0 "$out/extra/cluster/bin/" &&
	bindings/python/run-tests.sh build "$out/python" &&
	cp -r "$out/python/lib" "$out/extra/cluster/python"
} >>"$out/build.log" 2>&1 ||
	fail "gpubuf.ko, the test modules, libgpubuf, gpubuf-bench, the Python extension and the cluster programs build (see $out/build.log)"
cp tests/cluster/node.sh "$out/extra/cluster/node.sh"
cp examples/mpi_gemm.py "$out/extra/cluster/mpi_gemm.py"

suite() { # NODE NAME NODE.SH-ARGS...
	f=$out/$1/$2
	shift 2
	printf '%s\n' '#!/bin/sh' "exec /bin/sh /gpubuf/cluster/node.sh $*" >"$f"
	chmod +x "$f"
}
b=/gpubuf/cluster/bin
suite node1 40-net net 1
suite node1 41-mpi mpi 41-mpi $b/mpi-gpubuf-test
suite node1 41-mpi-get-zcopy mpi 41-mpi-get-zcopy -x UCX_RNDV_SCHEME=get_zcopy \
	$b/mpi-gpubuf-test --zero-copy
suite node1 41-mpi-uncached mpi 41-mpi-uncached -x UCX_RCACHE_ENABLE=n -x UCX_IB_REG_METHODS=direct \
	$b/mpi-gpubuf-test --zero-copy --uncached
suite node1 42-ucx-protocol protocol
suite node1 43-pfnmap-control mpi 43-pfnmap-control $b/mpi-gpubuf-test --pfnmap
suite node1 44-mpi-gemm gemm c
suite node1 44-mpi-gemm-py gemm py
suite node1 45-rdma-bench bench
suite node1 49-stop stop
suite node2 40-net net 2
suite node2 41-serve serve

rxe_provider=$(ls /usr/lib/*/libibverbs/librxe-rdmav*.so | head -n 1)
port=${GPUBUF_CLUSTER_PORT:-47710}
boot() { # NODE MY_PORT PEER_PORT
	GPUBUF_VM_OUT="$out/vm-$1" GPUBUF_VM_EXTRA_DIR="$out/extra" \
		GPUBUF_VM_MEM=2048 GPUBUF_VM_HOST_ROOT=1 \
		GPUBUF_VM_MODULES="e1000 crc32_generic rdma_rxe ib_uverbs" \
		GPUBUF_VM_HOST_FILES="$rxe_provider /etc/libibverbs.d/rxe.driver $(command -v rdma)" \
		GPUBUF_VM_NETDEV="-netdev socket,id=n0,udp=127.0.0.1:$3,localaddr=127.0.0.1:$2
			-device e1000,netdev=n0,mac=52:54:00:77:00:0${1#node}" \
		GPUBUF_VM_SUITE_TIMEOUT=1200 GPUBUF_VM_TIMEOUT=1800 \
		tests/vm/run.sh "$kdir" "$out/$1" 2>"$out/results/$1.log" |
		sed -E "s/^((not )?ok [0-9]+ - )/\\1$1: /" >"$out/results/$1.tap"
	grep -q '^1\.\.[0-9]' "$out/results/$1.tap" || {
		echo "not ok - $1: the QEMU guest run produced no results"
		sed 's/^/# /' "$out/results/$1.log"
	} >>"$out/results/$1.tap"
}

log "two QEMU guests (TCG) on a UDP socket link, ports $port and $((port + 1))"
start=$(date +%s)
boot node2 $((port + 1)) "$port" &
boot node1 "$port" $((port + 1))
wait
# What the suites measured, from node1's console.
grep -E '^# (rank [01]: measured|ucx-pack-count|gpubuf-bench|mpi_gemm|ib_write_bw)' \
	"$out/vm-node1/console.txt" 2>/dev/null || true
cat "$out/results/node1.tap" "$out/results/node2.tap"
echo "# wall time $(($(date +%s) - start)) s (both guests: boot, suites, dmesg check)"
tests/tap-summary.sh "$out/results/node1.tap" "$out/results/node2.tap"
