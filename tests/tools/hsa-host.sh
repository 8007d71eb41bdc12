#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: host tests of gpubuf-bench's hsa mode (memfd backend). TAP
# with the plan at the end.
#  - With the runtime this machine has (Debian's libhsa-runtime64.so.1
#    fails hsa_init without /dev/kfd; or none at all) the mode is
#    unavailable, exit 77, with libgpubuf's reason in every format.
#  - Against libgpubuf's stand-in runtime (tests/hsastub, HSASTUB_DIR) the
#    whole measurement loop runs: rows, interleaved ratios, error paths.
#    The stand-in's copies are memcpy: this proves the plumbing (which
#    calls, which pointers, nothing leaked), not AMD GPU performance.
#    Its report (HSASTUB_REPORT) counts violations and what was left.
#
# TOOLS_BUILD names the directory with the binaries (default tools/build);
# HSASTUB_DIR the stand-in's directory, empty when built without HSA.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${TOOLS_BUILD:-$top/tools/build}
bench=$bin/gpubuf-bench
info=$bin/gpubuf-info
stub=${HSASTUB_DIR:-}
export GPUBUF_BACKEND=${GPUBUF_BACKEND:-memfd}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpubuf-hsa.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
small="--size 64K --reps 3 --warmup 0"

# The TAP helpers (ok, not_ok, skip, check, run) and shared checks.
. "$top/tests/tools/tap-lib.sh"
# A failure shows more: the stand-in's report is long.
show_lines=40
# stubrun NAME [VAR=VALUE...] -- ARGS...: gpubuf-bench on the stand-in,
# its report in NAME.report
stubrun() {
	name=$1
	shift
	vars=
	while [ "$1" != -- ]; do vars="$vars $1"; shift; done
	shift
	# shellcheck disable=SC2086
	run "$name" env LD_LIBRARY_PATH="$stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" HSASTUB_REPORT="$tmp/$name.report" \
		$vars "$bench" hsa "$@"
}

if [ ! -x "$bench" ] || [ ! -x "$info" ]; then
	echo "Bail out! $bench or $info not built (make -C tools)"
	exit 1
fi

# ---- the runtime this machine has -----------------------------------------
# gpubuf-info's reason for hsa is libgpubuf's; the bench must say the same.
hsa_usable=0
"$info" --json 2>/dev/null | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["runtimes"]["hsa"]["usable"] else 1)' 2>/dev/null &&
	hsa_usable=1
unavailable hsa $hsa_usable "$(info_reason hsa libhsa-runtime64.so.1)" \
	"an HSA runtime with a GPU agent is usable here" \
	'hsa_init|no ROCm runtime|no HSA GPU agent' \
	'hsa_init|ROCm runtime|HSA GPU agent|HSA support' \
	"hsa alone exits 77 with libgpubuf's reason (table)" \
	"hsa --json exits 77 with the same reason and no ratios" \
	'assert "unusable" in d["header"]["hsa"] or d["header"]["hsa"].startswith("n/a"), d["header"]'

if [ -z "$stub" ] || [ ! -f "$stub/libhsa-runtime64.so.1" ]; then
	echo "# no stand-in runtime: gpubuf-bench was built without HSA headers"
	skip "hsa mode against the stand-in runtime" "built without HSA headers (no HSASTUB_DIR)"
	echo "1..$n"
	[ $failed = 0 ]
	exit
fi

# ---- the stand-in: no GPU agent -------------------------------------------
stubrun nogpu HSASTUB_GPUS=0 -- --json
if [ $have_py = 1 ]; then
	check "stand-in without GPU agents: exit 77, the library's reason, no ratios" \
		"$tmp/nogpu.out" "$tmp/nogpu.err" -- sh -c "[ \$(cat '$tmp/nogpu.rc') = 77 ] &&
		python3 - '$tmp/nogpu.out'" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
res = [r for r in d["results"] if r["mode"] == "hsa"]
assert len(res) == 1 and res[0]["status"] == "unavailable", res
assert res[0]["reason"] == "no HSA GPU agent (2 agents, none a GPU)", res
assert d["ratios"] == {}, d["ratios"]
assert d["header"]["hsa"].endswith("unusable: no HSA GPU agent (2 agents, none a GPU)"), d["header"]
PY
else
	skip "stand-in without GPU agents: exit 77, the library's reason, no ratios" "python3 not found"
fi

# ---- the stand-in: the whole loop -----------------------------------------
# clean NAME: a shell test that the stand-in's report for NAME shows no
# violation and nothing left locked, allocated or signalling
# Nothing of the tool's left at exit. The latency rows' dispatches load
# the library's kernels, whose queue and its kernarg ring (one pool block)
# live as long as the process: a block per live queue is the library's.
clean() {
	for k in violations live_locks live_signals; do
		printf "grep -qx '%s 0' '%s' && " "$k" "$tmp/$1.report"
	done
	printf "[ \"\$(sed -n 's/^live_allocs //p' '%s')\" = \"\$(sed -n 's/^live_queues //p' '%s')\" ] && " \
		"$tmp/$1.report" "$tmp/$1.report"
	printf "grep -qx 'live_queues [01]' '%s' && " "$tmp/$1.report"
	echo true
}
stubrun full -- $small --json
check "stand-in: hsa exits 0" "$tmp/full.err" -- sh -c "[ \$(cat '$tmp/full.rc') = 0 ]"
if [ $have_py = 1 ]; then
	check "stand-in: device row, 6 measured rows, memfd rows skipped, 4 ratios of 3 pairs, 2 latency rows (JSON)" \
		"$tmp/full.out" -- python3 - "$tmp/full.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["header"]["hsa"] == "libhsa-runtime64.so.1 1.1, 2 device(s)", d["header"]["hsa"]
res = [r for r in d["results"] if r["mode"] == "hsa"]
info = [r for r in res if r["status"] == "info"]
assert len(info) == 1 and info[0]["op"] == "device", info
assert info[0]["device_count"] == 2 and info[0]["version"] == "1.1", info
assert info[0]["info"].startswith("GPU agent 0 of 2: gfx90a, HSA 1.1, backend memfd"), info
ok = [r for r in res if r["status"] == "ok"]
# Launch latency: 1000 synchronous 1x1 GEMVs, the vector add --reps times,
# both in the agent's pool, in us with the p99 at or above the median.
lat = {r["op"]: r for r in ok if r["memory"] == "device"}
assert sorted(lat) == ["launch_gemv_1x1", "vadd_1m"], lat
assert lat["launch_gemv_1x1"]["reps"] == 1000 and lat["launch_gemv_1x1"]["size_bytes"] == 4, lat
assert lat["vadd_1m"]["reps"] == 3 and lat["vadd_1m"]["size_bytes"] == 4 << 20, lat
assert all(0 < l["us"] <= l["p99_us"] for l in lat.values()), lat
ok = [r for r in ok if r["memory"] != "device"]
assert sorted((r["op"], r["memory"]) for r in ok) == sorted(
    (op, m) for op in ("h2d", "d2h") for m in ("gpubuf", "fine_pool", "pageable")), ok
for r in ok:
    assert r["size_bytes"] == 65536 and r["reps"] == 3 and r["threads"] == 1, r
    assert 0 < r["gb_per_s_min"] <= r["gb_per_s"] <= r["gb_per_s_max"], r
sk = [r for r in res if r["status"] == "skipped"]
assert sorted(r["op"] for r in sk) == ["d2h", "h2d"], sk
assert all(r["memory"] == "gpubuf_memfd" and "backend is memfd" in r["reason"] for r in sk), sk
assert len(res) == 11, res
rt = d["ratios"]
names = ["%s_gpubuf_vs_%s" % (op, den) for op in ("h2d", "d2h")
         for den in ("fine_pool", "pageable")]
assert sorted(rt) == sorted(names), sorted(rt)
close = lambda a, b: abs(a - b) <= 1e-4 * abs(b)
for name in names:
    x = rt[name]
    assert x["status"] == "ok" and x["numerator"] == "gpubuf", x
    assert x["size_bytes"] == 65536 and x["method"] == "interleaved pairs", x
    assert x["pairs"] == 3 and len(x["pair_ratios"]) == 3, x
    p = sorted(x["pair_ratios"])
    assert 0 < x["ratio_min"] <= x["ratio"] <= x["ratio_max"], x
    assert close(p[0], x["ratio_min"]) and close(p[1], x["ratio"]) and close(p[2], x["ratio_max"]), x
PY
else
	skip "stand-in: device row, 6 measured rows, memfd rows skipped, 4 ratios of 3 pairs, 2 latency rows (JSON)" "python3 not found"
fi
# 64 KiB: 256 copies a sample. Rows: 6 x 3 samples; ratios: 4 x 3 pairs
# x 2 sides; 6 more fill the latency rows' operands. Pageable locks each
# copy: 2 rows x 3 + 2 ratios x 3 samples; the latency's source one more.
# Each copy and each of the 1003 dispatches (1000 + 3) waits on a signal.
copies=$(((6 * 3 + 4 * 3 * 2) * 256 + 6))
locks=$(((2 * 3 + 2 * 3) * 256 + 2))
check "stand-in: $copies copies through agent pointers, $locks locks and unlocks, 1003 dispatches, nothing left over" \
	"$tmp/full.report" -- sh -c "$(clean full) &&
	grep -qx 'calls_hsa_amd_memory_async_copy $copies' '$tmp/full.report' &&
	grep -qx 'calls_hsa_signal_wait_scacquire $((copies + 1003))' '$tmp/full.report' &&
	grep -qx 'calls_hsa_queue_add_write_index_scacq_screl 1003' '$tmp/full.report' &&
	grep -qx 'calls_hsa_amd_memory_lock_to_pool $locks' '$tmp/full.report' &&
	grep -qx 'calls_hsa_amd_memory_unlock $locks' '$tmp/full.report' &&
	grep -qx 'copy_gpus 1' '$tmp/full.report'"

run fulltab env LD_LIBRARY_PATH="$stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bench" hsa $small
check "stand-in: the table has a title, 6 GB/s rows and the 4 ratios" "$tmp/fulltab.out" -- \
	sh -c "grep -q '^# hsa: hsa_amd_memory_async_copy GB/s' '$tmp/fulltab.out' &&
	       grep -q '^hsa: GPU agent 0 of 2: gfx90a' '$tmp/fulltab.out' &&
	       [ \$(grep -cE '^(h2d|d2h) +(gpubuf|fine_pool|pageable) +64 KiB +[0-9.]+ +[0-9.]+ +[0-9.]+ GB/s +3 ' '$tmp/fulltab.out') = 6 ] &&
	       [ \$(grep -cE '^(h2d|d2h)_gpubuf_vs_(fine_pool|pageable) +[0-9.]+ +at 64 KiB +\\[[0-9.]+\\.\\.[0-9.]+\\] over 3 pairs\$' '$tmp/fulltab.out') = 4 ]"

# --device picks the GPU agent in enumeration order; one past the end fails.
stubrun dev1 -- --size 64K --reps 1 --warmup 0 --device 1 --csv
check "stand-in: --device 1 copies with GPU agent 1 only" "$tmp/dev1.out" "$tmp/dev1.report" -- \
	sh -c "[ \$(cat '$tmp/dev1.rc') = 0 ] && grep -q '^hsa,device,.*,info,\"GPU agent 1 of 2' '$tmp/dev1.out' &&
	       [ \$(grep -c '^hsa,[hd]2[dh],.*,ok,' '$tmp/dev1.out') = 6 ] &&
	       grep -qx 'copy_gpus 2' '$tmp/dev1.report' && $(clean dev1)"
stubrun dev2 -- --size 64K --reps 1 --warmup 0 --device 2
check "stand-in: --device 2 of 2 agents exits 1 with an ERROR" "$tmp/dev2.err" -- \
	sh -c "[ \$(cat '$tmp/dev2.rc') = 1 ] && grep -q '^ERROR: hsa: no HSA GPU agent 2 (2 present)' '$tmp/dev2.err'"

# ---- the stand-in: failures -----------------------------------------------
# A copy failing in the second sample of the first row (copy 300): that row
# is skipped with the runtime's text, the ratios that need it say why, the
# other rows and ratios are measured, and everything is given back.
oor=HSA_STATUS_ERROR_OUT_OF_RESOURCES
stubrun fcopy HSASTUB_FAIL=hsa_amd_memory_async_copy:300:$oor -- $small --csv
check "a failed copy skips its row with the runtime's reason; its ratio says why; nothing leaks" \
	"$tmp/fcopy.out" "$tmp/fcopy.report" -- sh -c "[ \$(cat '$tmp/fcopy.rc') = 0 ] &&
	grep -q '^hsa,h2d,gpubuf,65536,.*,skipped,hsa_amd_memory_async_copy (0x1008): $oor: out of resources (stand-in)\$' '$tmp/fcopy.out' &&
	[ \$(grep -c '^hsa,[hd]2[dh],.*,ok,' '$tmp/fcopy.out') = 5 ] &&
	grep -q '^ratio,h2d_gpubuf_vs_fine_pool,gpubuf,65536,.*,unavailable,gpubuf at 64 KiB skipped: hsa_amd_memory_async_copy' '$tmp/fcopy.out' &&
	[ \$(grep -c '^ratio,d2h_.*,ok,\$' '$tmp/fcopy.out') = 2 ] && $(clean fcopy)"
# The first lock is gpubuf_hsa_lock's; the second a pageable copy's.
stubrun flock HSASTUB_FAIL=hsa_amd_memory_lock_to_pool:2:$oor -- $small --csv
check "a failed pageable lock skips that row and is not unlocked (no stand-in violation)" \
	"$tmp/flock.out" "$tmp/flock.report" -- sh -c "[ \$(cat '$tmp/flock.rc') = 0 ] &&
	grep -q '^hsa,h2d,pageable,65536,.*,skipped,hsa_amd_memory_lock_to_pool (0x1008): $oor' '$tmp/flock.out' &&
	grep -q '^ratio,h2d_gpubuf_vs_pageable,.*,unavailable,pageable at 64 KiB skipped' '$tmp/flock.out' &&
	[ \$(grep -c '^hsa,[hd]2[dh],.*,ok,' '$tmp/flock.out') = 5 ] && $(clean flock)"
stubrun fgb HSASTUB_FAIL=hsa_amd_memory_lock_to_pool:1:$oor -- $small --csv
check "gpubuf_hsa_lock failing skips the size with the library's reason; every ratio says why" \
	"$tmp/fgb.out" "$tmp/fgb.report" -- sh -c "[ \$(cat '$tmp/fgb.rc') = 0 ] &&
	grep -q '^hsa,all,gpubuf,65536,.*,skipped,gpubuf_hsa_lock: hsa_amd_memory_lock_to_pool (0x1008): $oor' '$tmp/fgb.out' &&
	[ \$(grep -c '^ratio,.*,unavailable,gpubuf_hsa_lock: ' '$tmp/fgb.out') = 4 ] &&
	! grep -q '^hsa,[hd]2[dh],' '$tmp/fgb.out' && $(clean fgb)"
stubrun fdev HSASTUB_FAIL=hsa_amd_memory_pool_allocate:2:$oor -- $small --csv
check "the device buffer failing to allocate skips the size; host memory is given back" \
	"$tmp/fdev.out" "$tmp/fdev.report" -- sh -c "[ \$(cat '$tmp/fdev.rc') = 0 ] &&
	grep -q '^hsa,all,gpubuf,65536,.*,skipped,hsa_amd_memory_pool_allocate (device pool) (0x1008)' '$tmp/fdev.out' && $(clean fdev)"
stubrun fsig HSASTUB_FAIL=hsa_signal_create:1:$oor -- $small
check "hsa_signal_create failing fails the mode (exit 1, ERROR) and leaks nothing" \
	"$tmp/fsig.err" "$tmp/fsig.report" -- sh -c "[ \$(cat '$tmp/fsig.rc') = 1 ] &&
	grep -q '^ERROR: hsa: hsa_signal_create (0x1008)' '$tmp/fsig.err' && $(clean fsig)"

# Without a fine-grained CPU pool the library locks with hsa_amd_memory_lock
# and so does the pageable row; there is nothing to compare with.
stubrun nofine HSASTUB_NO_FINE_POOL=1 -- $small --csv
check "no fine-grained pool: fine_pool rows skipped, vs_fine_pool ratios say why, the rest measured" \
	"$tmp/nofine.out" "$tmp/nofine.report" -- sh -c "[ \$(cat '$tmp/nofine.rc') = 0 ] &&
	[ \$(grep -c '^hsa,[hd]2[dh],fine_pool,65536,.*,skipped,the CPU agent has no fine-grained global pool\$' '$tmp/nofine.out') = 2 ] &&
	[ \$(grep -c '^ratio,[hd]2[dh]_gpubuf_vs_fine_pool,.*,unavailable,fine_pool at 64 KiB skipped' '$tmp/nofine.out') = 2 ] &&
	[ \$(grep -c '^ratio,[hd]2[dh]_gpubuf_vs_pageable,.*,ok,\$' '$tmp/nofine.out') = 2 ] &&
	grep -q '^calls_hsa_amd_memory_lock ' '$tmp/nofine.report' &&
	! grep -q '^calls_hsa_amd_memory_lock_to_pool ' '$tmp/nofine.report' && $(clean nofine)"

# The device row gives agent 0's PCIe link (0000:2a:00.0 by default) from
# a made-up sysfs tree; without the tree it says why there is none.
fs=$tmp/sysfs
mkdir -p "$fs/bus/pci/devices/0000:2a:00.0"
echo "8.0 GT/s PCIe" >"$fs/bus/pci/devices/0000:2a:00.0/current_link_speed"
echo 8 >"$fs/bus/pci/devices/0000:2a:00.0/current_link_width"
stubrun link GPUBUF_SYSFS_ROOT=$fs -- --size 64K --reps 1 --warmup 0 --csv
check "the device row gives agent 0's link: 8 GT/s x8, at most 7.9 GB/s each way" \
	"$tmp/link.out" -- sh -c "[ \$(cat '$tmp/link.rc') = 0 ] &&
	grep -q '^hsa,device,.*; link: 0000:2a:00.0 PCIe 8.0 GT/s x8: at most 7.9 GB/s each way\"\$' '$tmp/link.out'"

# Whether the library's code objects cover the agent (issue 49, item 8):
# the stand-in's gfx90a is carried; a gfx1100 is not, said before a
# dispatch would answer ENOEXEC.
lib=${LIBGPUBUF_DIR:-$top/libgpubuf/build}
if strings "$lib/libgpubuf.so" 2>/dev/null | grep -q 'gfx90a/'; then
	run hsakern env LD_LIBRARY_PATH="$stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$info"
	run hsakern2 env LD_LIBRARY_PATH="$stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		HSASTUB_ISA=amdgcn-amd-amdhsa--gfx1100 "$info"
	check "gpubuf-info's hsa line: gfx90a, kernels: yes; a gfx1100 agent: kernels: no, saying why" \
		"$tmp/hsakern.out" "$tmp/hsakern2.out" -- sh -c "
		grep -E '^hsa +' '$tmp/hsakern.out' | grep -qF ', gfx90a, kernels: yes' &&
		grep -E '^hsa +' '$tmp/hsakern2.out' | grep -qF ', gfx1100, kernels: no (no code object for gfx1100 in the kernels (gfx'"
else
	skip "gpubuf-info's hsa line: gfx90a, kernels: yes; a gfx1100 agent: kernels: no" \
		"libgpubuf was built without HSA code objects (no hipcc)"
fi

# Every host allocation of the loop is freed on every path (valgrind).
if command -v valgrind >/dev/null 2>&1; then
	run vg env LD_LIBRARY_PATH="$stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" valgrind --leak-check=full \
		--show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
		--error-exitcode=99 "$bench" hsa --size 64K --reps 1 --warmup 0 --json
	check "stand-in run under valgrind: exit 0, no errors, no leaks" "$tmp/vg.err" -- \
		sh -c "[ \$(cat '$tmp/vg.rc') = 0 ] && grep -q 'ERROR SUMMARY: 0 errors' '$tmp/vg.err'"
else
	skip "stand-in run under valgrind: exit 0, no errors, no leaks" "valgrind not found"
fi

echo "1..$n"
[ $failed = 0 ]
