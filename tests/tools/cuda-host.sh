#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: host tests of gpubuf-bench's cuda mode against libgpubuf's
# stand-in driver (tests/cudastub, CUDASTUB_DIR; memfd backend). TAP with
# the plan at the end.
#  - The whole measurement loop runs: rows, interleaved ratios, the JSON
#    written by --json-file from the same run as the table. The stand-in
#    runs no kernel and its events report fixed times: this proves the
#    plumbing, not NVIDIA performance.
#  - The stand-in's call trace (CUSTUB_TRACE) shows what was called when:
#    the kernels are loaded before the first timed sample, also with
#    --warmup 0 (issue 23, defect 6c: cuModuleLoadData used to fall into
#    the first sample), and the driver saw no misuse.
#
# TOOLS_BUILD names the directory with the binaries (default tools/build);
# CUDASTUB_DIR the stand-in's directory, empty when built without CUDA.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${TOOLS_BUILD:-$top/tools/build}
bench=$bin/gpubuf-bench
info=$bin/gpubuf-info
stub=${CUDASTUB_DIR:-}
export GPUBUF_BACKEND=${GPUBUF_BACKEND:-memfd}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpubuf-cuda.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

. "$top/tests/tools/tap-lib.sh"
show_lines=40
# stubrun NAME ARGS...: gpubuf-bench cuda on the stand-in, its call trace
# in NAME.trace
stubrun() {
	name=$1
	shift
	: >"$tmp/$name.trace"
	run "$name" env LD_LIBRARY_PATH="$stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		CUSTUB_TRACE="$tmp/$name.trace" "$bench" cuda "$@"
}

if [ ! -x "$bench" ]; then
	echo "Bail out! $bench not built (make -C tools)"
	exit 1
fi
if [ -z "$stub" ] || [ ! -f "$stub/libcuda.so.1" ]; then
	echo "# no stand-in driver: gpubuf-bench was built without CUDA headers"
	skip "cuda mode against the stand-in driver" "built without CUDA headers (no CUDASTUB_DIR)"
	echo "1..$n"
	exit 0
fi

# ---- one run, table on stdout and JSON in a file ----------------------------
stubrun cold --size 1M --reps 2 --warmup 0 --json-file "$tmp/cold.json"
check "cuda --warmup 0 on the stand-in exits 0" "$tmp/cold.out" "$tmp/cold.err" -- \
	sh -c "[ \$(cat '$tmp/cold.rc') = 0 ]"
check "the stand-in saw no driver misuse" "$tmp/cold.err" -- \
	sh -c "! grep -q 'custub: violation' '$tmp/cold.err'"
# The first cuEventRecord starts the first sample; every module load
# must come before it.
check "kernels are loaded before the first timed sample (--warmup 0)" "$tmp/cold.trace" -- \
	awk '$1 == "cuEventRecord" && !ev { ev = NR }
	     $1 == "cuModuleLoadData" { last = NR; loads++ }
	     END { exit !(ev && loads == 1 && last < ev) }' "$tmp/cold.trace"
if [ $have_py = 1 ]; then
	check "--json-file holds the same run as the table" "$tmp/cold.out" -- \
		python3 - "$tmp/cold.json" "$tmp/cold.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read().splitlines()
ok = [r for r in d["results"] if r["mode"] == "cuda" and r["status"] == "ok"]
assert ok, d["results"]
rows = [l.split() for l in table if l and not l.startswith(("#", "cuda:", "op "))]
rows = [r for r in rows if len(r) > 3 and r[0] in {x["op"] for x in ok}]
assert len(rows) == len(ok), (len(rows), len(ok))
for r, x in zip(rows, ok):
    assert (r[0], r[1]) == (x["op"], x["memory"]), (r, x)
    want = x.get("gb_per_s", x.get("ms", x.get("us", x.get("seconds_per_gib", -1))))
    assert abs(float(r[4]) - want) <= 5e-4 * max(1.0, float(r[4])), (r, x)
# Launch latency: 1000 samples of the 1x1 GEMV, --reps (2) vector adds, in
# us with the p99 (a sample at or above the median by construction).
lat = {x["op"]: x for x in ok if "us" in x}
assert set(lat) == {"launch_gemv_1x1", "vadd_1m"}, ok
assert lat["launch_gemv_1x1"]["reps"] == 1000 and lat["vadd_1m"]["reps"] == 2, lat
assert lat["vadd_1m"]["size_bytes"] == 4 << 20, lat
assert all(l["us"] > 0 and l["p99_us"] >= l["us"] for l in lat.values()), lat
rat = d["ratios"]
assert rat and all(v["status"] == "ok" for v in rat.values()), rat
PY
else
	skip "--json-file holds the same run as the table" "no python3 here"
fi

# ---- small values keep their digits in the table ---------------------------
# The stand-in times every loop as 1 ms, so at 4 KiB a GEMV is 1/256 ms and
# an SGEMM about 0.001 GFLOP/s: a fixed three decimals printed those as
# 0.004 and 0.0 (a slow link's RDMA bandwidth likewise as 0.000 GB/s).
stubrun small --size 4K --reps 2 --warmup 0 --json-file "$tmp/small.json"
if [ $have_py = 1 ]; then
	check "values below 1 keep three significant digits in the table" "$tmp/small.out" "$tmp/small.err" -- \
		python3 - "$tmp/small.json" "$tmp/small.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ok = [r for r in d["results"] if r["mode"] == "cuda" and r["status"] == "ok"]
rows = [l.split() for l in open(sys.argv[2]).read().splitlines()
        if l and not l.startswith(("#", "cuda:", "op "))]
rows = [r for r in rows if len(r) > 7 and r[0] in {x["op"] for x in ok}]
assert len(rows) == len(ok) and ok, (len(rows), len(ok))
def same(text, want, decimals):
    # three significant digits below 1, else the column's decimals; the
    # JSON's own six significant digits add their rounding
    err = abs(float(text) - want) - 5e-6 * abs(want)
    return err <= 5e-3 * abs(want) if abs(want) < 1 else err <= 0.5 * 10 ** -decimals
small = 0
for r, x in zip(rows, ok):
    key = next(k for k in ("gb_per_s", "ms", "us", "seconds_per_gib") if k in x)
    for text, want in zip(r[4:7], (x[key], x[key + "_min"], x[key + "_max"])):
        assert same(text, want, 3), (r, key, want)
        small += 0 < want < 0.1
    rate = next((k for k in ("effective_gb_per_s", "gflop_per_s", "p99_us") if k in x), None)
    if rate:
        assert same(r[10], x[rate], 1), (r, rate, x[rate])
        small += 0 < x[rate] < 0.1
assert small, "no value below 0.1 at 4 KiB: the check tests nothing"
PY
else
	skip "values below 1 keep three significant digits in the table" "no python3 here"
fi

# ---- an unwritable --json-file fails the run ------------------------------
stubrun badfile --size 64K --reps 1 --warmup 0 --json-file "$tmp/none/x.json"
check "an unwritable --json-file exits 1 and names the file" "$tmp/badfile.err" -- \
	sh -c "[ \$(cat '$tmp/badfile.rc') = 1 ] && grep -q -- '--json-file $tmp/none/x.json' '$tmp/badfile.err'"

# ---- the PCIe link beside the rows, and --node ------------------------------
# The stand-in's device 0 is 0000:1A:00.0; a made-up sysfs tree gives it
# a 16 GT/s x16 link. --node 0 puts every gpubuf buffer on node 0.
fs=$tmp/sysfs
mkdir -p "$fs/bus/pci/devices/0000:1a:00.0"
echo 0 >"$fs/bus/pci/devices/0000:1a:00.0/numa_node"
echo "16.0 GT/s PCIe" >"$fs/bus/pci/devices/0000:1a:00.0/current_link_speed"
echo 16 >"$fs/bus/pci/devices/0000:1a:00.0/current_link_width"
run link env GPUBUF_SYSFS_ROOT="$fs" LD_LIBRARY_PATH="$stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	"$bench" cuda --size 64K --reps 1 --warmup 0 --node 0 --json
check "the device row gives the link's ceiling; --node 0 is in the header and the buffers are there" \
	"$tmp/link.out" "$tmp/link.err" -- sh -c "[ \$(cat '$tmp/link.rc') = 0 ] &&
	grep -q '\"info\": \"device 0 of 1: .*; link: 0000:1a:00.0 PCIe 16.0 GT/s x16: at most 31.5 GB/s each way\"' '$tmp/link.out' &&
	grep -q '\"numa_node_requested\": 0,' '$tmp/link.out' &&
	grep -q '\"numa_node_gpubuf\": 0,' '$tmp/link.out'"

# ---- whether the library's kernels run on the device (issue 49, item 8) -----
# The stand-in's compute capability and driver version, as the library
# reads them: sm_90 on a CUDA 13 driver is covered; sm_86 by the sm_80
# code, sm_120 by the compute_90 PTX; sm_70 has no code; a CUDA 12.4
# driver cannot take CUDA 13's code at all. gpubuf-info says so before a
# launch would answer ENOEXEC.
lib=${LIBGPUBUF_DIR:-$top/libgpubuf/build}
if strings "$lib/libgpubuf.so" 2>/dev/null | grep -q '+ptx[0-9]'; then
	kern_ok=1
	for c in "9 0 13000 sm_90, kernels: yes" "8 6 13000 sm_86, kernels: yes" \
		"12 0 13000 sm_120, kernels: yes" \
		"7 0 13000 sm_70, kernels: no (no code for sm_70 in the kernels (sm " \
		"9 0 12040 sm_90, kernels: no (the kernels were built by CUDA 13."; do
		set -- $c
		want=${c#* * * }
		env LD_LIBRARY_PATH="$stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			CUSTUB_ATTR="*:COMPUTE_CAPABILITY_MAJOR=$1,*:COMPUTE_CAPABILITY_MINOR=$2" \
			CUSTUB_DRIVER=$3 "$info" >"$tmp/kern.out" 2>&1
		if ! grep -E '^cuda +' "$tmp/kern.out" | grep -qF ", $want"; then
			echo "# sm_$1$2, driver $3: wanted '$want'"
			grep -E '^cuda +' "$tmp/kern.out" | sed 's/^/# /'
			kern_ok=0
		fi
	done
	check "gpubuf-info's cuda line says whether the library's kernels run on the device (sm_90, 86, 120 yes; sm_70 and an old driver no, saying why)" \
		"$tmp/kern.out" -- [ $kern_ok = 1 ]
	run kernbench env LD_LIBRARY_PATH="$stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		CUSTUB_ATTR="*:COMPUTE_CAPABILITY_MAJOR=7,*:COMPUTE_CAPABILITY_MINOR=0" \
		"$bench" cuda --size 64K --reps 1 --warmup 0 --json
	check "gpubuf-bench cuda's device row names sm_70 and that the kernels have no code for it" \
		"$tmp/kernbench.out" -- grep -q '"info": "device 0 of 1: .*; sm_70, kernels: no (no code for sm_70' "$tmp/kernbench.out"
else
	skip "gpubuf-info's cuda line says whether the library's kernels run on the device" \
		"libgpubuf was built without CUDA kernels (no nvcc)"
	skip "gpubuf-bench cuda's device row names sm_70 and that the kernels have no code for it" \
		"libgpubuf was built without CUDA kernels (no nvcc)"
fi

echo "1..$n"
[ $failed = 0 ]
