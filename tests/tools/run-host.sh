#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: host tests of gpubuf-bench and gpubuf-info (memfd backend,
# small sizes, a few seconds). Prints TAP with the plan computed at the
# end. Output is checked for values, not only exit codes: JSON parses and
# carries the expected keys with positive numbers, CSV rows have as many
# columns as the header, stdout carries no notes or progress.
#
# TOOLS_BUILD names the directory with the binaries (default tools/build).
# Needs python3 for the JSON checks; without it those tests are skipped.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${TOOLS_BUILD:-$top/tools/build}
bench=$bin/gpubuf-bench
info=$bin/gpubuf-info
export GPUBUF_BACKEND=${GPUBUF_BACKEND:-memfd}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpubuf-tools.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
# Small and quick: two sizes, little data per repetition.
small="--sizes 4K,1M --rep-bytes 1M --reps 3 --warmup 0"

# The TAP helpers (ok, not_ok, skip, check, run) and shared checks.
. "$top/tests/tools/tap-lib.sh"
rc_is() { [ "$(cat "$tmp/$1.rc")" = "$2" ]; }

for b in "$bench" "$info"; do
	if [ ! -x "$b" ]; then
		echo "Bail out! $b not built (make -C tools)"
		exit 1
	fi
done

# ---- JSON of host and alloc ------------------------------------------------
run json $bench host alloc $small --json
check "host+alloc --json exits 0" "$tmp/json.err" -- rc_is json 0
if [ $have_py = 1 ]; then
	check "host+alloc --json is valid JSON" "$tmp/json.out" -- \
		sh -c "python3 -m json.tool '$tmp/json.out' >/dev/null"
	check "host+alloc --json has header, results and ratios with positive numbers" \
		"$tmp/json.out" -- python3 - "$tmp/json.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
h = d["header"]
for k in ("kernel", "cpu", "backend", "driver", "library", "numa_online",
          "numa_node_gpubuf", "numa_node_anon", "cuda", "hsa", "emulated"):
    assert k in h, k
assert h["backend"] == "memfd", h["backend"]
res = d["results"]
host = [r for r in res if r["mode"] == "host" and r["status"] == "ok"]
alloc = [r for r in res if r["mode"] == "alloc" and r["status"] == "ok"]
# 3 measured kinds (gpubuf, malloc, mlock) x 2 sizes x 3 ops
assert len(host) == 18, len(host)
for r in host:
    assert r["op"] in ("read", "write", "copy"), r
    assert r["size_bytes"] in (4096, 1 << 20), r
    assert r["reps"] == 3 and r["threads"] == 1, r
    assert 0 < r["gb_per_s_min"] <= r["gb_per_s"] <= r["gb_per_s_max"], r
hug = [r for r in res if r["mode"] == "host" and r["memory"] == "hugetlb"]
assert hug and all(r["status"] in ("ok", "unavailable", "skipped") and
                   (r["status"] == "ok" or r["reason"]) for r in hug), hug
assert len(alloc) == 6, len(alloc)
for r in alloc:
    assert r["memory"] in ("gpubuf", "anon_mlock", "anon_thp_mlock"), r
    assert 0 <= r["pmd_mapped_pct"] <= 100, r
    assert 0 < r["seconds_per_gib_min"] <= r["seconds_per_gib"] <= r["seconds_per_gib_max"], r
    assert r["seconds"] > 0 and r["free_seconds"] > 0, r
rt = d["ratios"]
# Every ratio comes from interleaved pairs, one per timed repetition (3):
# the median, min and max of the pair ratios it lists. Ratios of two
# separately measured blocks would have no pairs to list.
names = ["%s_gpubuf_vs_%s" % (op, den) for op in ("read", "write", "copy")
         for den in ("mlock", "malloc")] + ["alloc_gpubuf_vs_anon_mlock",
                                            "alloc_gpubuf_vs_anon_thp_mlock"]
assert sorted(rt) == sorted(names), sorted(rt)
for name in names:
    x = rt[name]
    assert x["status"] == "ok", x
    assert x["ratio"] > 0 and x["size_bytes"] == 1 << 20, x
    assert x["method"] == "interleaved pairs" and x["numerator"] == "gpubuf", x
    assert x["pairs"] == 3, x
    assert 0 < x["ratio_min"] <= x["ratio"] <= x["ratio_max"], x
    p = sorted(x["pair_ratios"])
    assert len(p) == x["pairs"], x
    close = lambda a, b: abs(a - b) <= 1e-4 * abs(b)
    assert close(p[1], x["ratio"]) and close(p[0], x["ratio_min"]) and \
        close(p[-1], x["ratio_max"]), x
PY
else
	skip "host+alloc --json is valid JSON" "python3 not found"
	skip "host+alloc --json has header, results and ratios with positive numbers" "python3 not found"
fi
check "--json stdout holds only the JSON document" "$tmp/json.out" -- \
	sh -c "head -c1 '$tmp/json.out' | grep -q '{' && ! grep -q -e '^note:' -e '^ERROR' -e '^gpubuf-bench:' '$tmp/json.out'"

# ---- CSV -------------------------------------------------------------------
run csv $bench host alloc cuda $small --csv
check "--csv exits 0 when host ran and cuda is unavailable" "$tmp/csv.err" -- rc_is csv 0
check "--csv has the header line and one column count throughout" "$tmp/csv.out" -- \
	awk -F, '
	function cols(line,   n, i, q, c) {	# count fields, quotes respected
		n = 1; q = 0
		for (i = 1; i <= length(line); i++) {
			c = substr(line, i, 1)
			if (c == "\"") q = !q
			else if (c == "," && !q) n++
		}
		return n
	}
	NR == 1 { want = cols($0); ok = ($1 == "mode" && $4 == "size_bytes" && want == 15); next }
	{ rows++; if (cols($0) != want) ok = 0 }
	END { exit !(ok && rows >= 26) }' "$tmp/csv.out"
check "--csv host rows carry positive gb_per_s medians" "$tmp/csv.out" -- \
	awk -F, '$1 == "host" && $14 == "ok" { n++; if ($8 != "gb_per_s" || $9 + 0 <= 0) bad++ }
		END { exit !(n == 18 && !bad) }' "$tmp/csv.out"
# Ratio lines: threads and pairs in the threads and reps columns, the
# median and spread of the pair ratios in median, min and max.
check "--csv ratio lines carry 3 pairs and min <= median <= max" "$tmp/csv.out" -- \
	awk -F, '$1 == "ratio" { n++
		if ($3 != "gpubuf" || $5 != 1 || $6 != 3 || $8 != "ratio" || $14 != "ok" ||
		    !($10 + 0 > 0 && $10 + 0 <= $9 + 0 && $9 + 0 <= $11 + 0)) bad++ }
		END { exit !(n == 8 && !bad) }' "$tmp/csv.out"
run csvthr $bench host --sizes 1M --rep-bytes 1M --reps 4 --warmup 0 --threads 2 --csv
check "--threads 2 --reps 4: ratio lines say 2 threads and 4 pairs" "$tmp/csvthr.out" "$tmp/csvthr.err" -- \
	awk -F, '$1 == "ratio" { n++; if ($5 != 2 || $6 != 4 || $14 != "ok") bad++ }
		END { exit !(n == 6 && !bad) }' "$tmp/csvthr.out"

# ---- table -----------------------------------------------------------------
run table $bench host $small
check "table names kernel, backend and library in its header" "$tmp/table.out" -- \
	sh -c "grep -q '^# kernel: ' '$tmp/table.out' && grep -q '^# backend:  memfd' '$tmp/table.out' && grep -q '^# library: ' '$tmp/table.out'"
check "table has 18 host rows with numbers and the ratios" "$tmp/table.out" -- \
	sh -c "[ \$(grep -cE '^(read|write|copy) +(gpubuf|malloc|mlock) +[0-9]+ [KM]iB +[0-9.]+ ' '$tmp/table.out') = 18 ] &&
	       grep -qE '^read_gpubuf_vs_mlock +[0-9.]+ +at 1 MiB +\\[[0-9.]+\\.\\.[0-9.]+\\] over 3 pairs\$' '$tmp/table.out' &&
	       grep -q '^# of the ratios of N interleaved pairs' '$tmp/table.out'"
check "stdout carries no notes, errors or progress" "$tmp/table.out" -- \
	sh -c "! grep -qE '^(note|ERROR|gpubuf-bench:)' '$tmp/table.out' &&
	       ! tr '\\r' '@' <'$tmp/table.out' | grep -q @"
check "stderr names backend and library" "$tmp/table.err" -- \
	grep -q '^gpubuf-bench: backend memfd, library ' "$tmp/table.err"

run size1 $bench host --size 1M --rep-bytes 1M --reps 2 --warmup 0 --csv
check "--size 1M measures host at 1 MiB only, ratios there" "$tmp/size1.out" "$tmp/size1.err" -- \
	awk -F, '$1 == "host" && $14 == "ok" { n++; if ($4 != 1048576) bad++ }
		$1 == "ratio" && $14 == "ok" && $4 == 1048576 { r++ }
		END { exit !(n == 9 && r == 6 && !bad) }' "$tmp/size1.out"

# ---- ratios: one stated size for both sides --------------------------------
# Issue 7, item 13: ratios were taken at "the largest gpubuf size that
# succeeded", so an mlock refused by RLIMIT_MEMLOCK made vs_mlock vanish and
# the memfd headline fell back to an in-cache size; the alloc ratio existed
# only at 256 MiB. Now every ratio is taken at one size (--ratio-size, else
# 256M when swept, else the largest size swept) and says when it cannot be.
#
# lowlock CMD...: CMD under RLIMIT_MEMLOCK 8 MiB, the usual default. As root
# CAP_IPC_LOCK would let mlock ignore the limit, so setpriv drops it.
lowlock() {
	if [ "$(id -u)" = 0 ]; then
		prlimit --memlock=8388608 setpriv --inh-caps=-ipc_lock \
			--bounding-set=-ipc_lock -- "$@"
	else
		sh -c 'ulimit -l 8192 && exec "$@"' sh "$@"
	fi
}
can_lowlock=0
if [ "$(id -u)" != 0 ] || { command -v prlimit && command -v setpriv; } >/dev/null 2>&1; then
	can_lowlock=1
fi
big="--sizes 4K,1M,16M --rep-bytes 1M --reps 3 --warmup 0"
if [ $can_lowlock = 0 ]; then
	for t in "host ratios at 16 MiB say unavailable under RLIMIT_MEMLOCK 8 MiB (JSON)" \
		 "host ratios at 16 MiB say unavailable under RLIMIT_MEMLOCK 8 MiB (table)" \
		 "alloc ratio at 16 MiB says unavailable under RLIMIT_MEMLOCK 8 MiB (CSV)"; do
		skip "$t" "root without prlimit and setpriv"
	done
else
	run lowjson lowlock $bench host $big --json
	if [ $have_py = 1 ]; then
		check "host ratios at 16 MiB say unavailable under RLIMIT_MEMLOCK 8 MiB (JSON)" \
			"$tmp/lowjson.out" "$tmp/lowjson.err" -- python3 - "$tmp/lowjson.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
big = 16 << 20
sk = [r for r in d["results"] if r["mode"] == "host" and
      r.get("size_bytes") == big and r["memory"] in ("gpubuf", "mlock")]
assert sk and all(r["status"] == "skipped" for r in sk), sk
rt = d["ratios"]
for op in ("read", "write", "copy"):
    for den in ("mlock", "malloc"):
        x = rt["%s_gpubuf_vs_%s" % (op, den)]
        assert x["status"] == "unavailable" and x["size_bytes"] == big, x
        assert "ratio" not in x, x
        assert "16 MiB" in x["reason"] and "mlock" in x["reason"].lower(), x
PY
	else
		skip "host ratios at 16 MiB say unavailable under RLIMIT_MEMLOCK 8 MiB (JSON)" "python3 not found"
	fi
	run lowtab lowlock $bench host $big
	check "host ratios at 16 MiB say unavailable under RLIMIT_MEMLOCK 8 MiB (table)" \
		"$tmp/lowtab.out" -- sh -c "[ \$(grep -ciE '^(read|write|copy)_gpubuf_vs_(mlock|malloc) +unavailable at 16 MiB: .*mlock' '$tmp/lowtab.out') = 6 ]"
	run lowalloc lowlock $bench alloc --sizes 1M,16M --reps 1 --warmup 0 --csv
	check "alloc ratio at 16 MiB says unavailable under RLIMIT_MEMLOCK 8 MiB (CSV)" \
		"$tmp/lowalloc.out" -- grep -qE '^ratio,alloc_gpubuf_vs_anon_[a-z_]+,gpubuf,16777216,.*,unavailable,.*16 MiB' "$tmp/lowalloc.out"
fi
run allocratio $bench alloc --sizes 1M,4M --reps 1 --warmup 0 --csv
check "alloc ratio is taken at the largest size swept (4 MiB), not only at 256 MiB" \
	"$tmp/allocratio.out" -- grep -qE '^ratio,alloc_gpubuf_vs_anon_[a-z_]+,gpubuf,4194304,1,1,-1,ratio,[0-9.e+-]+,.*,ok,$' "$tmp/allocratio.out"
run rsize $bench host $small --ratio-size 4K --csv
check "--ratio-size 4K takes all six host ratios at 4096 bytes" "$tmp/rsize.out" "$tmp/rsize.err" -- \
	sh -c "[ \$(grep -cE '^ratio,(read|write|copy)_gpubuf_vs_(mlock|malloc),gpubuf,4096,.*,ok,$' '$tmp/rsize.out') = 6 ]"
run rsize2 $bench host $small --ratio-size 64K
check "--ratio-size of a size not swept says the ratio is unavailable" "$tmp/rsize2.out" "$tmp/rsize2.err" -- \
	sh -c "[ \$(cat '$tmp/rsize2.rc') = 0 ] &&
	       grep -qE '^read_gpubuf_vs_mlock +unavailable at 64 KiB: .*not measured' '$tmp/rsize2.out'"

# ---- read and copy at 256 KiB: measured and reported -----------------------
# Issue 7, item 14: read once summed into one variable, so each load waited
# for the previous add (0.55-0.58 x memcpy at 256 KiB on the machine of
# that issue; eight independent sums read 1.60-1.83 x there). Which of two
# in-cache loops wins depends on the CPU, its clock and the load (a fresh
# machine of the same kind read 0.82 x copy with the fixed kernel), so the
# ratio is reported here, never asserted (docs/testing.md). What
# is checked is that every memory kind was measured.
run readbw $bench host --sizes 256K --rep-bytes 64M --reps 9 --warmup 1 --csv
check "read and copy at 256 KiB measured for every memory kind (ratio reported, not asserted)" \
	"$tmp/readbw.out" "$tmp/readbw.err" -- awk -F, '
	$1 == "host" && $14 == "ok" && $4 == 262144 && $11 + 0 > 0 { best[$3 "," $2] = $11 }
	END {
		n = 0
		for (k in best) {
			if (k !~ /,read$/) continue
			m = substr(k, 1, length(k) - 5)
			if (!((m ",copy") in best)) exit 1
			printf "# measured: %s at 256 KiB, best of 9: read %.1f copy %.1f GB/s, read/copy %.2f\n",
			       m, best[k], best[m ",copy"], best[k] / best[m ",copy"]
			n++
		}
		exit n != 3
	}' "$tmp/readbw.out"

# ---- alloc: one population walk per row -----------------------------------
# Issue 7, item 2: the anonymous row was mmap(MAP_POPULATE) + mlock. The
# populate faults every page in, then mlock walks the range again to lock
# the pages it finds and once more to populate, so the row paid for walks
# the gpubuf row does not. Each row now maps without populating and lets a
# single mlock fault and lock each page. strace shows the system calls.
# With --reps 1 --warmup 0 each anonymous kind allocates twice: its row,
# then one round of its interleaved ratio; gpubuf three times (its row and
# one round of each ratio): seven 1 MiB mlocks in all. anon_thp_mlock maps
# 1 MiB + 2 MiB (to align) and is not counted as a 1 MiB mapping.
if command -v strace >/dev/null 2>&1; then
	strace -f -e trace=mmap,mlock -o "$tmp/walk.trace" \
		$bench alloc --sizes 1M --reps 1 --warmup 0 >"$tmp/walk.out" 2>&1
	# NAME KIND N: KIND's N 1 MiB mappings have no MAP_POPULATE, each then
	# one mlock.
	walk_check() {
		check "$1" "$tmp/walk.trace" -- awk -v kind="$2" -v want="$3" '
		$2 ~ /^mmap\(NULL,$/ && $3 == "1048576," &&
		    (kind == "anon" ? $5 ~ /MAP_ANONYMOUS/ : $5 ~ /^MAP_SHARED,$/) {
			maps++
			if ($5 ~ /MAP_POPULATE|MAP_LOCKED/) bad++
			if (addr != "") bad++	# the previous one was never locked
			addr = $NF
		}
		$2 ~ /^mlock\(/ && $3 == "1048576)" { all++ }
		$2 == "mlock(" addr "," && $3 == "1048576)" && addr != "" { locks++; addr = "" }
		END { exit !(maps == want && locks == want && all == 7 && !bad) }' "$tmp/walk.trace"
	}
	walk_check "alloc: the anonymous row maps without MAP_POPULATE, then one mlock (strace)" anon 2
	walk_check "alloc: the gpubuf row (memfd) maps without MAP_POPULATE, then one mlock (strace)" memfd 3
else
	skip "alloc: the anonymous row maps without MAP_POPULATE, then one mlock (strace)" "strace not found"
	skip "alloc: the gpubuf row (memfd) maps without MAP_POPULATE, then one mlock (strace)" "strace not found"
fi

# ---- usage errors ----------------------------------------------------------
for args in "--bogus" "host --sizes 12Q" "host --threads 0" "nosuchmode" "" \
	    "cuda --device -1" "cuda --device x" "cuda --size 0"; do
	run usage $bench $args
	check "'gpubuf-bench $args' exits 2, usage on stderr, nothing on stdout" \
		"$tmp/usage.err" -- sh -c "[ \$(cat '$tmp/usage.rc') = 2 ] &&
		grep -q '^usage: gpubuf-bench' '$tmp/usage.err' &&
		grep -q -- '--threads N .*(default 1)' '$tmp/usage.err' &&
		[ ! -s '$tmp/usage.out' ]"
done
run help $bench --help
check "--help prints usage on stdout and exits 0" "$tmp/help.out" -- \
	sh -c "rc_=\$(cat '$tmp/help.rc'); [ \$rc_ = 0 ] && grep -q '^usage: gpubuf-bench' '$tmp/help.out'"

# ---- unavailable modes -----------------------------------------------------
# cuda without a usable NVIDIA driver: one unavailable line whose reason is
# libgpubuf's (the same text gpubuf-info shows), or that gpubuf-bench was
# built without CUDA; exit 77 in every output format.
# A GPU runtime (CUDA or HSA) usable here: the "runtimes" object of
# gpubuf-info --json, which comes before its "vulkan" one.
runtime_usable() {
	"$info" --json 2>/dev/null | sed -n '/"runtimes": {/,/"vulkan": {/p' |
		grep -q '"usable": true'
}
cuda_usable=0
runtime_usable && cuda_usable=1
cuda_re='NVIDIA driver|CUDA device|cuInit|CUDA support'
unavailable cuda $cuda_usable "$(info_reason cuda libcuda.so.1)" \
	"a GPU runtime is present" "$cuda_re" "$cuda_re" \
	"cuda alone exits 77, naming the missing driver (table)" \
	"cuda --json exits 77 with the reason and no ratios"
# Every path of the cuda mode frees what it took: here the no-driver one.
if command -v valgrind >/dev/null 2>&1 && [ $cuda_usable = 0 ]; then
	run cudavg valgrind --leak-check=full --show-leak-kinds=definite,indirect \
		--errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
		$bench cuda --json
	check "cuda without a driver exits 77 and leaks nothing (valgrind)" "$tmp/cudavg.err" -- \
		sh -c "[ \$(cat '$tmp/cudavg.rc') = 77 ] && grep -q 'ERROR SUMMARY: 0 errors' '$tmp/cudavg.err'"
else
	skip "cuda without a driver exits 77 and leaks nothing (valgrind)" \
		"valgrind not found, or a GPU runtime is present"
fi
run drm $bench drm --json
check "drm on the memfd backend is unavailable with a reason (exit 77)" "$tmp/drm.out" -- \
	sh -c "[ \$(cat '$tmp/drm.rc') = 77 ] &&
	grep -q '\"status\": \"unavailable\"' '$tmp/drm.out' &&
	grep -q '\"reason\": \"memfd backend' '$tmp/drm.out'"
run hostcuda $bench host cuda hsa $small
check "host with unavailable cuda and hsa exits 0" "$tmp/hostcuda.err" -- rc_is hostcuda 0
run plot $bench host $small --plot "$tmp/bw.txt"
check "--plot with a wrong extension fails (exit 1) with ERROR on stderr" "$tmp/plot.err" -- \
	sh -c "[ \$(cat '$tmp/plot.rc') = 1 ] && grep -q '^ERROR: --plot' '$tmp/plot.err'"
run plot2 $bench host $small --plot "$tmp/bw.svg"
if command -v gnuplot >/dev/null 2>&1; then
	check "--plot writes an SVG with gnuplot" "$tmp/plot2.err" -- \
		sh -c "[ \$(cat '$tmp/plot2.rc') = 0 ] && grep -q '<svg' '$tmp/bw.svg'"
else
	check "--plot without gnuplot says so and does not fail the run" "$tmp/plot2.err" -- \
		sh -c "[ \$(cat '$tmp/plot2.rc') = 0 ] && grep -q 'gnuplot not found; install gnuplot-nox' '$tmp/plot2.err'"
fi

# ---- exit status: one rule for every mode ---------------------------------
# Issue 7, item 12: without /dev/gpubuf, host exited 0, alloc 1 and drm 77.
# The rule: 0 something ran, 1 failure, 2 usage, 77 unsupported. A mode that
# needs a gpubuf context is unsupported when the module is absent and
# GPUBUF_BACKEND=module forbids the memfd fallback; memfd runs host and
# alloc, never drm. A context that fails to open for another reason (here a
# bad GPUBUF_BACKEND) is a failure.
runtime=0
runtime_usable && runtime=1
exit_case() { # backend mode want-rc
	run "exit_$1_$2" env GPUBUF_BACKEND=$1 $bench $2 $small
	f=$tmp/exit_$1_$2
	name="GPUBUF_BACKEND=$1 gpubuf-bench $2 exits $3"
	want="[ \$(cat '$f.rc') = $3 ]"
	case $1:$2 in
	module:host|module:alloc|module:drm|module:all)
		name="$name, says /dev/gpubuf is missing, measures nothing"
		for m in host alloc drm; do
			[ $2 = $m ] || [ $2 = all ] || continue
			want="$want && grep -q '^$m: .*unavailable: .*/dev/gpubuf' '$f.out'"
		done
		want="$want && ! grep -qE '^(read|write|copy|gpubuf|anon_|import_)' '$f.out'" ;;
	esac
	if [ $3 = 1 ]; then
		name="$name with an ERROR on stderr"
		want="$want && grep -q '^ERROR: ' '$f.err'"
	fi
	check "$name" "$f.out" "$f.err" -- sh -c "$want"
}
for m in host alloc drm cuda hsa all; do
	if [ -e /dev/gpubuf ]; then
		skip "GPUBUF_BACKEND=module gpubuf-bench $m without the module" "/dev/gpubuf exists"
	elif [ $runtime = 1 ] && [ $m != host ] && [ $m != alloc ] && [ $m != drm ]; then
		skip "GPUBUF_BACKEND=module gpubuf-bench $m exits 77" "a GPU runtime is present"
	else
		exit_case module $m 77
	fi
done
exit_case memfd host 0
exit_case memfd alloc 0
exit_case memfd drm 77
for m in cuda hsa; do
	if [ $runtime = 1 ]; then
		skip "GPUBUF_BACKEND=memfd gpubuf-bench $m exits 77" "a GPU runtime is present"
	else
		exit_case memfd $m 77
	fi
done
for m in host alloc drm; do
	exit_case bogus $m 1
done

# ---- vulkan: on whatever Vulkan device is here (lavapipe in CI) -------------
run vulkan $bench vulkan --sizes 512K,1M --reps 3 --warmup 0 --json
# OpenBLAS, where make check's dependencies put it, gives the anchor row.
have_openblas=0
ls /usr/lib/*/openblas-*/libopenblas.so.0 >/dev/null 2>&1 && have_openblas=1
if grep -q '"mode": "vulkan", "op": "all", "memory": "-", "status": "unavailable"' "$tmp/vulkan.out"; then
	not_ok "gpubuf-bench vulkan runs: no Vulkan device (install mesa-vulkan-drivers)" "$tmp/vulkan.out"
elif [ $have_py = 1 ]; then
	check "gpubuf-bench vulkan: GEMV in place and after a copy with effective GB/s, the host's and the device's read of the same memory, the GEMM's GFLOP/s, OpenBLAS's sgemv and sgemm (where installed), import cost, the ratios, launch latency rows with their p99; a CPU device says it is not a GPU" \
		"$tmp/vulkan.out" "$tmp/vulkan.err" -- sh -c "[ \$(cat '$tmp/vulkan.rc') = 0 ] &&
		python3 - '$tmp/vulkan.out' $have_openblas" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
have_openblas = sys.argv[2] == "1"
res = [r for r in d["results"] if r["mode"] == "vulkan"]
# OpenBLAS's rows beside the GEMV and the GEMM, with their ratios, where
# it is installed; a skip naming the package where not.
for op, rate, ratio in (("openblas_sgemv", "effective_gb_per_s", "gemv_inplace_vs_openblas"),
                        ("openblas_sgemm", "gflop_per_s", "gemm_inplace_vs_openblas")):
    blas = [r for r in res if r["op"] == op and r.get("size_bytes") != 512 << 10]
    assert len(blas) == 1, res
    if have_openblas:
        assert blas[0]["status"] == "ok" and blas[0][rate] > 0, blas
        rat = d["ratios"][ratio]
        assert rat["status"] == "ok" and rat["pairs"] == 3 and rat["ratio"] > 0, rat
    else:
        assert blas[0]["status"] == "skipped" and "libopenblas0-pthread" in blas[0]["reason"], blas
# Every GEMV row and ratio at both sizes; the ratios at 1M, the ratio
# size, have the plain names, those at 512K their size in the name.
small = [r for r in res if r.get("size_bytes") == 512 << 10]
assert {r["op"] for r in small if r["status"] == "ok"} >= {
    "gemv_inplace", "gemv_copy", "vk_import", "host_read", "device_read"}, small
for name in ("gemv_inplace_vs_copy", "gemv_inplace_vs_host_read",
             "gemv_inplace_vs_device_read"):
    rat = d["ratios"][name + "_512K"]
    assert rat["status"] == "ok" and rat["pairs"] == 3 and rat["size_bytes"] == 512 << 10, rat
    assert d["ratios"][name]["size_bytes"] == 1 << 20, d["ratios"][name]
res = [r for r in res if r.get("size_bytes") != 512 << 10]
res = [r for r in res if not r["op"].startswith("openblas_")]
# The GEMM (512 x 512, f32) as GFLOP/s.
gemm = [r for r in res if r["op"] == "gemm_inplace"]
assert len(gemm) == 1 and gemm[0]["status"] == "ok" and gemm[0]["gflop_per_s"] > 0, gemm
assert gemm[0]["size_bytes"] == 4 * 512 * 512, gemm
res = [r for r in res if r["op"] != "gemm_inplace"]
info = [r for r in res if r["status"] == "info"]
assert len(info) == 1, res
ok = {(r["op"], r["memory"]) for r in res if r["status"] == "ok"}
assert ok == {("gemv_inplace", "gpubuf"), ("gemv_copy", "device_copy"),
              ("vk_import", "gpubuf"), ("host_read", "gpubuf"),
              ("device_read", "gpubuf"),
              ("empty_submit", "-"), ("gemv_1x1", "gpubuf"),
              ("vadd_1m", "gpubuf")}, res
# GEMV and the host's read of the same memory as effective GB/s.
eff = {r["op"]: r["effective_gb_per_s"] for r in res
       if r["status"] == "ok" and "effective_gb_per_s" in r}
assert set(eff) == {"gemv_inplace", "gemv_copy", "host_read", "device_read"}, res
assert all(v > 0 for v in eff.values()), eff
lat = {r["op"]: r for r in res if r["status"] == "ok" and "us" in r}
assert set(lat) == {"empty_submit", "gemv_1x1", "vadd_1m"}, res
# 1000 samples each, the vector add as many as --reps; the p99 is a
# sample at or above the median (a property of the statistic).
assert lat["empty_submit"]["reps"] == 1000 and lat["gemv_1x1"]["reps"] == 1000, lat
assert lat["vadd_1m"]["reps"] == 3 and lat["vadd_1m"]["size_bytes"] == 4 << 20, lat
assert all(l["us"] > 0 and l["p99_us"] >= l["us"] for l in lat.values()), lat
assert all(r["ms"] > 0 for r in res if r["status"] == "ok" and r["op"] not in lat), res
for name in ("gemv_inplace_vs_copy", "gemv_inplace_vs_host_read",
             "gemv_inplace_vs_device_read"):
    rat = d["ratios"][name]
    assert rat["status"] == "ok" and rat["pairs"] == 3 and rat["ratio"] > 0, rat
if "llvmpipe" in info[0]["info"]:
    assert "not a GPU" in info[0]["info"], info
PY
else
	skip "gpubuf-bench vulkan" "python3 not found"
fi

# ---- storage: a file into pinned memory, four ways ---------------------------
mkdir -p "$tmp/st"
run storage env TMPDIR="$tmp/st" $bench storage --sizes 1M,2M --reps 2 --queue-depth 4 --block-size 256K --json
if [ "${have_py:-0}" = 1 ]; then
	check "gpubuf-bench storage: the four ways at each size with GB/s and CPU s/GB, the file made for the run named and removed after, the ratios of interleaved pairs (plain names at the ratio size)" \
		"$tmp/storage.out" "$tmp/storage.err" -- sh -c "[ \$(cat '$tmp/storage.rc') = 0 ] &&
		[ -z \"\$(ls -A '$tmp/st')\" ] && python3 - '$tmp/storage.out'" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
res = [r for r in d["results"] if r["mode"] == "storage"]
info = [r for r in res if r["status"] == "info"]
assert len(info) == 1 and "made for the run" in info[0]["info"], info
assert "queue depth 4, requests of 262144 bytes" in info[0]["info"], info
ok = [r for r in res if r["status"] == "ok"]
want = {(op, mem, size) for op, mem in (("read_direct", "gpubuf"),
        ("read_direct", "malloc"), ("read_copy", "gpubuf"),
        ("mmap_copy", "gpubuf")) for size in (1 << 20, 2 << 20)}
assert {(r["op"], r["memory"], r["size_bytes"]) for r in ok} == want, res
assert all(r["gb_per_s"] > 0 and r["cpu_s_per_gb"] >= 0 and r["reps"] == 2
           for r in ok), ok
for name in ("read_copy_vs_read_direct", "mmap_copy_vs_read_direct"):
    for key, size in ((name, 2 << 20), (name + "_1M", 1 << 20)):
        rat = d["ratios"][key]
        assert rat["status"] == "ok" and rat["pairs"] == 2, rat
        assert rat["size_bytes"] == size and rat["ratio"] > 0, rat
PY
else
	skip "gpubuf-bench storage" "python3 not found"
fi
head -c 100000 /dev/zero >"$tmp/small.bin"
run stsmall $bench storage --size 1M --file "$tmp/small.bin"
run stmissing $bench storage --size 1M --file "$tmp/missing.bin"
run stblock $bench storage --block-size 1000
check "gpubuf-bench storage: a file smaller than the size or missing is unavailable (77) saying so; --block-size off 4K units is a usage error (2)" \
	"$tmp/stsmall.out" "$tmp/stmissing.out" "$tmp/stblock.err" -- sh -c "
	[ \$(cat '$tmp/stsmall.rc') = 77 ] && grep -q 'small.bin has 100000 bytes, the sizes want 1048576' '$tmp/stsmall.out' &&
	[ \$(cat '$tmp/stmissing.rc') = 77 ] && grep -q 'open .*missing.bin: No such file or directory' '$tmp/stmissing.out' &&
	[ \$(cat '$tmp/stblock.rc') = 2 ] && grep -q 'block-size' '$tmp/stblock.err'"

# ---- rdma: the argument and no-peer paths (a run needs two machines) ---------
run rdmanopeer $bench rdma
check "gpubuf-bench rdma without --peer or --serve is unavailable (77) and says what it needs" \
	"$tmp/rdmanopeer.out" "$tmp/rdmanopeer.err" -- sh -c "[ \$(cat '$tmp/rdmanopeer.rc') = 77 ] &&
	grep -q \"^rdma: unavailable: needs a second machine: 'gpubuf-bench rdma --serve' there\" '$tmp/rdmanopeer.out'"
run rdmaboth $bench rdma --peer 127.0.0.1 --serve
check "gpubuf-bench rdma --peer with --serve is a usage error (2)" "$tmp/rdmaboth.err" -- \
	sh -c "[ \$(cat '$tmp/rdmaboth.rc') = 2 ] && grep -q 'give one' '$tmp/rdmaboth.err'"
# Port 1 on loopback refuses at once: no peer is unavailable, not a failure.
# The device is opened before connecting, so a host without one (or
# without libibverbs) says that instead; the guest's soft-RoCE suite
# (46-bench-rdma) sees the refused connection itself.
run rdmarefused $bench rdma --peer 127.0.0.1 --tcp-port 1
check "gpubuf-bench rdma --peer with nobody serving (or no RDMA device) is unavailable (77) and says which" \
	"$tmp/rdmarefused.out" "$tmp/rdmarefused.err" -- sh -c "[ \$(cat '$tmp/rdmarefused.rc') = 77 ] &&
	grep -Eq '^rdma: unavailable: (connecting to 127.0.0.1 port 1 .is .gpubuf-bench rdma --serve. running there|libibverbs|no RDMA device)' '$tmp/rdmarefused.out'"
# One work request moves at most 4 GiB - 1 (sge.length is 32 bits): a
# larger size is refused before libibverbs is even loaded, so before any
# connection: a listener on loopback must see none.
if [ $have_py = 1 ]; then
	python3 - "$tmp/rdmabig.port" "$tmp/rdmabig.seen" <<'PY' &
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(4)
s.settimeout(20)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
__import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
try:
    s.accept()
    open(sys.argv[2], "w").write("connected\n")
except socket.timeout:
    pass
PY
	rdmabig_py=$!
	i=0
	while [ ! -f "$tmp/rdmabig.port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	run rdmabig $bench rdma --peer 127.0.0.1 --tcp-port "$(cat "$tmp/rdmabig.port" 2>/dev/null || echo 1)" \
		--sizes 64K,4G
	kill "$rdmabig_py" 2>/dev/null
	wait "$rdmabig_py" 2>/dev/null
	check "gpubuf-bench rdma --peer --sizes 64K,4G fails (1): one operation moves at most 4 GiB - 1; it never connects" \
		"$tmp/rdmabig.out" "$tmp/rdmabig.err" "$tmp/rdmabig.seen" -- sh -c "[ \$(cat '$tmp/rdmabig.rc') = 1 ] &&
		grep -q '^rdma: unavailable: size 4 GiB refused: one RDMA operation moves at most 4 GiB - 1 byte (sge.length is 32 bits)$' '$tmp/rdmabig.out' &&
		[ ! -e '$tmp/rdmabig.seen' ]"
else
	skip "gpubuf-bench rdma --peer --sizes 64K,4G fails (1) before connecting" "python3 not found"
fi
# The new options' misuse: usage errors naming the option.
run rdmabind $bench rdma --peer 127.0.0.1 --bind 127.0.0.1
check "gpubuf-bench rdma --bind without --serve is a usage error (2)" "$tmp/rdmabind.err" -- \
	sh -c "[ \$(cat '$tmp/rdmabind.rc') = 2 ] && grep -q '^ERROR: --bind is where .rdma --serve. listens' '$tmp/rdmabind.err'"
run rdmaopsserve $bench rdma --serve --ops read
check "gpubuf-bench rdma --serve --ops is a usage error (2): the server grants what the peer asks" \
	"$tmp/rdmaopsserve.err" -- sh -c "[ \$(cat '$tmp/rdmaopsserve.rc') = 2 ] &&
	grep -q '^ERROR: --ops is the measuring side.s (--peer)' '$tmp/rdmaopsserve.err'"
run rdmaopsbad $bench rdma --peer 127.0.0.1 --ops copy
check "gpubuf-bench rdma --ops copy is a usage error (2)" "$tmp/rdmaopsbad.err" -- \
	sh -c "[ \$(cat '$tmp/rdmaopsbad.rc') = 2 ] && grep -q \"^ERROR: invalid --ops (write, read or write,read): 'copy'\" '$tmp/rdmaopsbad.err'"
run rdmatimeout $bench rdma --peer 127.0.0.1 --tcp-timeout 0
check "gpubuf-bench rdma --tcp-timeout 0 is a usage error (2)" "$tmp/rdmatimeout.err" -- \
	sh -c "[ \$(cat '$tmp/rdmatimeout.rc') = 2 ] && grep -q \"^ERROR: invalid --tcp-timeout: '0'\" '$tmp/rdmatimeout.err'"

# ---- --node ------------------------------------------------------------------
# Every gpubuf buffer on node 0 (strict); a node not online is a usage error.
run node0 $bench host --node 0 $small --json
if [ $have_py = 1 ]; then
	check "host --node 0: the header names node 0 and the gpubuf page is there; rows measured" \
		"$tmp/node0.out" "$tmp/node0.err" -- sh -c "[ \$(cat '$tmp/node0.rc') = 0 ] &&
		python3 - '$tmp/node0.out'" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
h = d["header"]
assert h["numa_node_requested"] == 0 and h["numa_node_gpubuf"] == 0, h
ok = [r for r in d["results"] if r["memory"] == "gpubuf" and r["status"] == "ok"]
assert ok and all(r["numa_node"] == 0 for r in ok), d["results"]
PY
else
	skip "host --node 0: the header names node 0 and the gpubuf page is there; rows measured" "python3 not found"
fi
run nodebad $bench host --node 1023 $small
check "--node 1023 (not online) exits 2 and says so" "$tmp/nodebad.err" -- \
	sh -c "[ \$(cat '$tmp/nodebad.rc') = 2 ] && grep -q '^ERROR: --node 1023: no such NUMA node online' '$tmp/nodebad.err'"
run nodeneg $bench host --node -1 $small
check "--node -1 is a usage error (2)" "$tmp/nodeneg.err" -- sh -c "[ \$(cat '$tmp/nodeneg.rc') = 2 ]"

# ---- gpubuf-info -----------------------------------------------------------
run info $info
check "gpubuf-info exits 0 and says the module is not loaded" "$tmp/info.out" -- \
	sh -c "[ \$(cat '$tmp/info.rc') = 0 ] && grep -q '^backend  *memfd' '$tmp/info.out' &&
	{ [ -d /sys/module/gpubuf ] || grep -q '^live_bytes  *n/a (module not loaded)' '$tmp/info.out'; }"
run infojson $info --json
# The text form has one vulkan line a device, named as in the JSON, or
# one saying why there is none.
check "gpubuf-info's vulkan lines: a device each with its imports, or why none" "$tmp/info.out" -- \
	sh -c "grep -Eq '^vulkan +(device 0: .*, Vulkan [0-9]+\.[0-9]+\.[0-9]+, imports (dma-bufs|host memory|dma-bufs and host memory|nothing)|n/a: )' '$tmp/info.out'"
if command -v vulkaninfo >/dev/null 2>&1 || ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1; then
	check "gpubuf-info lists lavapipe, a Vulkan device this machine has (mesa-vulkan-drivers)" "$tmp/info.out" -- \
		grep -Eq '^vulkan +device [0-9]+: llvmpipe .*, CPU, Vulkan .*imports .*host memory' "$tmp/info.out"
fi
if [ $have_py = 1 ]; then
	check "gpubuf-info --json is valid and names backend memfd" "$tmp/infojson.out" -- \
		python3 - "$tmp/infojson.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["backend"] == "memfd", d["backend"]
assert d["library"]["version"].count(".") == 2
for k in ("max_buffer_bytes", "max_total_bytes", "reserve_bytes"):
    assert k in d["limits"]
for k in ("live_buffers", "live_bytes", "peak_bytes", "failed_allocs",
          "held_bytes", "reserve_ready_bytes", "reserve_used_bytes"):
    assert k in d["counters"]
assert set(d["runtimes"]) == {"cuda", "hsa"}
assert isinstance(d["drm_devices"], list)
# Vulkan devices as gpubuf_vk_open() numbers them, with their imports.
vk = d["vulkan"]
if vk["usable"]:
    for i, v in enumerate(vk["devices"]):
        assert v["index"] == i and v["name"], v
        assert v["type"] in ("other", "integrated_gpu", "discrete_gpu", "virtual_gpu", "cpu"), v
        assert v["api_version"].count(".") == 2, v
        assert set(v["imports"]) <= {"dma-buf", "host"}, v
        if "llvmpipe" in v["name"]:
            # lavapipe: a CPU device without a PCI function, host imports
            assert v["type"] == "cpu" and "host" in v["imports"] and v["pci"] is None, v
else:
    assert vk["devices"] == [] and vk["reason"], vk
PY
else
	skip "gpubuf-info --json is valid and names backend memfd" "python3 not found"
fi
# --map: the memfd backend maps with 4 KiB entries unless shmem THP is on;
# the report must still add up (the guest checks the module's 100 %).
run infomap $info --map 4M --json
if [ $have_py = 1 ]; then
	check "gpubuf-info --map 4M reports the buffer's resident and PMD-mapped bytes" "$tmp/infomap.out" -- \
		python3 - "$tmp/infomap.out" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["mapping"]
assert m["size_requested"] == m["size_bytes"] == 4 << 20, m
assert m["resident_bytes"] >= m["size_bytes"], m
assert 0 <= m["pmd_mapped_bytes"] <= m["resident_bytes"], m
assert m["pmd_mapped_pct"] == 100.0 * m["pmd_mapped_bytes"] / m["size_bytes"], m
PY
else
	skip "gpubuf-info --map 4M reports the buffer's resident and PMD-mapped bytes" "python3 not found"
fi
run infomapbad $info --map 0
check "gpubuf-info --map 0 exits 2 with the reason on stderr" "$tmp/infomapbad.err" -- \
	sh -c "[ \$(cat '$tmp/infomapbad.rc') = 2 ] && grep -q \"^ERROR: --map: not a size: '0'\" '$tmp/infomapbad.err'"
run infobad $info --bogus
check "gpubuf-info --bogus exits 2 with usage on stderr only" "$tmp/infobad.err" -- \
	sh -c "[ \$(cat '$tmp/infobad.rc') = 2 ] && grep -q '^usage: gpubuf-info' '$tmp/infobad.err' && [ ! -s '$tmp/infobad.out' ]"

# --cdi: a spec the CDI specification accepts at the version it declares
# (0.3.0: no field of a later one), naming /dev/gpubuf as the device "all"
# of kind gpubuf.org/gpubuf, the name the library's message gives.
run cdi $info --cdi
if [ $have_py = 1 ]; then
	check "gpubuf-info --cdi: a CDI 0.3.0 spec, kind gpubuf.org/gpubuf, device all = /dev/gpubuf" \
		"$tmp/cdi.out" "$tmp/cdi.err" -- python3 - "$tmp/cdi.out" "$(cat "$tmp/cdi.rc")" \
		"$top/libgpubuf/include/gpubuf.h" <<'PY'
import json, re, sys
assert sys.argv[2] == "0", "exit " + sys.argv[2]
d = json.load(open(sys.argv[1]))
assert set(d) == {"cdiVersion", "kind", "devices"}, sorted(d)
assert d["cdiVersion"] == "0.3.0", d["cdiVersion"]
label = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
vendor, cls = d["kind"].split("/")
assert re.fullmatch(label + r"(\." + label + r")*", vendor) and len(vendor) <= 253, vendor
assert re.fullmatch(r"[A-Za-z0-9]([-_A-Za-z0-9]*[A-Za-z0-9])?", cls) and len(cls) <= 63, cls
assert len(d["devices"]) == 1, d["devices"]
dev = d["devices"][0]
assert set(dev) == {"name", "containerEdits"}, sorted(dev)
# 0.3.0's device names begin with a letter.
assert re.fullmatch(r"[A-Za-z][-_.:A-Za-z0-9]*", dev["name"]), dev["name"]
# The host's mode and read/write without mknod (issue 49, item 6): a
# runtime otherwise makes the node 0666 with "rwm".
assert dev["containerEdits"] == {"deviceNodes": [
    {"path": "/dev/gpubuf", "permissions": "rw", "fileMode": 0o660}]}, dev
hdr = open(sys.argv[3]).read()
kind = re.search(r'#define GPUBUF_CDI_KIND\s+"([^"]+)"', hdr).group(1)
assert (kind, dev["name"]) == (d["kind"], "all"), (kind, d["kind"])
PY
else
	skip "gpubuf-info --cdi: a CDI 0.3.0 spec, kind gpubuf.org/gpubuf, device all = /dev/gpubuf" "python3 not found"
fi

# A short write (a full disk under the packages' timer, or make install
# writing the CDI spec): exit 1 and say so, so that "&& mv" keeps the
# previous file instead of a cut one.
for what in cdi prometheus; do
	"$info" --$what >/dev/full 2>"$tmp/full-$what.err"
	echo $? >"$tmp/full-$what.rc"
	check "gpubuf-info --$what onto a full disk (/dev/full) exits 1 saying so" "$tmp/full-$what.err" -- \
		sh -c "[ \$(cat '$tmp/full-$what.rc') = 1 ] && grep -q 'No space left on device' '$tmp/full-$what.err'"
done

# --processes without the module: no rows (this host has no /dev/gpubuf),
# says the memfd backend's buffers are not listed; --json the same.
if [ -d /sys/module/gpubuf ]; then
	skip "gpubuf-info --processes without the module: a header, no rows, says why" \
		"gpubuf.ko is loaded on this host (70-tools tests --processes with it)"
else
	run procs $info --processes
	run procsjson $info --processes --json
	check "gpubuf-info --processes without the module: a header, no rows, says why" "$tmp/procs.out" -- \
		sh -c "[ \$(cat '$tmp/procs.rc') = 0 ] && [ \$(cat '$tmp/procsjson.rc') = 0 ] &&
		head -1 '$tmp/procs.out' | grep -Eq '^pid +command +dev +allocated +bytes +holds +bytes +fds +maps\$' &&
		! grep -Eq '^[0-9]+ +[^ ]+ +[0-9]+ +[0-9]+ ' '$tmp/procs.out' &&
		grep -q '^gpubuf.ko is not loaded: memfd buffers are not listed' '$tmp/procs.out' &&
		grep -q '\"module_loaded\": false' '$tmp/procsjson.out' &&
		grep -q '\"processes\": \\[\\]' '$tmp/procsjson.out'"
fi

# --prometheus: without the module it says so, in the text format;
# Debian's node_exporter, on 127.0.0.1 with the textfile collector only,
# serves the file gpubuf-info wrote, written and renamed into place.
if [ -d /sys/module/gpubuf ]; then
	skip "gpubuf-info --prometheus without the module, and node_exporter serving it" \
		"gpubuf.ko is loaded on this host (70-tools tests --prometheus with it)"
else
	run prom $info --prometheus
	check "gpubuf-info --prometheus: exit 0, HELP and TYPE before each metric, module_loaded 0 and why" \
		"$tmp/prom.out" -- sh -c "[ \$(cat '$tmp/prom.rc') = 0 ] &&
		grep -qx 'gpubuf_module_loaded 0' '$tmp/prom.out' &&
		grep -qx '# gpubuf.ko is not loaded: no module counters.' '$tmp/prom.out' &&
		grep -Eqx 'gpubuf_info[{]library=\"[0-9]+\.[0-9]+\.[0-9]+\",module=\"none\"[}] 1' '$tmp/prom.out' &&
		[ \$(grep -c '^# TYPE ' '$tmp/prom.out') = \$(grep -vc '^#' '$tmp/prom.out') ]"
	exporter=$(command -v prometheus-node-exporter || command -v node_exporter || true)
	if [ -z "$exporter" ] || [ $have_py = 0 ]; then
		skip "node_exporter's textfile collector serves gpubuf-info --prometheus" \
			"no prometheus-node-exporter (make check installs it) or no python3"
	else
		mkdir -p "$tmp/textfile"
		cp "$tmp/prom.out" "$tmp/textfile/gpubuf.prom"
		port=$((20000 + $$ % 20000))
		"$exporter" --web.listen-address=127.0.0.1:$port --collector.disable-defaults \
			--collector.textfile --collector.textfile.directory="$tmp/textfile" \
			>"$tmp/exporter.log" 2>&1 &
		exporter_pid=$!
		check "node_exporter's textfile collector serves gpubuf-info --prometheus" \
			"$tmp/exporter.log" -- python3 - "$port" <<'PY'
import sys, time, urllib.request
url = "http://127.0.0.1:%s/metrics" % sys.argv[1]
for _ in range(100):
    try:
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("no answer from " + url)
lines = text.splitlines()
assert "gpubuf_module_loaded 0" in lines, text[:2000]
info = [l for l in lines if l.startswith("gpubuf_info{")]
assert len(info) == 1 and 'module="none"' in info[0] and info[0].endswith(" 1"), info
# The collector read the file without complaint.
assert 'node_textfile_scrape_error 0' in lines, [l for l in lines if "textfile" in l]
PY
		kill $exporter_pid 2>/dev/null
		wait $exporter_pid 2>/dev/null
	fi
fi

# --prometheus=FILE (issue 49, item 1): the file is replaced whole, never
# through a link, in a directory that only its owner (us or root) may
# write; the packages' timer runs exactly this as root.
pd=$tmp/promdir
mkdir -p "$pd/textfile" && chmod 0755 "$pd/textfile"
echo "not metrics" >"$pd/victim"
ln -s ../victim "$pd/textfile/gpubuf.prom"
run promfile env -u GPUBUF_BACKEND sh -c "umask 077; exec '$info' --prometheus='$pd/textfile/gpubuf.prom'"
check "--prometheus=FILE replaces a link planted at FILE with a file of its own (0644 whatever the umask); the link's target unchanged; no temporary left" \
	"$tmp/promfile.err" -- sh -c "[ \$(cat '$tmp/promfile.rc') = 0 ] && [ ! -L '$pd/textfile/gpubuf.prom' ] &&
	[ \$(stat -c %a '$pd/textfile/gpubuf.prom') = 644 ] &&
	grep -q '^gpubuf_module_loaded ' '$pd/textfile/gpubuf.prom' &&
	[ \"\$(cat '$pd/victim')\" = 'not metrics' ] &&
	[ \$(ls -A '$pd/textfile' | wc -l) = 1 ]"
cp "$pd/textfile/gpubuf.prom" "$pd/before"
chmod 0775 "$pd/textfile"
run promgw "$info" --prometheus="$pd/textfile/gpubuf.prom"
chmod 0755 "$pd/textfile"
check "--prometheus=FILE refuses a directory its group may write: exit 1 saying so, FILE as it was" \
	"$tmp/promgw.err" -- sh -c "[ \$(cat '$tmp/promgw.rc') = 1 ] && grep -q 'refusing .*textfile: mode 0775 lets accounts other than its owner write in it' '$tmp/promgw.err' &&
	cmp -s '$pd/before' '$pd/textfile/gpubuf.prom' && [ \$(ls -A '$pd/textfile' | wc -l) = 1 ]"
ln -s textfile "$pd/link"
run promlink "$info" --prometheus="$pd/link/gpubuf.prom"
check "--prometheus=FILE refuses a directory reached through a symbolic link: exit 1 naming it" \
	"$tmp/promlink.err" -- sh -c "[ \$(cat '$tmp/promlink.rc') = 1 ] && grep -q \"component 'link': is a symbolic link or not a directory\" '$tmp/promlink.err'"
run promnone "$info" --prometheus="$pd/missing/gpubuf.prom"
run promempty "$info" --prometheus=
check "--prometheus=FILE in a missing directory exits 1 saying so; --prometheus= with no name is a usage error (2)" \
	"$tmp/promnone.err" "$tmp/promempty.err" -- sh -c "[ \$(cat '$tmp/promnone.rc') = 1 ] &&
	grep -q \"component 'missing': No such file or directory\" '$tmp/promnone.err' && [ \$(cat '$tmp/promempty.rc') = 2 ]"
# A write error (here EFBIG: a file size limit of 0, SIGXFSZ ignored, for
# gpubuf-info alone; its messages go through a pipe, which the limit
# spares): exit 1 naming it, FILE as it was, no temporary left.
run promfull sh -c "( trap '' XFSZ; ulimit -f 0; '$info' --prometheus='$pd/textfile/gpubuf.prom' 2>&1; echo \"rc=\$?\" ) | cat"
check "--prometheus=FILE on a write error (EFBIG) exits 1 saying so, FILE as it was, no temporary left" \
	"$tmp/promfull.out" -- sh -c "grep -qx 'rc=1' '$tmp/promfull.out' && grep -q 'File too large' '$tmp/promfull.out' &&
	cmp -s '$pd/before' '$pd/textfile/gpubuf.prom' && [ \$(ls -A '$pd/textfile' | wc -l) = 1 ]"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	chown nobody "$pd/textfile"
	run promowner "$info" --prometheus="$pd/textfile/gpubuf.prom"
	chown 0 "$pd/textfile"
	check "--prometheus=FILE as root refuses a directory another account owns (the swap of issue 49): exit 1, FILE as it was" \
		"$tmp/promowner.err" -- sh -c "[ \$(cat '$tmp/promowner.rc') = 1 ] &&
		grep -q \"refusing .*textfile: it belongs to uid \$(id -u nobody), neither us (uid 0) nor root\" '$tmp/promowner.err' &&
		cmp -s '$pd/before' '$pd/textfile/gpubuf.prom'"
else
	skip "--prometheus=FILE as root refuses a directory another account owns" \
		"needs root and a nobody account to own the directory (CI runs as root)"
fi
# The package's postrm removes the textfile on remove (and purge), and
# nothing else there: run in a mount namespace of its own with a scratch
# directory over node_exporter's, so the host's stays untouched.
nx=/var/lib/prometheus/node-exporter
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && [ -d "$nx" ]; then
	mkdir -p "$tmp/nx"
	unshare -m sh -c "mount --make-rprivate / && mount --bind '$tmp/nx' '$nx' &&
		touch '$nx/gpubuf.prom' '$nx/gpubuf.prom.tmp' '$nx/other.prom' &&
		sh '$top/debian/gpubuf-tools.postrm' remove &&
		[ ! -e '$nx/gpubuf.prom' ] && [ ! -e '$nx/gpubuf.prom.tmp' ] && [ -e '$nx/other.prom' ]" \
		>"$tmp/postrm.out" 2>&1
	echo $? >"$tmp/postrm.rc"
	check "gpubuf-tools.postrm remove deletes gpubuf.prom (and its temporary), leaves other textfiles" \
		"$tmp/postrm.out" -- rc_is postrm 0
else
	skip "gpubuf-tools.postrm remove deletes gpubuf.prom" \
		"needs root, unshare and $nx (prometheus-node-exporter; make check installs it)"
fi
# The unit runs that command itself (no shell, no redirection) with the
# sandbox closed: systemd's own exposure score, 5.6 before this change.
unit=$top/systemd/gpubuf-prometheus.service
if command -v systemd-analyze >/dev/null 2>&1 &&
	systemd-analyze security --help 2>/dev/null | grep -q -- --offline; then
	systemd-analyze security --offline=yes --threshold=15 "$unit" \
		>"$tmp/analyze.out" 2>&1
	echo $? >"$tmp/analyze.rc"
	check "gpubuf-prometheus.service: ExecStart is gpubuf-info --prometheus=FILE, no shell, no capability; its timer 10 s after boot, then every 30 s; systemd-analyze security exposure at most 1.5" \
		"$tmp/analyze.out" -- sh -c "[ \$(cat '$tmp/analyze.rc') = 0 ] &&
		grep -qx 'ExecStart=/usr/bin/gpubuf-info --prometheus=/var/lib/prometheus/node-exporter/gpubuf.prom' '$unit' &&
		! grep -q '/bin/sh' '$unit' &&
		grep -qx 'CapabilityBoundingSet=' '$unit' && grep -qx 'AmbientCapabilities=' '$unit' &&
		! grep -Eq '^(User|Group|DynamicUser)=' '$unit' &&
		grep -qx 'OnBootSec=10s' '$top/systemd/gpubuf-prometheus.timer' &&
		grep -qx 'OnUnitActiveSec=30s' '$top/systemd/gpubuf-prometheus.timer' &&
		grep -Eq 'Overall exposure level for gpubuf-prometheus.service: (0\.[0-9]|1\.[0-5]) ' '$tmp/analyze.out'"
else
	skip "gpubuf-prometheus.service: systemd-analyze security exposure at most 1.5" \
		"no systemd-analyze with --offline (systemd 250 or later)"
fi

# --topology: the CUDA and HSA stand-ins (their default PCI addresses:
# 0000:1A:00.0 for cuda:0, 0000:2a:00.0 and 0000:2b:00.0 for hsa:0 and 1)
# and an RDMA device on a made-up sysfs tree with node 1 without memory.
# hsa:1's function is missing from it: its row says why.
fs=$tmp/sysfs
mkdir -p "$fs/devices/system/node/node0" "$fs/devices/system/node/node1" \
	"$fs/bus/pci/devices/0000:1a:00.0" "$fs/bus/pci/devices/0000:2a:00.0" \
	"$fs/bus/pci/devices/0000:1b:00.0" "$fs/class/infiniband/rxe0"
echo 0-1 >"$fs/devices/system/node/online"
echo 0 >"$fs/devices/system/node/has_memory"
echo "10 20" >"$fs/devices/system/node/node0/distance"
echo "20 10" >"$fs/devices/system/node/node1/distance"
d=$fs/bus/pci/devices/0000:1a:00.0
echo 1 >"$d/numa_node"; echo 8-15 >"$d/local_cpulist"
echo "16.0 GT/s PCIe" >"$d/current_link_speed"; echo 16 >"$d/current_link_width"
# 0000:2a:00.0 sits behind a root port (0000:00:02.0) whose link has
# trained down to 2.5 GT/s x1, and could itself do 16 GT/s x16: the
# narrowest link on its path and its most are shown beside the current.
rmdir "$fs/bus/pci/devices/0000:2a:00.0"
d=$fs/devices/pci0000:00/0000:00:02.0/0000:2a:00.0
mkdir -p "$d"
ln -s ../../../devices/pci0000:00/0000:00:02.0/0000:2a:00.0 "$fs/bus/pci/devices/0000:2a:00.0"
echo "2.5 GT/s PCIe" >"$fs/devices/pci0000:00/0000:00:02.0/current_link_speed"
echo 1 >"$fs/devices/pci0000:00/0000:00:02.0/current_link_width"
echo 0 >"$d/numa_node"; echo "8.0 GT/s PCIe" >"$d/current_link_speed"
echo 8 >"$d/current_link_width"
echo "16.0 GT/s PCIe" >"$d/max_link_speed"; echo 16 >"$d/max_link_width"
echo -1 >"$fs/bus/pci/devices/0000:1b:00.0/numa_node"
ln -s ../../../bus/pci/devices/0000:1b:00.0 "$fs/class/infiniband/rxe0/device"
if [ -z "${CUDASTUB_DIR:-}" ] || [ -z "${HSASTUB_DIR:-}" ]; then
	skip "gpubuf-info --topology lists the stand-ins' devices and RDMA with nodes, CPUs and links" \
		"the CUDA and HSA stand-ins are not built (a library without CUDA or HSA support)"
elif [ $have_py = 0 ]; then
	skip "gpubuf-info --topology lists the stand-ins' devices and RDMA with nodes, CPUs and links" "python3 not found"
else
	run topo env GPUBUF_SYSFS_ROOT="$fs" \
		LD_LIBRARY_PATH="$CUDASTUB_DIR:$HSASTUB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		"$info" --topology --json
	check "gpubuf-info --topology lists the stand-ins' devices and RDMA with nodes, CPUs and links" \
		"$tmp/topo.out" "$tmp/topo.err" -- sh -c "[ \$(cat '$tmp/topo.rc') = 0 ] &&
		python3 - '$tmp/topo.out'" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
dev = {x["device"]: x for x in d["devices"]}
c = dev["cuda:0"]
# Node 1 has no memory: node 0, the nearest with memory.
assert (c["pci"], c["numa_node"], c["local_cpus"]) == ("0000:1a:00.0", 0, "8-15"), c
assert (c["link_gt_per_s"], c["link_width"]) == (16.0, 16), c
assert abs(c["link_gb_per_s"] - 16 * 16 * 128 / 130 / 8) < 1e-3, c  # 31.5077
h = dev["hsa:0"]
assert (h["pci"], h["numa_node"], h["link_width"]) == ("0000:2a:00.0", 0, 8), h
assert abs(h["link_gb_per_s"] - 8 * 8 * 128 / 130 / 8) < 1e-3, h
# Issue 49, item 6: the most it trains to, and its root port's narrow link.
assert (h["max_link_gt_per_s"], h["max_link_width"]) == (16.0, 16), h
assert abs(h["path_gb_per_s"] - 2.5 * 0.8 / 8) < 1e-3 and h["path_narrowest"] == "0000:00:02.0", h
assert "max_link_width" not in c and abs(c["path_gb_per_s"] - c["link_gb_per_s"]) < 1e-9, c
assert d["devices_not_listed"] == 0 and d["nodes_not_listed"] == 0, d
h1 = dev["hsa:1"]
assert h1["numa_node"] is None and "no PCI device 0000:2b:00.0" in h1["error"], h1
r = dev["rdma:rxe0"]
assert (r["pci"], r["numa_node"]) == ("0000:1b:00.0", None) and "link_width" not in r, r
for v in (x for x in d["devices"] if x["device"].startswith("vulkan:")):
    if "llvmpipe" in v["name"]:
        assert v["pci"] is None and v["numa_node"] is None, v
assert d["nodes"] == [{"node": 0, "memory": True, "distances": [10, 20]},
                      {"node": 1, "memory": False, "distances": [20, 10]}], d["nodes"]
PY
	run topotext env GPUBUF_SYSFS_ROOT="$fs" \
		LD_LIBRARY_PATH="$CUDASTUB_DIR:$HSASTUB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		"$info" --topology
	check "gpubuf-info --topology's table: one row a device, the link's GB/s, the distance table" \
		"$tmp/topotext.out" -- sh -c "grep -Eq '^cuda:0 +0000:1a:00.0 +0 +8-15 +16.0 GT/s x16 +31.5 ' '$tmp/topotext.out' &&
		grep -Eq '^hsa:0 +0000:2a:00.0 +0 +- +8.0 GT/s x8 +7.9 +16.0 GT/s x16 +31.5 +0.2 GB/s 0000:00:02.0 ' '$tmp/topotext.out' &&
		grep -Eq '^rdma:rxe0 +0000:1b:00.0 +any ' '$tmp/topotext.out' &&
		grep -Eq '^hsa:1 +- +\\? .*no PCI device 0000:2b:00.0' '$tmp/topotext.out' &&
		grep -Eq '^1 +20 +10 +no\$' '$tmp/topotext.out'"
fi
# Past 64 devices likewise: 70 RDMA devices, 64 rows.
fs3=$tmp/sysfs-devices
for i in $(seq 0 69); do mkdir -p "$fs3/class/infiniband/many$i"; done
run topomany env GPUBUF_SYSFS_ROOT="$fs3" "$info" --topology --json
check "gpubuf-info --topology with 70 RDMA devices lists 64 and says the rest were left out" \
	"$tmp/topomany.out" -- python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
rdma = [x for x in d['devices'] if x['device'].startswith('rdma:')]
assert len(d['devices']) == 64 and d['devices_not_listed'] == 70 - len(rdma), (len(d['devices']), d['devices_not_listed'])
" "$tmp/topomany.out"

# Past 64 nodes the table is cut, and says so (issue 49, item 6).
fs2=$tmp/sysfs-nodes
mkdir -p "$fs2/devices/system/node"
echo 0-69 >"$fs2/devices/system/node/online"
echo 0 >"$fs2/devices/system/node/has_memory"
run topobig env GPUBUF_SYSFS_ROOT="$fs2" "$info" --topology
run topobigjson env GPUBUF_SYSFS_ROOT="$fs2" "$info" --topology --json
check "gpubuf-info --topology with 70 nodes lists 64 and says 6 more were left out" \
	"$tmp/topobig.out" "$tmp/topobigjson.out" -- sh -c "[ \$(cat '$tmp/topobig.rc') = 0 ] &&
	grep -q '^(6 more nodes not listed: 64 at most' '$tmp/topobig.out' &&
	grep -q '\"nodes_not_listed\": 6' '$tmp/topobigjson.out'"

run topomap $info --topology --map 4M
check "gpubuf-info --topology --map exits 2: separate reports" "$tmp/topomap.err" -- \
	sh -c "[ \$(cat '$tmp/topomap.rc') = 2 ] && grep -q '^ERROR: --map, --topology, --processes, --prometheus and --cdi are separate' '$tmp/topomap.err'"

echo "1..$n"
[ $failed = 0 ]
