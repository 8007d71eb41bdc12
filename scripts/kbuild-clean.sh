#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# kbuild's "clean" of the tree (M=TOP) with Go's module files kept: kbuild
# deletes every file named *.mod below M=, and bindings/go/go.mod and
# examples/go/go.mod are source, not kbuild output.
# Usage: kbuild-clean.sh KDIR [DIR] (DIR: the M= directory, default the tree)
set -eu
kdir=$1
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${2:-$top}
saved=$(mktemp)
trap 'rm -f "$saved"' EXIT
(cd "$dir" && find . -path ./build -prune -o -name go.mod -type f -print |
	tar -cf "$saved" -T -)
st=0
make -s -C "$kdir" M="$dir" clean || st=$?
tar -xf "$saved" -C "$dir"
exit $st
