#!/bin/sh
# SPDX-License-Identifier: MIT
# Copy the project's source, as a release tarball would hold it, to DEST
# (created): the committed files of a git checkout, else the tree without
# its build directories.
# Usage: export-tree.sh DEST
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
# Absolute: the copy below runs from the top of the tree.
dest=$(cd "$1" && pwd)
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$top" ls-files -z | (cd "$top" && xargs -0 cp --parents -t "$dest")
else
	(cd "$top" && tar --exclude=./build --exclude='*/build' -cf - .) |
		tar -C "$dest" -xf -
fi
