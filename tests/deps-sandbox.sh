#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Build a stand-in for a bare Debian 12 with only some packages added:
# DIR/bin holds links to the programs that those packages, the packages
# they depend on and a minbase system's (Priority required, and apt)
# install, as this machine has them; DIR/include the same for
# /usr/include, and DIR/bin's gcc and cc compile against it alone. With
# PATH=DIR/bin a command of a missing package fails as "not found", a
# header of a missing -dev package as "No such file". Nothing else is
# restricted: absolute paths (#!/usr/bin/perl), libraries, perl and
# python modules, data files.
# Usage: deps-sandbox.sh [--headers] DIR PACKAGE...   (installed here)
# DIR/include and the gcc wrapper only with --headers. Writes
# DIR/packages (the closure); fails on a package not installed here.
set -eu
headers=
[ "$1" = --headers ] && { headers=1; shift; }
dir=$1
shift
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/root"

# Installed packages: name, priority, provides, depends + pre-depends.
dpkg-query -W -f='${db:Status-Abbrev}\t${Package}\t${Priority}\t${Provides}\t${Depends}, ${Pre-Depends}\n' |
	awk -F '\t' '$1 ~ /^ii/ { print $2 "\t" $3 "\t" $4 "\t" $5 }' >"$dir/status"

# The closure over Depends and Pre-Depends, the first installed
# alternative of each (apt's choice on a bare system, where none is there
# yet), virtual names through Provides.
awk -F '\t' -v seeds="$* apt" '
	function name(s) { sub(/\(.*/, "", s); sub(/\[.*/, "", s); sub(/:.*/, "", s); gsub(/[ \t]/, "", s); return s }
	function pick(s,   a, i, n, x) {
		n = split(s, a, "|")
		for (i = 1; i <= n; i++) { x = name(a[i]); if (x in inst) return x; if (x in prov) return prov[x] }
		return ""
	}
	{ inst[$1] = 1; dep[$1] = $4; if ($2 == "required") req[$1] = 1
	  n = split($3, p, ","); for (i = 1; i <= n; i++) { x = name(p[i]); if (x != "" && !(x in prov)) prov[x] = $1 } }
	END {
		ns = split(seeds, s, " ")
		for (i = 1; i <= ns; i++) { x = pick(s[i]); if (x == "") { print "missing " s[i] > "/dev/stderr"; bad = 1 } else q[++t] = x }
		for (x in req) q[++t] = x
		for (h = 1; h <= t; h++) {
			x = q[h]; if (x in got) continue; got[x] = 1
			nd = split(dep[x], d, ",")
			for (j = 1; j <= nd; j++) { y = pick(d[j]); if (y != "" && !(y in got)) q[++t] = y }
		}
		for (x in got) print x
		exit bad
	}' "$dir/status" >"$dir/packages.all" || exit 1
sort "$dir/packages.all" >"$dir/packages"
rm "$dir/packages.all"

# Their files, from dpkg's lists (PKG.list or PKG:ARCH.list).
lists=
while read -r p; do
	for f in /var/lib/dpkg/info/"$p".list /var/lib/dpkg/info/"$p":*.list; do
		[ -f "$f" ] && lists="$lists $f"
	done
done <"$dir/packages"
# shellcheck disable=SC2086
cat $lists >"$dir/files"

# Programs: every name in /usr/bin and /usr/sbin whose target (through
# alternatives and links) is a file of those packages.
grep -E '^(/usr)?/s?bin/[^/]+$' "$dir/files" | sort -u | xargs realpath -m | sort -u >"$dir/progs"
for d in /usr/bin /usr/sbin; do
	for f in "$d"/*; do echo "$f"; done
done >"$dir/host"
xargs realpath -m <"$dir/host" | paste "$dir/host" - |
	awk -F '\t' 'NR == FNR { ok[$1] = 1; next } ($2 in ok) { print $1 }' "$dir/progs" - |
	xargs -r cp -s -t "$dir/bin" 2>/dev/null || true # a name in both: the first

# Headers, and a gcc that sees no others (kernel code, built -nostdinc,
# is left alone).
if [ -n "$headers" ]; then
	grep '^/usr/include/.' "$dir/files" | while read -r f; do
		[ -d "$f" ] || echo "$f"
	done | xargs -r cp -s --parents -t "$dir/root" 2>/dev/null || true
fi
mkdir -p "$dir/root/usr/include/x86_64-linux-gnu"
if [ -n "$headers" ] && [ -e "$dir/bin/gcc" ]; then
	gccinc=$(gcc -print-file-name=include)
	for c in gcc cc gcc-12 x86_64-linux-gnu-gcc x86_64-linux-gnu-gcc-12; do
		[ -e "$dir/bin/$c" ] || continue
		real=$(readlink "$dir/bin/$c")
		rm "$dir/bin/$c"
		cat >"$dir/bin/$c" <<EOF
#!/bin/sh
case " \$* " in *" -nostdinc "*) exec $real "\$@" ;; esac
exec $real -nostdinc -isystem $gccinc -isystem $dir/root/usr/include/x86_64-linux-gnu -isystem $dir/root/usr/include "\$@"
EOF
		chmod +x "$dir/bin/$c"
	done
fi
rm -f "$dir/status" "$dir/files" "$dir/progs" "$dir/host"
