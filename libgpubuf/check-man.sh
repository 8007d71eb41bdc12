#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Every symbol in libgpubuf.map needs man/man3/<symbol>.3, either a page
# naming it in its NAME section or a ".so" link to such a page; every real
# page needs the standard sections. Output is TAP with a computed plan.
here=$(cd "$(dirname "$0")" && pwd)
map=$here/libgpubuf.map
man=$here/../man/man3
# A name versioned in several nodes is listed once per node: count it once.
syms=$(sed -n 's/^[[:space:]]*\(gpubuf_[A-Za-z0-9_]*\);.*/\1/p' "$map" |
	awk '!seen[$0]++')
pages=$(cd "$man" && for f in *.3; do head -n 1 "$f" | grep -q '^\.so ' || echo "$f"; done)
# Every real page of every section carries the release in VERSION.
version=$(cat "$here/../VERSION")
allpages=$(cd "$here/../man" && for f in man*/*.[0-9]; do head -n 1 "$f" | grep -q '^\.so ' || echo "$f"; done)
n=0 failed=0
plan=$(( $(echo "$syms" | wc -w) + $(echo "$pages" | wc -w) + 1 ))
echo "TAP version 13"
echo "1..$plan"

# NAME section of a page, one name per line.
names() {
	awk '/^\.SH NAME/ { f = 1; next } /^\.SH/ { f = 0 } f' "$1" |
		sed 's/ \\-.*//' | tr ',' '\n' | tr -d ' '
}

for s in $syms; do
	n=$((n + 1))
	f=$man/$s.3
	why=
	if [ ! -f "$f" ]; then
		why="no man3/$s.3"
	else
		target=$(sed -n '1s/^\.so //p' "$f")
		[ -n "$target" ] && f=$man/../$target
		if [ ! -f "$f" ]; then
			why="link target $target missing"
		elif ! names "$f" | grep -qx "$s"; then
			why="not in the NAME section of $(basename "$f")"
		fi
	fi
	if [ -z "$why" ]; then
		echo "ok $n - man page for $s"
	else
		echo "not ok $n - man page for $s"
		echo "# $why"
		failed=1
	fi
done

for p in $pages; do
	n=$((n + 1))
	missing=
	for sec in NAME SYNOPSIS DESCRIPTION "RETURN VALUE" ERRORS "SEE ALSO"; do
		grep -q "^\.SH \"\{0,1\}$sec\"\{0,1\}\$" "$man/$p" || missing="$missing [$sec]"
	done
	if [ -z "$missing" ]; then
		echo "ok $n - $p has all sections"
	else
		echo "not ok $n - $p has all sections"
		echo "# missing:$missing"
		failed=1
	fi
done

n=$((n + 1))
stale=
for p in $allpages; do
	grep -q "^\.TH .* \"[a-z]*gpubuf $version\"" "$here/../man/$p" || stale="$stale $p"
done
if [ -z "$stale" ]; then
	echo "ok $n - every man page's .TH names release $version"
else
	echo "not ok $n - every man page's .TH names release $version"
	echo "# stale:$stale"
	failed=1
fi
exit $failed
