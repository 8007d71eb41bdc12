#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only
# One step of the two-guest cluster (tests/cluster/run.sh), run by the
# guest's init as a suite; prints TAP. The guests are node1 (10.77.0.1,
# which runs mpirun) and node2 (10.77.0.2, which serves gb-rsh), joined by
# QEMU's UDP socket netdev on the host's loopback, each with soft-RoCE
# (rxe0) on its e1000 NIC. Open MPI, UCX and perftest are the host's,
# reached through the virtio-9p root (/gpubuf/host-run).
#
#   node.sh net N         address 10.77.0.N, rxe0, the peer answers ping
#   node.sh serve         node2: serve gb-rsh until node1 says stop
#   node.sh mpi NAME ARGS node1: mpirun across both guests, the program's TAP
#                         (ARGS: mpirun options, then the program)
#   node.sh protocol      node1: UCX's protocol thresholds and lanes on rxe0
#   node.sh gemm c|py     node1: examples/mpi_gemm.c or .py across both guests
#   node.sh bench         node1: gpubuf-bench rdma and ib_write_bw against node2
#   node.sh stop          node1: stop node2's gb-rsh server
set -u
bin=/gpubuf/cluster/bin
peer_of() { [ "$1" = 1 ] && echo 10.77.0.2 || echo 10.77.0.1; }
export GB_RSH_PORT=7471

net() {
	n=$1
	echo "1..3"
	hostname "node$n"
	for m in crc32_generic e1000 rdma_rxe ib_uverbs; do
		modprobe "$m" 2>/dev/null
	done
	i=0
	while [ ! -d /sys/class/net/eth0 ] && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if ip link set lo up && ip link set eth0 up &&
		ip addr add "10.77.0.$n/24" dev eth0; then
		echo "ok 1 - node$n: eth0 up with 10.77.0.$n/24 on the UDP socket link"
	else
		echo "not ok 1 - node$n: eth0 with 10.77.0.$n/24 (no e1000 NIC?)"
	fi
	rdma link add rxe0 type rxe netdev eth0 2>&1 | sed 's/^/# /'
	i=0
	while [ ! -e /dev/infiniband/uverbs0 ] && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if [ -e /dev/infiniband/uverbs0 ] && [ -d /sys/class/infiniband/rxe0 ]; then
		echo "ok 2 - node$n: rxe0 bound to eth0, /dev/infiniband/uverbs0 present"
	else
		echo "not ok 2 - node$n: rxe0 bound to eth0 (rdma link add failed or no uverbs device)"
	fi
	# The peer boots at the same time; allow it two minutes under TCG.
	i=0
	until ping -c 1 -W 1 "$(peer_of "$n")" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -ge 120 ] && break
	done
	if [ $i -lt 120 ]; then
		echo "ok 3 - node$n: the peer $(peer_of "$n") answers ping"
	else
		echo "not ok 3 - node$n: the peer $(peer_of "$n") answers ping (2 minutes)"
	fi
}

serve() {
	echo "1..1"
	# Each command runs chrooted in the host's root file system, where
	# Open MPI's orted and perftest live.
	"$bin/gb-rsh" --serve "$GB_RSH_PORT" /gpubuf/host-run
	echo "ok 1 - node2: served node1's commands until node1 said stop (exit $?)"
}

# Wait until node2's gb-rsh server runs commands (node2 may still be
# setting up its rxe device).
peer_ready() {
	i=0
	until "$bin/gb-rsh" 10.77.0.2 true 2>/dev/null; do
		i=$((i + 1))
		[ $i -ge 120 ] && return 1
		sleep 1
	done
}

# rxe0's RoCE v2 GID of the node's IPv4 address (UCX and perftest are told
# which; index 0 is the IPv6 link-local one).
gid_index() {
	for f in /sys/class/infiniband/rxe0/ports/1/gids/*; do
		n=${f##*/}
		case "$(cat "$f") $(cat "/sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$n" 2>/dev/null)" in
		*:ffff:0a4d:*v2*) echo "$n"; return ;;
		esac
	done
	echo 1
}

# Open MPI across both guests, started by node1: one rank per node, the
# rsh launcher replaced by gb-rsh, out-of-band traffic on the private link,
# messages by UCX over rxe0 (RC verbs, UD for wire-up). UCX's UD drops
# every packet whose GRH destination GID does not match where it expects
# it, which rxe's RoCE v2 IPv4 packets never do here (measured: the UD
# endpoint times out; ibv_ud_pingpong works): UCX_UD_ETH_DGID_CHECK=n.
# As root in the guest, hence --allow-run-as-root. Every rank runs with
# the pack counter preloaded (ucx_pack_count.c): the bytes UCX's generic
# datatypes made the CPU pack, which the programs and gemm check.
mpirun_both() {
	timeout 600 /gpubuf/host-run /usr/bin/mpirun --allow-run-as-root -np 2 \
		--host 10.77.0.1:1,10.77.0.2:1 \
		--mca plm_rsh_agent "$bin/gb-rsh" --mca plm_rsh_no_tree_spawn 1 \
		--mca oob_tcp_if_include 10.77.0.0/24 \
		--mca pml ucx --mca osc ucx --mca btl self \
		--mca pml_ucx_tls any --mca pml_ucx_devices any \
		-x GPUBUF_BACKEND=module -x GB_RSH_PORT -x LD_PRELOAD="$bin/ucx-pack-count.so" \
		-x UCX_NET_DEVICES=rxe0:1 -x UCX_TLS=rc_verbs,ud_verbs,self \
		-x UCX_IB_GID_INDEX="$(gid_index)" -x UCX_UD_ETH_DGID_CHECK=n \
		"$@"
}

# The steps that run on both nodes start with it: a missing server is one
# failed result, not a hang.
need_peer() {
	peer_ready && return 0
	echo "1..1"
	echo "not ok 1 - $1: node2's gb-rsh server did not answer in 2 minutes"
	return 1
}

mpi() {
	name=$1
	shift
	need_peer "$name" || return
	mpirun_both "$@" 2>&1
}

# UCX's own account of its protocol choice for tagged sends over rxe0
# (ucx_info -e: an endpoint to itself on the same transports; Debian's UCX
# keeps no statistics and logs nothing below warnings): messages above the
# rendezvous threshold go by the RMA bandwidth lanes, RDMA straight out of
# and into registered user memory. 41-mpi's held_bytes check shows that
# this happened to the gpubuf buffers.
protocol() {
	echo "1..2"
	out=$(/gpubuf/host-run env UCX_NET_DEVICES=rxe0:1 UCX_TLS=rc_verbs,ud_verbs \
		UCX_IB_GID_INDEX="$(gid_index)" UCX_UD_ETH_DGID_CHECK=n ucx_info -e -u t 2>&1)
	echo "$out" | sed 's/^/# /'
	thresh=$(echo "$out" | sed -n 's/^# *tag_send: .*\.\.\([0-9][0-9]*\)\.\.<rndv>.*/\1/p')
	if [ -n "$thresh" ] && [ "$thresh" -le 1048583 ]; then
		echo "ok 1 - UCX sends tagged messages of $thresh bytes and more by rendezvous (41-mpi's large messages start at 1048583)"
	else
		echo "not ok 1 - UCX sends tagged messages of 1048583 bytes and more by rendezvous (threshold: ${thresh:-none printed})"
	fi
	if echo "$out" | grep -Eq 'rc_verbs/rxe0:1.* rma_bw'; then
		echo "ok 2 - UCX's rendezvous (RMA bandwidth) lane is rc_verbs on rxe0"
	else
		echo "not ok 2 - UCX's rendezvous (RMA bandwidth) lane is rc_verbs on rxe0"
	fi
}

# The distributed GEMM example across both guests, checked by rank 0
# against a single-process reference: gemm c (examples/mpi_gemm.c) or
# gemm py (examples/mpi_gemm.py with mpi4py, NumPy and the extension).
# Its messages are contiguous memory: the pack counter's exit lines (one
# per rank) must add up to 0 bytes packed and unpacked.
gemm() {
	case $1 in
	c) name=examples/mpi_gemm.c; set -- "$bin/mpi-gemm" ;;
	py) name="examples/mpi_gemm.py (mpi4py)"
		set -- -x PYTHONPATH=/gpubuf/cluster/python -x LD_LIBRARY_PATH="$bin" \
			/usr/bin/python3 /gpubuf/cluster/mpi_gemm.py ;;
	esac
	need_peer "$name" || return
	echo "1..2"
	out=$(mpirun_both "$@" 256 192 320 2>&1)
	rc=$?
	echo "$out" | sed 's/^\([^#]\)/# \1/'
	if [ $rc = 0 ] && echo "$out" | grep -q 'matches the single-process reference'; then
		echo "ok 1 - $name: 256x192x320 GEMM on two guests matches the reference"
	else
		echo "not ok 1 - $name: 256x192x320 GEMM on two guests matches the reference (exit $rc)"
	fi
	# shellcheck disable=SC2046
	set -- $(echo "$out" | awk '/^# ucx-pack-count: pid /{n++; p += $9; u += $12}
		END {print n + 0, p + 0, u + 0}')
	if [ "$1" = 2 ] && [ "$2" = 0 ] && [ "$3" = 0 ]; then
		echo "ok 2 - $name: its messages are contiguous memory, 0 bytes packed or unpacked by the CPU through UCX generic datatypes (pack counter, 2 ranks)"
	else
		echo "not ok 2 - $name: its messages are contiguous memory, 0 bytes packed or unpacked by the CPU through UCX generic datatypes (pack counter: $1 of 2 ranks reported, $2 bytes packed, $3 unpacked)"
	fi
}

# gpubuf-bench rdma between the guests (gpubuf vs mlock'd memory, both
# sides), then perftest's ib_write_bw on the same link as the anchor.
# pair NAME LIMIT SERVER CLIENT: SERVER on node2 in the background, then
# CLIENT here once the server has had 5 s to listen, both chrooted in the
# host's root and given LIMIT seconds (a client that fails before
# connecting leaves its server waiting). Output in /tmp/NAME.out and
# /tmp/NAME-serve.out; the client's exit status is returned.
pair() {
	"$bin/gb-rsh" 10.77.0.2 "timeout $2 $3" >"/tmp/$1-serve.out" 2>&1 &
	sleep 5
	# shellcheck disable=SC2086
	/gpubuf/host-run timeout "$2" $4 >"/tmp/$1.out" 2>"/tmp/$1.err"
	rc=$?
	wait
	return $rc
}

bench() {
	need_peer "gpubuf-bench rdma" || return
	echo "1..3"
	gb="env LD_LIBRARY_PATH=$bin GPUBUF_BACKEND=module $bin/gpubuf-bench rdma"
	# Small: under TCG one 8-byte round trip takes milliseconds.
	args="--sizes 64K,1M --reps 3 --warmup 1 --rep-bytes 2M"
	pair bench 600 "$gb --serve $args" "$gb --peer 10.77.0.2 $args"
	rc=$?
	sed 's/^/# gpubuf-bench: /' /tmp/bench.out
	sed 's/^/# gpubuf-bench stderr: /' /tmp/bench.err | tail -n 5
	if [ $rc = 0 ] && grep -q '^write .*gpubuf' /tmp/bench.out && grep -q '^read .*mlock' /tmp/bench.out; then
		echo "ok 1 - gpubuf-bench rdma --peer: WRITE and READ rows for gpubuf and mlock memory (exit $rc)"
	else
		echo "not ok 1 - gpubuf-bench rdma --peer: WRITE and READ rows for gpubuf and mlock memory (exit $rc)"
		sed 's/^/# serve: /' /tmp/bench-serve.out | tail -n 5
	fi
	if grep -Eq '^rdma_write_gpubuf_vs_mlock +[0-9]' /tmp/bench.out &&
		grep -Eq '^rdma_read_gpubuf_vs_mlock +[0-9]' /tmp/bench.out; then
		echo "ok 2 - gpubuf-bench rdma printed the gpubuf/mlock ratios from interleaved pairs"
	else
		echo "not ok 2 - gpubuf-bench rdma printed the gpubuf/mlock ratios from interleaved pairs"
	fi
	perf="ib_write_bw -d rxe0 -x $(gid_index) -s 1048576 -n 50 -F"
	pair perf 120 "$perf" "$perf 10.77.0.2"
	rc=$?
	cat /tmp/perf.err >>/tmp/perf.out
	sed 's/^/# ib_write_bw: /' /tmp/perf.out | tail -n 8
	if [ $rc = 0 ] && grep -Eq '^ *1048576 +50 ' /tmp/perf.out; then
		echo "ok 3 - perftest ib_write_bw, 1 MiB x 50 on the same link (the anchor)"
	else
		echo "not ok 3 - perftest ib_write_bw, 1 MiB x 50 on the same link (the anchor; exit $rc)"
	fi
}

# Nothing left behind: every MPI job has ended, so no buffer may be live
# and no page may still be pinned (held) on either node. Then node2's
# server stops.
stop() {
	echo "1..3"
	st=/sys/class/misc/gpubuf
	n=0
	for node in 10.77.0.1 10.77.0.2; do
		n=$((n + 1))
		if [ $node = 10.77.0.1 ]; then
			left="$(cat $st/live_buffers) $(cat $st/held_bytes)"
		else
			left=$("$bin/gb-rsh" $node "cat $st/live_buffers $st/held_bytes" | tr '\n' ' ')
		fi
		# shellcheck disable=SC2086
		set -- $left
		if [ "${1:-x}" = 0 ] && [ "${2:-x}" = 0 ]; then
			echo "ok $n - $node: no gpubuf buffer live and none held after the jobs ended"
		else
			echo "not ok $n - $node: no gpubuf buffer live and none held after the jobs ended (live_buffers, held_bytes: ${left:-unreadable})"
		fi
	done
	if "$bin/gb-rsh" --stop 10.77.0.2; then
		echo "ok 3 - node1: node2's gb-rsh server stopped"
	else
		echo "not ok 3 - node1: node2's gb-rsh server stopped"
	fi
}

step=$1
shift
case $step in
net | serve | mpi | protocol | gemm | bench | stop) "$step" "$@" ;;
*) echo "usage: node.sh net N | serve | mpi NAME ARGS | protocol | gemm c|py | bench | stop" >&2; exit 2 ;;
esac
