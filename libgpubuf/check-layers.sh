#!/bin/sh
# SPDX-License-Identifier: MIT
#
# libgpubuf's layers, checked on what the objects link to, not on what the
# folders are called: for each folder's objects (core, kernels, cuda, hsa,
# vulkan, drm, dlpack, topology), which other folders define the symbols it uses (nm). The
# core uses no other folder; each folder uses only those below it
# (LAYERS, lowest first), so no two parts call each other; and no core
# source names a consumer. Prints TAP.
# Usage: check-layers.sh OBJDIR (the pic/ objects of a build)
set -u
here=$(cd "$(dirname "$0")" && pwd)
objs=${1:?usage: check-layers.sh OBJDIR}
# Lowest first: a folder may use the ones before it, never one after it.
LAYERS="core fileio kernels cuda hsa vulkan drm dlpack topology"
# Consumers on one level: none may use another.
PEERS="cuda hsa vulkan drm"
tmp=${TMPDIR:-/tmp}/gpubuf-layers.$$
trap 'rm -f "$tmp".*' EXIT INT TERM

. "$here/../tests/tap-emit.sh"
# result STATUS NAME [FILE]: one result from an exit status (0: ok).
result() { emit $((! $1)) "$2" "${3:-}"; }

# "symbol folder" for every defined global symbol; "folder symbol" for
# every undefined one.
for d in $LAYERS; do
	for o in "$objs/$d"/*.o; do
		[ -f "$o" ] || continue
		nm -g --defined-only "$o" | awk -v d="$d" 'NF == 3 { print $3, d }'
		nm -u "$o" | awk -v d="$d" '{ print d, $NF }' >>"$tmp.uses"
	done
done | sort -u >"$tmp.defs"
: >>"$tmp.uses"

# "user used" folder pairs.
awk 'NR == FNR { def[$1] = $2; next }
	($2 in def) && def[$2] != $1 { print $1, def[$2] }' \
	"$tmp.defs" "$tmp.uses" | sort -u >"$tmp.edges"
sed 's/^/uses: /' "$tmp.edges" >"$tmp.show"
[ -s "$tmp.defs" ]
result $? "objects of every layer found under $objs" "$tmp.show"

awk -v layers="$LAYERS" '
	BEGIN { n = split(layers, l, " "); for (i = 1; i <= n; i++) rank[l[i]] = i }
	rank[$2] >= rank[$1] { print $1 " uses " $2 " (a layer above it or beside it)"; bad = 1 }
	END { exit bad }' "$tmp.edges" >"$tmp.up"
result $? "every folder uses only the layers below it ($LAYERS): no circles" "$tmp.up"

grep -E '^core ' "$tmp.edges" >"$tmp.core"
[ ! -s "$tmp.core" ]
result $? "core/ uses no other folder" "$tmp.core"

: >"$tmp.peers"
for a in $PEERS; do
	for b in $PEERS; do
		[ "$a" = "$b" ] || grep -x "$a $b" "$tmp.edges" >>"$tmp.peers"
	done
done
[ ! -s "$tmp.peers" ]
result $? "the consumers ($PEERS) do not use one another" "$tmp.peers"

grep -n -i -E 'cuda|hsa|rocm|vulkan|drm|amdgpu|dlpack' "$here"/core/*.c "$here"/core/*.h |
	grep -v '/strerror.c:' >"$tmp.names"
[ ! -s "$tmp.names" ]
result $? "no core source names a consumer (strerror.c's errno texts aside)" "$tmp.names"

echo "1..$n"
[ "$failed" = 0 ]
