#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The shared library exports exactly what libgpubuf.map promises, with the
# promised versions: a name's newest node is its default (name@@NODE) and
# every older node listing it has a compat version (name@NODE), so programs
# linked before a change keep working. Output is TAP with a computed plan.
# Usage: check-symbols.sh [libgpubuf.so] (default: $GPUBUF_SO)
here=$(cd "$(dirname "$0")" && pwd)
map=$here/libgpubuf.map
lib=${1:-${GPUBUF_SO:?usage: check-symbols.sh libgpubuf.so}}
tmp=${TMPDIR:-/tmp}/gpubuf-syms.$$
trap 'rm -f "$tmp".*' EXIT INT TERM

# Expected "name@NODE" / "name@@NODE", from the map (nodes in file order).
awk '
	/^[A-Z][A-Z0-9_.]* *\{/ { node = $1; sub(/\{.*/, "", node); next }
	/^[[:space:]]*gpubuf_[A-Za-z0-9_]*;/ {
		s = $1; sub(/;.*/, "", s)
		if (s in last) old[s] = old[s] " " last[s]
		last[s] = node
	}
	END {
		for (s in last) {
			print s "@@" last[s]
			n = split(old[s], o, " ")
			for (i = 1; i <= n; i++)
				print s "@" o[i]
		}
	}' "$map" | sort >"$tmp.want"
# The tools' private node (libgpubuf-private.map.in): each name, where the
# build has it (CUDA and HSA support are optional), as name@@NODE.
private=GPUBUF_PRIVATE_$(cat "$here/../VERSION")
sed -n 's/^[[:space:]]*\(gpubuf_[A-Za-z0-9_]*\);.*/\1@@'"$private"'/p' \
	"$here/libgpubuf-private.map.in" | sort >"$tmp.private"
# Defined FUNC/OBJECT symbols of the library, with their versions.
readelf --dyn-syms --wide "$lib" |
	awk '$4 != "NOTYPE" && $7 != "UND" && $8 ~ /^gpubuf_/ { print $8 }' |
	sort >"$tmp.have"

n=0 failed=0
plan=$(( $(wc -l <"$tmp.want") + 1 ))
echo "TAP version 13"
echo "1..$plan"
while read -r s; do
	n=$((n + 1))
	if grep -qxF "$s" "$tmp.have"; then
		echo "ok $n - exports $s"
	else
		echo "not ok $n - exports $s"
		failed=1
	fi
done <"$tmp.want"
n=$((n + 1))
extra=$(sort "$tmp.want" "$tmp.private" | comm -13 - "$tmp.have" | tr '\n' ' ')
if [ -z "$extra" ]; then
	echo "ok $n - exports nothing the map does not list"
else
	echo "not ok $n - exports nothing the map does not list"
	echo "# unexpected: $extra"
	failed=1
fi
exit $failed
