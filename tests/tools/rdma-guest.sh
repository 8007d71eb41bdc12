#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: gpubuf-bench rdma --serve and --peer on soft-RoCE (rxe0) in
# the QEMU guest, both sides in the one guest: where the server listens,
# what it lets a peer ask for and do, and the side channel's timeouts on
# both sides. Guest suite 46-bench-rdma (tests/check.sh); busybox only.
# TAP on stdout with the plan computed at the end.
#
# GPUBUF_RDMA_BIN names the directory holding the dynamic gpubuf-bench,
# libgpubuf.so.0 and bench-peer (tests/rdma/bench_peer.c); default
# /gpubuf/rdma-bin. Every server and client runs under timeout(1), so the
# old behaviour (a wait without end) fails a test instead of the suite.
set -u
dir=${GPUBUF_RDMA_BIN:-/gpubuf/rdma-bin}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpubuf-rdma.XXXXXX") || exit 1
fifo=$tmp/silence
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; kill -CONT "$p" 2>/dev/null; done
	exec 9>&- 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

n=0 failed=0
result() { # status name [file...]
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
		shift 2
		for f in "$@"; do
			[ -f "$f" ] && sed "s|^|# ${f##*/}: |" "$f" | head -n 20
		done
	fi
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
bench() { # gpubuf-bench at most 120 s
	timeout 120 env LD_LIBRARY_PATH="$dir" GPUBUF_BACKEND=module "$dir/gpubuf-bench" "$@"
}
# serve NAME PORT ARGS...: a server in the background, $tmp/NAME.{out,err},
# its status later in $tmp/NAME.rc (reap); returns once it listens (or quit).
serve() {
	sv=$1 port=$2
	shift 2
	(bench rdma --serve --tcp-port "$port" "$@" >"$tmp/$sv.out" 2>"$tmp/$sv.err"
	 echo $? >"$tmp/$sv.rc") &
	i=0
	while ! grep -q 'waiting for a peer' "$tmp/$sv.err" 2>/dev/null &&
		[ ! -f "$tmp/$sv.rc" ] && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}
reap() { # NAME: wait until the server's status is there (up to 130 s)
	i=0
	while [ ! -f "$tmp/$1.rc" ] && [ $i -lt 1300 ]; do sleep 0.1; i=$((i + 1)); done
	[ -f "$tmp/$1.rc" ] || echo none >"$tmp/$1.rc"
}
run() { # NAME ARGS...: stdout NAME.out, stderr NAME.err, status NAME.rc
	name=$1
	shift
	"$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
	echo $? >"$tmp/$name.rc"
}
rc() { cat "$tmp/$1.rc"; }
listening() { # ADDR:PORT, as netstat prints it
	netstat -ltn 2>/dev/null | awk -v a="$1" '$4 == a && $6 == "LISTEN" { f = 1 } END { exit !f }'
}
listeners() { # PORT: every local address listening on it
	netstat -ltn 2>/dev/null | awk -v p="$1" '$6 == "LISTEN" && $4 ~ ":" p "$" { print $4 }'
}

if [ ! -x "$dir/gpubuf-bench" ] || [ ! -x "$dir/bench-peer" ]; then
	echo "Bail out! $dir/gpubuf-bench or $dir/bench-peer missing (tests/check.sh stages them)"
	exit 1
fi

# ---- soft-RoCE: rxe0 on the Ethernet device (45-rdma may have made it) ------
if [ ! -d /sys/class/infiniband/rxe0 ]; then
	for m in crc32_generic e1000 rdma_rxe ib_uverbs; do modprobe "$m" 2>/dev/null; done
	i=0
	while [ ! -d /sys/class/net/eth0 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	ip link set eth0 up 2>/dev/null
	ip addr show dev eth0 2>/dev/null | grep -q 'inet ' ||
		ip addr add 10.0.2.15/24 dev eth0 2>/dev/null
	rdma link add rxe0 type rxe netdev eth0 >"$tmp/rxe.err" 2>&1
fi
# Loopback too: the guest's own addresses are reached through lo.
ip link set lo up
# The port goes ACTIVE, and its IPv4 RoCE v2 GID appears, a while after
# the device (up to 60 s under TCG).
port=/sys/class/infiniband/rxe0/ports/1
i=0
until [ -e /dev/infiniband/uverbs0 ] && grep -q ACTIVE "$port/state" 2>/dev/null &&
	cat "$port"/gids/* 2>/dev/null | grep -q '^0000:0000:0000:0000:0000:ffff:'; do
	[ $i -ge 600 ] && break
	sleep 0.1
	i=$((i + 1))
done
ndev=$(cat "$port/gid_attrs/ndevs/0" 2>/dev/null)
addr=$(ip addr show dev "${ndev:-eth0}" 2>/dev/null | sed -n 's/.*inet \([0-9.]*\)\/.*/\1/p' | head -n 1)
[ $i -lt 600 ] && [ -n "$ndev" ] && [ -n "$addr" ]
result $? "rxe0 active on $ndev with IPv4 address $addr" "$tmp/rxe.err" "$port/state"
if [ $i -ge 600 ] || [ -z "$addr" ]; then
	echo "1..$n"
	exit 1
fi
mkfifo "$fifo" && exec 9<>"$fifo"
# Word-split where used.
small="--sizes 4K,64K --reps 1 --warmup 0 --rep-bytes 64K"

# ---- where the server listens -----------------------------------------------
# By default on rxe0's network device's address only: 127.0.0.1 is refused.
serve bind 7472
listeners 7472 >"$tmp/bind.listeners"
nc -w 5 127.0.0.1 7472 </dev/null >"$tmp/bind.nc" 2>&1
nc_rc=$?
grep -q "^gpubuf-bench rdma: waiting for a peer on $addr ($ndev, of rxe0 port 1) port 7472$" "$tmp/bind.err" &&
	[ "$(cat "$tmp/bind.listeners")" = "$addr:7472" ] && [ $nc_rc != 0 ]
result $? "--serve listens on $addr ($ndev, rxe0's network device) only: 127.0.0.1 is refused" \
	"$tmp/bind.err" "$tmp/bind.listeners" "$tmp/bind.nc"

# A whole run against that address.
# shellcheck disable=SC2086
run full bench rdma --peer "$addr" --tcp-port 7472 $small
reap bind
[ "$(rc full)" = 0 ] && [ "$(rc bind)" = 0 ] &&
	grep -q '^write .*gpubuf' "$tmp/full.out" && grep -q '^read .*mlock' "$tmp/full.out" &&
	grep -q 'read_lat' "$tmp/full.out" &&
	grep -q "served one peer on $addr ($ndev, of rxe0 port 1), granting remote write and read" "$tmp/bind.out"
result $? "a --peer run on $addr: WRITE and READ rows; the server granted write and read" \
	"$tmp/full.out" "$tmp/full.err" "$tmp/bind.out" "$tmp/bind.err"

# --bind 0.0.0.0: every interface, so 127.0.0.1 reaches it (and the server
# fails: that connection sent no hello).
serve any 7473 --bind 0.0.0.0
listeners 7473 >"$tmp/any.listeners"
nc -w 5 127.0.0.1 7473 </dev/null >/dev/null 2>&1
reap any
[ "$(cat "$tmp/any.listeners")" = "0.0.0.0:7473" ] && [ "$(rc any)" = 1 ] &&
	grep -q "^gpubuf-bench rdma: waiting for a peer on 0.0.0.0 (--bind) port 7473$" "$tmp/any.err" &&
	grep -q "^rdma: unavailable: the peer closed the connection (waiting for the peer's hello)$" "$tmp/any.out"
result $? "--serve --bind 0.0.0.0 listens on every interface: 127.0.0.1 reaches it" \
	"$tmp/any.listeners" "$tmp/any.out" "$tmp/any.err"

# ---- what the server lets a peer ask for ------------------------------------
# Sizes up to --max-size, by default the largest of --sizes, else 4 MiB.
serve cap 7474
run capc bench rdma --peer "$addr" --tcp-port 7474 --sizes 64K,8M --reps 1 --warmup 0
reap cap
[ "$(rc capc)" = 1 ] && [ "$(rc cap)" = 1 ] &&
	grep -q '^rdma: unavailable: the server refused: the peer asked to measure sizes up to 8 MiB; this server allows up to 4 MiB (its --max-size)$' "$tmp/capc.out" &&
	grep -q '^rdma: unavailable: refused the peer: the peer asked to measure sizes up to 8 MiB; this server allows up to 4 MiB (its --max-size)$' "$tmp/cap.out"
result $? "--serve refuses a peer's 8 MiB size above its default 4 MiB; both sides fail (1) saying so" \
	"$tmp/capc.out" "$tmp/capc.err" "$tmp/cap.out" "$tmp/cap.err"

# The server gives up after 10 s of silence: the client's line at least
# every second keeps it waiting while the client measures.
serve cap8 7475 --max-size 8M --tcp-timeout 10
run cap8c bench rdma --peer "$addr" --tcp-port 7475 --sizes 8M --ops write --reps 1 --warmup 0 --rep-bytes 8M
reap cap8
[ "$(rc cap8c)" = 0 ] && [ "$(rc cap8)" = 0 ] &&
	grep -q '^write .*8 MiB' "$tmp/cap8c.out" && ! grep -q '^read' "$tmp/cap8c.out" &&
	grep -q 'granting remote write only$' "$tmp/cap8.out"
result $? "--serve --max-size 8M lets a peer measure 8 MiB; --ops write: WRITE rows only, write granted only" \
	"$tmp/cap8c.out" "$tmp/cap8c.err" "$tmp/cap8.out" "$tmp/cap8.err"

# Never above the port's max_msg_sz, whatever --max-size says: 3 GiB sizes
# (6 GiB buffers) are refused, not allocated.
serve msgs 7484 --max-size 3G
echo "hello 6442450944 write,read" | nc -w 30 "$addr" 7484 >"$tmp/msgs.nc" 2>&1
reap msgs
[ "$(rc msgs)" = 1 ] &&
	grep -Eq '^refused the peer asked to measure sizes up to 3 GiB, above this port.s max_msg_sz \([0-9.]+ [KMG]iB\)$' "$tmp/msgs.nc"
result $? "--serve --max-size 3G still refuses 3 GiB sizes above rxe0's max_msg_sz" \
	"$tmp/msgs.nc" "$tmp/msgs.out" "$tmp/msgs.err"

# A peer of an older gpubuf-bench ("hello SIZE", no operations): refused.
serve old 7476
echo "hello 8192" | nc -w 30 "$addr" 7476 >"$tmp/old.nc" 2>&1
reap old
[ "$(rc old)" = 1 ] && grep -q '^refused the peer.s gpubuf-bench is older than this one' "$tmp/old.nc"
result $? "--serve answers a peer's hello without operations with 'refused', naming the version" \
	"$tmp/old.nc" "$tmp/old.out"

# ---- the rkeys: only what was asked for -------------------------------------
# The other operation is refused: by the queue pair's access flags (rxe
# answers "remote invalid request") or by the registration's ("remote
# access"); 5.10's rxe answers it with no completion at all within the
# peer's 15 s, while the operations asked for complete at once.
for ops in read:write:7477 write:read:7478; do
	port=${ops##*:} other=${ops#*:}
	other=${other%:*} ops=${ops%%:*}
	OPS=$(echo "$ops" | tr '[:lower:]' '[:upper:]')
	OTHER=$(echo "$other" | tr '[:lower:]' '[:upper:]')
	serve "acc$ops" "$port"
	run "peer$ops" timeout 120 "$dir/bench-peer" "$addr" "$port" "$ops"
	reap "acc$ops"
	[ "$(rc "peer$ops")" = 0 ] && [ "$(rc "acc$ops")" = 0 ] &&
		grep -q "^$OPS gpubuf: ok$" "$tmp/peer$ops.out" &&
		grep -q "^$OPS mlock: ok$" "$tmp/peer$ops.out" &&
		grep -Eq "^$OTHER gpubuf: (completion status remote (invalid request|access) error|no completion within 15 s)" "$tmp/peer$ops.out" &&
		grep -q "granting remote $ops only$" "$tmp/acc$ops.out"
	result $? "a peer that asked for $ops may $ops both kinds of memory; its $other is refused" \
		"$tmp/peer$ops.out" "$tmp/peer$ops.err" "$tmp/acc$ops.out" "$tmp/acc$ops.err"
done

# ---- the client's refusals and timeouts --------------------------------------
# Above the port's max_msg_sz (rxe: 8 MiB, 2 GiB on later kernels) and
# below 4 GiB: refused before anything is allocated or connected (a
# listener there sees nothing).
nc -l -p 7479 </dev/null >"$tmp/msg.nc" 2>&1 &
ncpid=$!
pids="$pids $ncpid"
sleep 0.5
run msg bench rdma --peer "$addr" --tcp-port 7479 --sizes 64K,3G
kill $ncpid 2>/dev/null
[ "$(rc msg)" = 1 ] && [ ! -s "$tmp/msg.nc" ] &&
	grep -Eq '^rdma: unavailable: size 3 GiB refused: above the max_msg_sz of rxe0 port 1 \([0-9.]+ [KMG]iB\)$' "$tmp/msg.out"
result $? "--peer --sizes 64K,3G fails (1) before connecting: above rxe0's max_msg_sz" \
	"$tmp/msg.out" "$tmp/msg.err" "$tmp/msg.nc"
sed -n 's/^rdma: unavailable: size 3 GiB refused: /# /p' "$tmp/msg.out"

# Nobody listening: unavailable (77), naming --serve.
run refused bench rdma --peer "$addr" --tcp-port 7480
[ "$(rc refused)" = 77 ] &&
	grep -q "^rdma: unavailable: connecting to $addr port 7480 (is 'gpubuf-bench rdma --serve' running there?): Connection refused$" "$tmp/refused.out"
result $? "--peer with nobody listening is unavailable (77) and names --serve" "$tmp/refused.out"

# A server that takes the connection and never answers: the client gives up.
nc -l -p 7481 <"$fifo" >/dev/null 2>&1 &
ncpid=$!
pids="$pids $ncpid"
sleep 0.5
# shellcheck disable=SC2086
run silent bench rdma --peer 127.0.0.1 --tcp-port 7481 --tcp-timeout 2 $small
kill $ncpid 2>/dev/null
[ "$(rc silent)" = 1 ] &&
	grep -q "^rdma: unavailable: timed out after 2 s (--tcp-timeout) waiting for the server's answer$" "$tmp/silent.out"
result $? "--peer --tcp-timeout 2 against a server that never answers fails (1) saying it timed out" \
	"$tmp/silent.out" "$tmp/silent.err"

# A connection that never completes: a stopped listener whose backlog is
# full drops the SYNs. Unavailable (77), saying it timed out.
nc -l -p 7482 <"$fifo" >/dev/null 2>&1 &
ncpid=$!
pids="$pids $ncpid"
sleep 0.5
kill -STOP $ncpid
for f in 1 2 3 4; do
	timeout 60 nc 127.0.0.1 7482 <"$fifo" >/dev/null 2>&1 &
	pids="$pids $!"
done
sleep 1
# shellcheck disable=SC2086
run conn bench rdma --peer 127.0.0.1 --tcp-port 7482 --tcp-timeout 2 $small
[ "$(rc conn)" = 77 ] &&
	grep -q "^rdma: unavailable: connecting to 127.0.0.1 port 7482: timed out after 2 s (--tcp-timeout)$" "$tmp/conn.out"
result $? "--peer --tcp-timeout 2 whose connection never completes is unavailable (77), saying it timed out" \
	"$tmp/conn.out" "$tmp/conn.err"

# ---- the server's timeout ------------------------------------------------------
# A peer that connects and says nothing: the server gives up.
serve mute 7483 --tcp-timeout 2
nc "$addr" 7483 <"$fifo" >/dev/null 2>&1 &
pids="$pids $!"
reap mute
[ "$(rc mute)" = 1 ] &&
	grep -q "^rdma: unavailable: timed out after 2 s (--tcp-timeout) waiting for the peer's hello$" "$tmp/mute.out"
result $? "--serve --tcp-timeout 2 with a peer that says nothing fails (1) saying it timed out" \
	"$tmp/mute.out" "$tmp/mute.err"

# ---- gpubuf-info --processes with an MR holding a released buffer ---------------
# Two processes: mr-hold registered a 2 MiB buffer on rxe0, then unmapped
# and closed it (released, its pages pinned by the MR); gpubuf-test-hold
# keeps a buffer by fd and one by a mapping. The held bytes are the MR's,
# owned by no process (mr-hold has no row: it holds no buffer and no
# /dev/gpubuf); killing mr-hold deregisters the MR and frees them.
info=/gpubuf/bin/gpubuf-info
hold=/gpubuf/bin/gpubuf-test-hold
if [ -x "$dir/mr-hold" ] && [ -x "$info" ] && [ -x "$hold" ]; then
	# The mapping-only buffer is confirmed through debugfs.
	grep -q ' /sys/kernel/debug ' /proc/mounts ||
		mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	held0=$(cat /sys/class/misc/gpubuf/held_bytes)
	LD_LIBRARY_PATH="$dir" "$dir/mr-hold" >"$tmp/mrhold.out" 2>&1 &
	mrpid=$!
	"$hold" fds >"$tmp/fdhold.out" 2>&1 &
	fdpid=$!
	pids="$pids $mrpid $fdpid"
	i=0
	while [ $i -lt 300 ] && ! { grep -q ready "$tmp/mrhold.out" && grep -q ready "$tmp/fdhold.out"; }; do
		sleep 0.1
		i=$((i + 1))
	done
	"$info" --processes >"$tmp/procs.out" 2>&1
	procs_rc=$?
	kill "$mrpid" "$fdpid" 2>/dev/null
	wait "$mrpid" "$fdpid" 2>/dev/null
	i=0
	while [ "$(cat /sys/class/misc/gpubuf/held_bytes)" != "$held0" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	held1=$(cat /sys/class/misc/gpubuf/held_bytes)
	echo "held_bytes before $held0, after the MR's process exited $held1" >>"$tmp/procs.out"
	[ $procs_rc = 0 ] && [ "$held0" = 0 ] && [ "$held1" = 0 ] &&
		! grep -Eq "^$mrpid " "$tmp/procs.out" &&
		grep -Eq "^$fdpid +gpubuf-test-hol +1 +2 +4194304 +2 +4194304 +1 +1\$" "$tmp/procs.out" &&
		grep -q 'held after release, owned by no process: 2097152 bytes in 1 buffers' "$tmp/procs.out"
	result $? "gpubuf-info --processes: the 2 MiB an MR pins after release, owned by no process, beside a process holding two buffers; gone with the MR" \
		"$tmp/procs.out" "$tmp/mrhold.out"
	sed 's/^/# processes: /' "$tmp/procs.out"
else
	skip "gpubuf-info --processes: the 2 MiB an MR pins after release, owned by no process, beside a process holding two buffers; gone with the MR" \
		"no $dir/mr-hold, $info or $hold"
fi

echo "1..$n"
[ $failed = 0 ]
