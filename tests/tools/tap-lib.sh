# SPDX-License-Identifier: MIT
# Sourced by the host tests of gpubuf-bench and gpubuf-info (run-host.sh,
# hsa-host.sh) once they have set bench, info and tmp: TAP results numbered
# as they come (the caller ends with echo "1..$n" and [ $failed = 0 ]),
# commands whose output is kept in $tmp, and the checks of a mode that this
# machine cannot run.
# shellcheck shell=sh disable=SC2154
n=0 failed=0
# How many lines of each file a failure shows.
show_lines=20
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - $1"
	shift
	for f in "$@"; do [ -f "$f" ] && sed 's/^/# /' "$f" | head -n "$show_lines"; done
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
check() { # name file-to-show... -- command...
	name=$1
	shift
	files=
	while [ "$1" != -- ]; do files="$files $1"; shift; done
	shift
	# shellcheck disable=SC2086
	if "$@"; then ok "$name"; else not_ok "$name" $files; fi
}
# run NAME ARGS...: stdout to $tmp/NAME.out, stderr to .err, status to .rc
run() {
	name=$1
	shift
	"$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
	echo $? >"$tmp/$name.rc"
}
have_py=0
command -v python3 >/dev/null 2>&1 && python3 -c 'import json' 2>/dev/null && have_py=1

# info_reason MODE LIB: the reason gpubuf-info's text gives for MODE ("" if
# none), which is libgpubuf's.
info_reason() {
	"$info" 2>/dev/null | sed -n "s/^$1  *unavailable: //p; s/^$1  *$2 version [^,]*, unusable: //p"
}

# unavailable MODE USABLE WHY SKIP_WHY RE CSV_RE TABLE_TEST JSON_TEST [PY]:
# gpubuf-bench MODE where it cannot run exits 77 as a table, JSON and CSV
# ($tmp/MODE, MODEjson, MODEcsv), each with one unavailable result whose
# reason is either that gpubuf-bench was built without MODE, or WHY
# (gpubuf-info's, from info_reason) and matches RE; the CSV row's matches
# CSV_RE. The JSON has no ratios; PY adds Python asserts on it (d, its
# dict). USABLE 1 (MODE can run here) skips all three, saying SKIP_WHY.
unavailable() {
	un_m=$1 un_usable=$2 un_why=$3 un_skip=$4 un_re=$5 un_csv_re=$6
	un_table=$7 un_json=$8 un_py=${9:-}
	un_csv="$un_m --csv exits 77 with one unavailable row"
	un_up=$(printf %s "$un_m" | tr '[:lower:]' '[:upper:]')
	run "$un_m" "$bench" "$un_m"
	run "${un_m}json" "$bench" "$un_m" --json
	run "${un_m}csv" "$bench" "$un_m" --csv
	if [ "$un_usable" = 1 ]; then
		for t in "$un_table" "$un_json" "$un_csv"; do
			skip "$t" "$un_skip"
		done
		return
	fi
	check "$un_table" "$tmp/$un_m.out" -- \
		sh -c "[ \$(cat '$tmp/$un_m.rc') = 77 ] &&
		       line=\$(grep '^$un_m: unavailable: ' '$tmp/$un_m.out') &&
		       why=\${line#$un_m: unavailable: } &&
		       { [ \"\$why\" = 'gpubuf-bench was built without $un_up support' ] ||
		         { [ \"\$why\" = \"\$1\" ] &&
		           echo \"\$why\" | grep -qE \"\$2\"; }; } &&
		       [ \$(grep -c '^$un_m' '$tmp/$un_m.out') = 1 ]" sh "$un_why" "$un_re"
	if [ $have_py = 1 ]; then
		{
			cat <<'PY'
import json, sys
mode = sys.argv[3]
d = json.load(open(sys.argv[1]))
res = [r for r in d["results"] if r["mode"] == mode]
assert len(res) == 1, res
r = res[0]
assert r["status"] == "unavailable" and r["op"] == "all", r
pre = mode + ": unavailable: "
line = [l for l in open(sys.argv[2]) if l.startswith(pre)][0]
assert r["reason"] == line[len(pre):].rstrip("\n"), r
assert d["ratios"] == {}, d["ratios"]
PY
			printf '%s\n' "$un_py"
		} >"$tmp/${un_m}json.py"
		check "$un_json" "$tmp/${un_m}json.out" "$tmp/${un_m}json.err" -- \
			sh -c "[ \$(cat '$tmp/${un_m}json.rc') = 77 ] &&
			python3 '$tmp/${un_m}json.py' '$tmp/${un_m}json.out' '$tmp/$un_m.out' '$un_m'"
	else
		skip "$un_json" "python3 not found"
	fi
	check "$un_csv" "$tmp/${un_m}csv.out" -- \
		sh -c "[ \$(cat '$tmp/${un_m}csv.rc') = 77 ] && [ \$(wc -l <'$tmp/${un_m}csv.out') = 2 ] &&
		       grep -qE \"^$un_m,all,-,0,0,0,-1,,0,0,0,0,0,unavailable,.*(\$1)\" '$tmp/${un_m}csv.out'" sh "$un_csv_re"
}
