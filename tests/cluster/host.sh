#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# make check's short MPI run: the cluster's programs with two ranks on this
# machine (memfd buffers, Open MPI's pml_ucx over UCX's shared-memory
# transports), TAP on stdout. make check-cluster runs them between two
# guests over soft-RoCE.
# Every rank runs with the pack counter preloaded (ucx_pack_count.c, built
# next to the programs): the examples' messages must go in place, with no
# byte packed by the CPU through a UCX generic datatype.
# Usage: host.sh BINDIR test|gemm, host.sh BINDIR gemm-py PYDIR (the
# Python extension's build/lib, from bindings/python/run-tests.sh build).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$1
# pml_ucx, as on the cluster: Open MPI 4.1 otherwise keeps UCX for
# Mellanox devices and uses its own shared-memory path here.
ucx="--mca pml ucx --mca osc ucx --mca btl self --mca pml_ucx_tls any --mca pml_ucx_devices any"
counter="-x LD_PRELOAD=$bin/ucx-pack-count.so"

# The pack counter's exit lines in OUT: ranks that reported, bytes packed
# and bytes unpacked, summed over the ranks.
pack_totals() {
	echo "$1" | awk '/^# ucx-pack-count: pid /{n++; p += $9; u += $12}
		END {print n + 0, p + 0, u + 0}'
}

# gemm_results N NAME NP OUT RC: the reference check and the pack check of
# one run, as results N and N+1.
gemm_results() {
	echo "$4" | sed 's/^\([^#]\)/# \1/'
	what="$2 on $3 ranks here (130x70x99, ragged blocks)"
	if [ "$5" = 0 ] && echo "$4" | grep -q 'matches the single-process reference'; then
		echo "ok $1 - $what matches the reference"
	else
		echo "not ok $1 - $what matches the reference (exit $5)"
	fi
	# shellcheck disable=SC2046
	set -- "$1" "$2" "$3" $(pack_totals "$4")
	if [ "$4" = "$3" ] && [ "$5" = 0 ] && [ "$6" = 0 ]; then
		echo "ok $(($1 + 1)) - $what: its messages are contiguous memory, 0 bytes packed or unpacked by the CPU through UCX generic datatypes (pack counter, $4 ranks)"
	else
		echo "not ok $(($1 + 1)) - $what: its messages are contiguous memory, 0 bytes packed or unpacked by the CPU through UCX generic datatypes (pack counter: $4 of $3 ranks reported, $5 bytes packed, $6 unpacked)"
	fi
}

case $2 in
test)
	# shellcheck disable=SC2086
	GPUBUF_BACKEND=memfd timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 \
		$ucx $counter "$bin/mpi-gpubuf-test" --host 2>&1
	;;
gemm)
	echo "1..4"
	n=1
	for np in 2 3; do
		# shellcheck disable=SC2086
		out=$(GPUBUF_BACKEND=memfd timeout 300 mpirun --allow-run-as-root --oversubscribe \
			-np $np $ucx $counter "$bin/mpi-gemm" 130 70 99 2>&1)
		gemm_results $n examples/mpi_gemm.c $np "$out" $?
		n=$((n + 2))
	done
	;;
gemm-py)
	# examples/mpi_gemm.py with mpi4py, on the Python extension in PYDIR.
	echo "1..4"
	n=1
	for np in 2 3; do
		# shellcheck disable=SC2086
		out=$(PYTHONPATH=$3 GPUBUF_BACKEND=memfd timeout 300 mpirun --allow-run-as-root \
			--oversubscribe -np $np $ucx $counter \
			/usr/bin/python3 "$top/examples/mpi_gemm.py" 130 70 99 2>&1)
		gemm_results $n "examples/mpi_gemm.py (mpi4py)" $np "$out" $?
		n=$((n + 2))
	done
	;;
*) echo "usage: host.sh BINDIR test|gemm | host.sh BINDIR gemm-py PYDIR" >&2; exit 2 ;;
esac
