#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: gpubuf-bench and gpubuf-info in the QEMU guest (module
# backend, vgem loaded, busybox only: no python). TAP on stdout with the
# plan computed at the end. Sizes are tiny: under TCG only the ratios
# within one run mean anything, and the point here is that every mode runs
# on the real module and reports sane values.
#
# GPUBUF_TOOLS names the directory holding the static gpubuf-bench and
# gpubuf-info (default /gpubuf/bin, then the directory of this script).
set -u
dir=${GPUBUF_TOOLS:-/gpubuf/bin}
[ -x "$dir/gpubuf-bench" ] || dir=$(cd "$(dirname "$0")" && pwd)
bench=$dir/gpubuf-bench
info=$dir/gpubuf-info
export GPUBUF_BACKEND=module
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpubuf-tools.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
params=/sys/module/gpubuf/parameters
class=/sys/class/misc/gpubuf

n=0 failed=0
result() { # status name [file]
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
		[ -n "${3:-}" ] && [ -f "$3" ] && sed 's/^/# /' "$3" | head -n 30
	fi
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
run() { # name args...; stdout NAME.out, stderr NAME.err, status NAME.rc
	name=$1
	shift
	"$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
	echo $? >"$tmp/$name.rc"
}
rc() { cat "$tmp/$1.rc"; }
# Count CSV rows of a mode with status ok and a positive median.
csv_ok() { # file mode
	awk -F, -v m="$2" '$1 == m && $14 == "ok" && $9 + 0 > 0 { n++ } END { print n + 0 }' "$1"
}

if [ ! -x "$bench" ] || [ ! -x "$info" ]; then
	echo "Bail out! gpubuf-bench/gpubuf-info not found in $dir"
	exit 1
fi
live0=$(cat "$class/live_buffers" 2>/dev/null)

run info "$info"
[ "$(rc info)" = 0 ] && grep -q '^backend  *module$' "$tmp/info.out" &&
	grep -q '^driver  *[0-9]*\.[0-9]*\.[0-9]*, ABI [0-9]*\.\.[0-9]*$' "$tmp/info.out" &&
	grep -q '^max_buffer_bytes  *[0-9][0-9]*$' "$tmp/info.out" &&
	grep -q '^live_buffers  *[0-9][0-9]*$' "$tmp/info.out"
result $? "gpubuf-info shows backend module, driver ABI, limits and counters" "$tmp/info.out"

# A mount namespace without /dev/gpubuf while the module is loaded, as a
# container not given the device has (podman's /run/.containerenv in it):
# ENOENT, and the library's message names the CDI device to ask for.
run nodev unshare -m sh -c "mount -t tmpfs none /dev && mkdir -p /run && mount -t tmpfs none /run &&
	touch /run/.containerenv && GPUBUF_BACKEND=module '$info'"
[ "$(rc nodev)" = 0 ] &&
	grep -q '^backend  *none: open /dev/gpubuf: no such device node, but gpubuf.ko is loaded: this container was not given the device (podman run --device gpubuf.org/gpubuf=all)$' "$tmp/nodev.out"
result $? "without /dev/gpubuf in a container's mount namespace, the module loaded: the message names the CDI device" "$tmp/nodev.out"
# Docker's mark (/.dockerenv) says container too.
touch /.dockerenv 2>/dev/null
run nodevdocker unshare -m sh -c "mount -t tmpfs none /dev && mkdir -p /run && mount -t tmpfs none /run &&
	GPUBUF_BACKEND=module '$info'"
rm -f /.dockerenv
[ "$(rc nodevdocker)" = 0 ] &&
	grep -q 'this container was not given the device' "$tmp/nodevdocker.out"
result $? "without /dev/gpubuf and with Docker's /.dockerenv: the container's message" "$tmp/nodevdocker.out"
# The same on a host (no container's mark): udev has not made the node,
# which is no matter of containers (issue 49, item 6).
run nodevhost unshare -m sh -c "mount -t tmpfs none /dev && mkdir -p /run && mount -t tmpfs none /run &&
	GPUBUF_BACKEND=module '$info'"
[ "$(rc nodevhost)" = 0 ] &&
	grep -q '^backend  *none: open /dev/gpubuf: no such device node, but gpubuf.ko is loaded: udev has not created it (yet: udevadm settle; or a rule removed it), or it was deleted$' "$tmp/nodevhost.out" &&
	! grep -q container "$tmp/nodevhost.out"
result $? "without /dev/gpubuf on a host, the module loaded: the message says udev has not created it, not that a container was not given it" "$tmp/nodevhost.out"

# A 64 MiB buffer, placed and populated by libgpubuf: all 2 MiB entries.
run infomap "$info" --map 64M
[ "$(rc infomap)" = 0 ] &&
	grep -q '^mapping  *67108864 bytes, 2 MiB-aligned: 100.0% in 2 MiB (PMD) entries, 100.0% resident$' "$tmp/infomap.out"
result $? "gpubuf-info --map 64M: 100% of the mapping in 2 MiB entries" "$tmp/infomap.out"

run infojson "$info" --json
grep -q '"backend": "module"' "$tmp/infojson.out" &&
	grep -q '"module_loaded": true' "$tmp/infojson.out" &&
	grep -q '"driver": "vgem"' "$tmp/infojson.out"
result $? "gpubuf-info --json names backend module and the vgem card" "$tmp/infojson.out"

run host "$bench" host --sizes 4K,64K --rep-bytes 256K --reps 3 --warmup 0 --csv
[ "$(rc host)" = 0 ] && [ "$(csv_ok "$tmp/host.out" host)" = 18 ] &&
	[ "$(grep -cE '^ratio,(read|write|copy)_gpubuf_vs_(mlock|malloc),gpubuf,65536,1,3,-1,ratio,[0-9.e+-]+,.*,ok,$' "$tmp/host.out")" = 6 ]
result $? "host: 18 measured rows with positive GB/s and six ratios at 64 KiB" "$tmp/host.out"

# Ratios come from 3 interleaved pairs (reps column) with their spread:
# min <= median <= max, all positive.
awk -F, '$1 == "ratio" { n++; if ($6 != 3 || !($10 + 0 > 0 && $10 + 0 <= $9 + 0 && $9 + 0 <= $11 + 0)) bad++ }
	END { exit !(n == 6 && !bad) }' "$tmp/host.out"
result $? "host: every ratio from 3 interleaved pairs, min <= median <= max" "$tmp/host.out"

if grep -q QEMU /sys/class/dmi/id/sys_vendor 2>/dev/null; then
	grep -q '^note: running under emulation (QEMU); only ratios within this run are meaningful$' "$tmp/host.err"
	result $? "the emulation note is on stderr" "$tmp/host.err"
else
	skip "the emulation note is on stderr" "not running under QEMU"
fi

run alloc "$bench" alloc --sizes 1M,4M --reps 2 --csv
[ "$(rc alloc)" = 0 ] && [ "$(csv_ok "$tmp/alloc.out" alloc)" = 6 ] &&
	grep -qE '^ratio,alloc_gpubuf_vs_anon_mlock,gpubuf,4194304,1,2,-1,ratio,[0-9.e+-]+,.*,ok,$' "$tmp/alloc.out" &&
	grep -qE '^ratio,alloc_gpubuf_vs_anon_thp_mlock,gpubuf,4194304,1,2,-1,ratio,[0-9.e+-]+,.*,ok,$' "$tmp/alloc.out"
result $? "alloc: gpubuf, anon_mlock and anon_thp_mlock measured at two sizes, ratios from 2 pairs at 4 MiB" "$tmp/alloc.out"

# The module's 4 MiB buffer is mapped with two 2 MiB entries, as is the
# anonymous THP memory; 1 MiB fits no PMD.
run pmd "$bench" alloc --sizes 1M,4M --reps 1 --warmup 0 --json
[ "$(rc pmd)" = 0 ] &&
	tr -d ' \n' <"$tmp/pmd.out" | grep -q '"memory":"gpubuf","size_bytes":4194304,[^}]*"pmd_mapped_pct":100[,}]' &&
	tr -d ' \n' <"$tmp/pmd.out" | grep -q '"memory":"anon_thp_mlock","size_bytes":4194304,[^}]*"pmd_mapped_pct":100[,}]' &&
	tr -d ' \n' <"$tmp/pmd.out" | grep -q '"memory":"gpubuf","size_bytes":1048576,[^}]*"pmd_mapped_pct":0[,}]'
result $? "alloc: gpubuf's 4 MiB mapping is 100% PMD-mapped, like anonymous THP" "$tmp/pmd.out"

# The cap: a size above max_buffer_bytes is a skipped row, not an error.
old=$(cat "$params/max_buffer_bytes")
if echo 1048576 >"$params/max_buffer_bytes" 2>/dev/null; then
	run cap "$bench" alloc --sizes 1M,4M --reps 1 --warmup 0 --csv
	echo "$old" >"$params/max_buffer_bytes"
	[ "$(rc cap)" = 0 ] && [ "$(csv_ok "$tmp/cap.out" alloc)" = 3 ] &&
		grep -q '^alloc,alloc_map_touch,gpubuf,4194304,.*,skipped,4 MiB above max_buffer_bytes (1 MiB)$' "$tmp/cap.out" &&
		grep -q '^ratio,alloc_gpubuf_vs_anon_mlock,gpubuf,4194304,.*,unavailable,gpubuf at 4 MiB skipped: 4 MiB above max_buffer_bytes (1 MiB)' "$tmp/cap.out"
	result $? "alloc skips sizes above max_buffer_bytes; the 4 MiB ratio says why it is unavailable" "$tmp/cap.out"
else
	skip "alloc skips sizes above max_buffer_bytes with the reason" "cannot write $params/max_buffer_bytes"
fi

if ls /dev/dri/card* >/dev/null 2>&1; then
	run drm "$bench" drm --sizes 4K,1M --reps 10 --warmup 2 --csv
	[ "$(rc drm)" = 0 ] && [ "$(csv_ok "$tmp/drm.out" drm)" = 6 ] &&
		grep -q '^drm,prime_fd_to_handle,gpubuf,4096,.*lat_ns.*,ok,/dev/dri/card[0-9]* (vgem)$' "$tmp/drm.out"
	result $? "drm: PRIME import and GEM close latency into vgem" "$tmp/drm.out"
	run drmtable "$bench" drm --sizes 64K --reps 5 --warmup 1
	[ "$(rc drmtable)" = 0 ] &&
		grep -q '^# drm: PRIME import latency, ns, into /dev/dri/card[0-9]* (vgem)$' "$tmp/drmtable.out" &&
		grep -qE '^import_close_total +64 KiB +[0-9]+ ' "$tmp/drmtable.out"
	result $? "drm table names the device and shows the total" "$tmp/drmtable.out"
else
	skip "drm: PRIME import and GEM close latency into vgem" "no /dev/dri/card*"
	skip "drm table names the device and shows the total" "no /dev/dri/card*"
fi

# The static gpubuf-bench: libgpubuf's driver loader finds no libcuda.so.1
# (or the tools were built without the CUDA headers).
run cuda "$bench" cuda hsa
[ "$(rc cuda)" = 77 ] &&
	grep -qE '^cuda: unavailable: (no NVIDIA driver: libcuda\.so\.1|gpubuf-bench was built without CUDA support)' "$tmp/cuda.out" &&
	grep -q '^hsa: unavailable: ' "$tmp/cuda.out"
result $? "cuda and hsa alone are unavailable in the guest (exit 77)" "$tmp/cuda.out"

# --processes: two processes, one holding a buffer by fd and one by a
# mapping only, the other having released a buffer a pin still holds
# (as an RDMA MR would): their rows, each buffer's line (the fd's with
# the node it was asked for, through GPUBUF_IOC_INFO on a pidfd_getfd()
# copy), and the held bytes no one owns.
hold=$dir/gpubuf-test-hold
# A buffer kept by a mapping alone is confirmed as gpubuf's through the
# dma-buf core's debugfs list.
grep -q ' /sys/kernel/debug ' /proc/mounts ||
	mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
if [ -x "$hold" ] && [ -e /dev/gpubuf_pinprobe ]; then
	"$hold" fds >"$tmp/hold1" 2>&1 &
	h1=$!
	"$hold" pinned >"$tmp/hold2" 2>&1 &
	h2=$!
	i=0
	while [ $i -lt 100 ] && ! { grep -q ready "$tmp/hold1" && grep -q ready "$tmp/hold2"; }; do
		sleep 0.1
		i=$((i + 1))
	done
	run procs "$info" --processes
	run procsjson "$info" --processes --json
	grep dmabuf "/proc/$h1/maps" >"$tmp/procs.maps" 2>&1
	kill "$h1" "$h2" 2>/dev/null
	wait "$h1" "$h2" 2>/dev/null
	# pid command dev allocated bytes holds bytes fds maps
	[ "$(rc procs)" = 0 ] &&
		grep -Eq "^$h1 +gpubuf-test-hol +1 +2 +4194304 +2 +4194304 +1 +1\$" "$tmp/procs.out" &&
		grep -Eq "^$h2 +gpubuf-test-hol +1 +0 +0 +0 +0 +0 +0\$" "$tmp/procs.out" &&
		grep -Eq '^  dma-buf [0-9]+: 1048576 bytes by fd, requested node 0, [1-9][0-9]* chunks, 0 bytes in 2 MiB pages, 0 from the reserve$' "$tmp/procs.out" &&
		grep -Eq '^  dma-buf [0-9]+: 3145728 bytes by mapping; node and chunks need an fd of it$' "$tmp/procs.out" &&
		grep -q 'held after release, owned by no process: 2097152 bytes in 1 buffers' "$tmp/procs.out" &&
		grep -q '"requested_node": 0,' "$tmp/procsjson.out" &&
		grep -q "\"pid\": $h1," "$tmp/procsjson.out" &&
		grep -q '"held_bytes": 2097152,' "$tmp/procsjson.out"
	st=$?
	cat "$tmp/procs.maps" >>"$tmp/procs.out"
	result $st "--processes: a buffer held by fd and one by a mapping only, the bytes held after release by a pin" "$tmp/procs.out"
else
	skip "--processes: a buffer held by fd and one by a mapping only, the bytes held after release by a pin" \
		"no $hold or no /dev/gpubuf_pinprobe"
fi

# Issue 49, item 6: anyone can name a dma-buf "gpubuf" (DMA_BUF_SET_NAME),
# and "%255s" stopped at a space: two vgem dma-bufs named "gpubuf" and
# "gpubuf x", kept by mappings alone, counted as gpubuf's. They are not,
# with debugfs to ask (no row), nor without it (counted as unconfirmed).
if [ -x "$hold" ]; then
	"$hold" foreign >"$tmp/hold3" 2>&1 &
	h3=$!
	i=0
	while [ $i -lt 100 ] && ! grep -q ready "$tmp/hold3" && kill -0 "$h3" 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	# On 5.10 the holder's vgem mappings show no dma-buf name in its
	# maps (bullseye's guest in make check-kernels): nothing to misread.
	if grep -q ready "$tmp/hold3" && ! grep -q dmabuf "/proc/$h3/maps"; then
		kill "$h3" 2>/dev/null
		wait "$h3" 2>/dev/null
		skip "--processes: vgem dma-bufs named 'gpubuf' and 'gpubuf x' by their owner are not gpubuf's (debugfs asked; without it, one unconfirmed)" \
			"this kernel's vgem mappings carry no dma-buf name (/proc/PID/maps shows no dmabuf)"
	elif grep -q ready "$tmp/hold3"; then
		run procsf "$info" --processes
		grep dmabuf "/proc/$h3/maps" >"$tmp/procsf.maps" 2>&1
		umount -l /sys/kernel/debug 2>/dev/null
		run procsnd "$info" --processes
		mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
		kill "$h3" 2>/dev/null
		wait "$h3" 2>/dev/null
		[ "$(rc procsf)" = 0 ] && [ "$(rc procsnd)" = 0 ] &&
			[ "$(grep -c '/dmabuf:gpubuf' "$tmp/procsf.maps")" = 2 ] &&
			! grep -Eq "^$h3 " "$tmp/procsf.out" &&
			! grep -q 'mappings named gpubuf' "$tmp/procsf.out" &&
			! grep -Eq "^$h3 " "$tmp/procsnd.out" &&
			grep -q '^1 mappings named gpubuf with no gpubuf fd anywhere not counted' "$tmp/procsnd.out"
		st=$?
		cat "$tmp/procsf.maps" "$tmp/procsnd.out" >>"$tmp/procsf.out"
		result $st "--processes: vgem dma-bufs named 'gpubuf' and 'gpubuf x' by their owner are not gpubuf's (debugfs asked; without it, one unconfirmed)" "$tmp/procsf.out"
	else
		kill "$h3" 2>/dev/null
		wait "$h3"
		st=$?
		if [ $st = 3 ]; then
			skip "--processes: dma-bufs named gpubuf by their owner are not gpubuf's" "no vgem card in the guest"
		else
			result 1 "--processes: dma-bufs named gpubuf by their owner are not gpubuf's (the holder failed: $st)" "$tmp/hold3"
		fi
	fi
fi

# --prometheus with the module: the values sysfs has, the module's
# release; then Debian's node_exporter from the host's root (where the
# guest has it) serves them through its textfile collector.
run prom "$info" --prometheus
maxb=$(cat "$params/max_buffer_bytes")
[ "$(rc prom)" = 0 ] && grep -qx 'gpubuf_module_loaded 1' "$tmp/prom.out" &&
	grep -qx "gpubuf_max_buffer_bytes $maxb" "$tmp/prom.out" &&
	grep -qx "gpubuf_live_buffers $(cat "$class/live_buffers")" "$tmp/prom.out" &&
	grep -qx "gpubuf_held_bytes $(cat "$class/held_bytes")" "$tmp/prom.out" &&
	grep -q "^gpubuf_info{library=\"[0-9.]*\",module=\"$(cat /sys/module/gpubuf/version)\"} 1$" "$tmp/prom.out" &&
	[ "$(grep -c '^# TYPE ' "$tmp/prom.out")" = "$(grep -vc '^#' "$tmp/prom.out")" ]
result $? "gpubuf-info --prometheus: module_loaded 1, the limits and counters sysfs has, the module's release" "$tmp/prom.out"
# Exactly the metrics docs/operations.md lists, each once.
grep -v '^#' "$tmp/prom.out" | sed 's/[{ ].*//' | sort >"$tmp/prom.names"
printf '%s\n' gpubuf_module_loaded gpubuf_info gpubuf_live_buffers \
	gpubuf_live_bytes gpubuf_peak_bytes gpubuf_alloc_failures_total \
	gpubuf_held_bytes gpubuf_held_buffers gpubuf_reserve_ready_bytes \
	gpubuf_reserve_zeroing_bytes gpubuf_reserve_used_bytes \
	gpubuf_reserve_shrunk_bytes_total gpubuf_reserve_target_bytes \
	gpubuf_max_buffer_bytes gpubuf_max_total_bytes | sort >"$tmp/prom.want"
cmp -s "$tmp/prom.names" "$tmp/prom.want"
result $? "gpubuf-info --prometheus: exactly the 15 metrics docs/operations.md lists, each once" "$tmp/prom.names"
if [ -x /gpubuf/host-run ] && [ -x /host/usr/bin/prometheus-node-exporter ]; then
	mkdir -p "$tmp/textfile"
	cp "$tmp/prom.out" "$tmp/textfile/gpubuf.prom"
	ip link set lo up
	/gpubuf/host-run /usr/bin/prometheus-node-exporter \
		--web.listen-address=127.0.0.1:9191 --collector.disable-defaults \
		--collector.textfile --collector.textfile.directory="$tmp/textfile" \
		>"$tmp/exporter.log" 2>&1 &
	exporter=$!
	i=0
	while [ $i -lt 300 ] && ! wget -q -O "$tmp/metrics" http://127.0.0.1:9191/metrics 2>/dev/null; do
		sleep 0.2
		i=$((i + 1))
	done
	kill "$exporter" 2>/dev/null
	{ echo "after $i tries:"; grep -E '^(gpubuf|node_textfile)' "$tmp/metrics"; } \
		>>"$tmp/exporter.log" 2>&1
	# node_exporter writes large values in exponent form: compare numbers.
	grep -qx 'gpubuf_module_loaded 1' "$tmp/metrics" &&
		awk -v want="$maxb" '$1 == "gpubuf_max_buffer_bytes" && $2 + 0 == want + 0 { f = 1 }
			END { exit !f }' "$tmp/metrics" &&
		grep -qx 'node_textfile_scrape_error 0' "$tmp/metrics"
	result $? "node_exporter (the host's, in the guest) serves the module's metrics from the textfile" "$tmp/exporter.log"
else
	skip "node_exporter (the host's, in the guest) serves the module's metrics from the textfile" \
		"no host root or no prometheus-node-exporter on the host"
fi

# bpftrace, Debian's, from the host's root: a third-party consumer of the
# module's tracepoints. It attaches to gpubuf_alloc and gpubuf_release
# (compiling its program takes seconds under TCG), then gpubuf-info --map
# allocates and releases a 4 MiB buffer: two 2 MiB chunks. The #define
# is for kernels without BTF (Debian's 5.10 has none in /sys/kernel/btf),
# where bpftrace knows no u64 for the fields' struct.
if [ -x /gpubuf/host-run ] && [ -x /host/usr/bin/bpftrace ]; then
	for r in "" /host; do
		grep -q " $r/sys/kernel/tracing " /proc/mounts ||
			mount -t tracefs nodev "$r/sys/kernel/tracing"
		grep -q " $r/sys/kernel/debug " /proc/mounts ||
			mount -t debugfs nodev "$r/sys/kernel/debug"
	done
	/gpubuf/host-run /usr/bin/bpftrace -e '
#define u64 unsigned long long
tracepoint:gpubuf:gpubuf_alloc {
	printf("alloc size=%llu node=%d huge=%u small=%u result=%d\n",
	       args->size, args->node, args->huge_chunks, args->small_pages, args->result);
}
tracepoint:gpubuf:gpubuf_release { printf("release size=%llu held=%llu\n", args->size, args->held); }' \
		>"$tmp/bpftrace.out" 2>&1 &
	bt=$!
	i=0
	while [ $i -lt 600 ] && ! grep -q '^Attaching 2 probes' "$tmp/bpftrace.out" 2>/dev/null; do
		sleep 0.2
		i=$((i + 1))
	done
	# "Attaching" comes before the probes are attached: allocate until
	# bpftrace has seen one (on 7.2 the first can come too early).
	j=0
	while [ $j -lt 30 ]; do
		run btmap "$info" --map 4M
		sleep 1
		j=$((j + 1))
		grep -q '^release size=4194304 ' "$tmp/bpftrace.out" && break
	done
	kill -INT "$bt" 2>/dev/null
	wait "$bt"
	bt_rc=$?
	echo "bpftrace exit $bt_rc, attached after $i polls, $j allocations" >>"$tmp/bpftrace.out"
	[ "$(rc btmap)" = 0 ] && [ $bt_rc = 0 ] &&
		grep -qx 'alloc size=4194304 node=-1 huge=2 small=0 result=0' "$tmp/bpftrace.out" &&
		grep -qx 'release size=4194304 held=0' "$tmp/bpftrace.out"
	st=$?
	sed 's/^/# bpftrace: /' "$tmp/bpftrace.out"
	# ENOSYS from bpf() itself: a kernel built without the system call
	# (CONFIG_BPF_SYSCALL off, as in make check-debug's debug kernel).
	if [ $st != 0 ] && grep -q '^ERROR: failed to create .*map: Function not implemented' "$tmp/bpftrace.out"; then
		skip "bpftrace (Debian's) prints gpubuf_alloc and gpubuf_release of a 4 MiB buffer: two 2 MiB chunks" \
			"this kernel has no bpf() system call (CONFIG_BPF_SYSCALL is off)"
	else
		result $st "bpftrace (Debian's) prints gpubuf_alloc and gpubuf_release of a 4 MiB buffer: two 2 MiB chunks" "$tmp/bpftrace.out"
	fi
else
	skip "bpftrace (Debian's) prints gpubuf_alloc and gpubuf_release of a 4 MiB buffer: two 2 MiB chunks" \
		"no host root or no bpftrace on the host"
fi

# The hsa mode's loop on module buffers, against libgpubuf's stand-in HSA
# runtime (tests/hsastub): the dynamic gpubuf-bench, since a static one
# cannot dlopen. Its copies are memcpy: this proves the plumbing (locks of
# module and memfd buffers, agent pointers, nothing left over), not AMD
# performance. The stand-in's report counts violations and leftovers.
hsabench=/gpubuf/hsa-bin/gpubuf-bench
hsastub=/gpubuf/hsastub
if [ -x "$hsabench" ] && [ -f "$hsastub/libhsa-runtime64.so.1" ]; then
	run hsastub env LD_LIBRARY_PATH="$hsastub:${hsabench%/*}" HSASTUB_REPORT="$tmp/hsastub.report" \
		"$hsabench" hsa --size 64K --reps 2 --warmup 0 --csv
	# 8 copy rows; the two launch-latency rows (device memory) are
	# measured where the library has its HSA kernels, else skipped. The
	# library keeps its kernels' queue and kernarg ring (one pool block)
	# for the process: no other block may be left.
	lat_ok=$(grep -cE '^hsa,(launch_gemv_1x1|vadd_1m),device,.*,ok,' "$tmp/hsastub.out")
	[ "$(rc hsastub)" = 0 ] &&
		[ "$(grep -cE '^hsa,(launch_gemv_1x1|vadd_1m),device,' "$tmp/hsastub.out")" = 2 ] &&
		[ "$(csv_ok "$tmp/hsastub.out" hsa)" = $((8 + lat_ok)) ] &&
		grep -q '^hsa,device,.*,info,"GPU agent 0 of 2: gfx90a, HSA 1.1, backend module;' "$tmp/hsastub.out" &&
		[ "$(grep -cE '^ratio,(h2d|d2h)_gpubuf_vs_(fine_pool|pageable),gpubuf,65536,1,2,-1,ratio,[0-9.e+-]+,.*,ok,$' "$tmp/hsastub.out")" = 4 ] &&
		grep -qx 'violations 0' "$tmp/hsastub.report" &&
		grep -qx 'live_locks 0' "$tmp/hsastub.report" &&
		grep -qx 'live_signals 0' "$tmp/hsastub.report" &&
		grep -qx 'live_queues [01]' "$tmp/hsastub.report" &&
		[ "$(sed -n 's/^live_allocs //p' "$tmp/hsastub.report")" = \
		  "$(sed -n 's/^live_queues //p' "$tmp/hsastub.report")" ]
	result $? "hsa on the stand-in runtime: gpubuf, fine_pool, pageable and gpubuf_memfd rows, 4 ratios, the latency rows, nothing left locked" "$tmp/hsastub.out"
else
	skip "hsa on the stand-in runtime: gpubuf, fine_pool, pageable and gpubuf_memfd rows, 4 ratios, the latency rows, nothing left locked" \
		"no $hsabench or $hsastub (built without HSA headers)"
fi

run all "$bench" all --max-size 64K --rep-bytes 64K --reps 2 --warmup 0 --json
[ "$(rc all)" = 0 ] && grep -q '"backend": "module"' "$tmp/all.out" &&
	grep -q '"mode": "drm"' "$tmp/all.out" && grep -q '"ratios": {' "$tmp/all.out"
result $? "all with --json runs every mode on the module backend" "$tmp/all.out"

live1=$(cat "$class/live_buffers" 2>/dev/null)
[ -n "$live0" ] && [ "$live0" = "$live1" ]
result $? "no gpubuf buffer outlives the runs (live_buffers $live0 -> $live1)"

echo "1..$n"
[ $failed = 0 ]
