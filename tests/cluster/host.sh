#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# make check's short MPI run: the cluster's programs with two ranks on this
# machine (memfd buffers, UCX's shared-memory transports), TAP on stdout.
# make check-cluster runs them between two guests over soft-RoCE.
# Usage: host.sh BINDIR test|gemm, host.sh BINDIR gemm-py PYDIR (the
# Python extension's build/lib, from bindings/python/run-tests.sh build).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$1
case $2 in
test)
	GPUBUF_BACKEND=memfd timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 \
		--mca pml ucx --mca osc ucx --mca btl self \
		--mca pml_ucx_tls any --mca pml_ucx_devices any \
		"$bin/mpi-gpubuf-test" --host 2>&1
	;;
gemm)
	echo "1..2"
	n=0
	for np in 2 3; do
		n=$((n + 1))
		out=$(GPUBUF_BACKEND=memfd timeout 300 mpirun --allow-run-as-root --oversubscribe \
			-np $np "$bin/mpi-gemm" 130 70 99 2>&1)
		rc=$?
		echo "$out" | sed 's/^/# /'
		if [ $rc = 0 ] && echo "$out" | grep -q 'matches the single-process reference'; then
			echo "ok $n - examples/mpi_gemm.c on $np ranks here (130x70x99, ragged blocks) matches the reference"
		else
			echo "not ok $n - examples/mpi_gemm.c on $np ranks here (130x70x99, ragged blocks) matches the reference (exit $rc)"
		fi
	done
	;;
gemm-py)
	# examples/mpi_gemm.py with mpi4py, on the Python extension in PYDIR.
	echo "1..2"
	n=0
	for np in 2 3; do
		n=$((n + 1))
		out=$(PYTHONPATH=$3 GPUBUF_BACKEND=memfd timeout 300 mpirun --allow-run-as-root \
			--oversubscribe -np $np /usr/bin/python3 "$top/examples/mpi_gemm.py" 130 70 99 2>&1)
		rc=$?
		echo "$out" | sed 's/^/# /'
		if [ $rc = 0 ] && echo "$out" | grep -q 'matches the single-process reference'; then
			echo "ok $n - examples/mpi_gemm.py (mpi4py) on $np ranks here (130x70x99, ragged blocks) matches the reference"
		else
			echo "not ok $n - examples/mpi_gemm.py (mpi4py) on $np ranks here (130x70x99, ragged blocks) matches the reference (exit $rc)"
		fi
	done
	;;
*) echo "usage: host.sh BINDIR test|gemm | host.sh BINDIR gemm-py PYDIR" >&2; exit 2 ;;
esac
