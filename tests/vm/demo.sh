#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# make demo: gpubuf-bench's host and alloc tables (and PRIME import latency,
# any GPU runtime found, and the vulkan and storage modes on this machine). With gpubuf.ko loaded here it runs on this
# machine; otherwise (containers, CI) it boots the QEMU guest with the module
# and runs the same benchmark there, under emulation.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

if [ -c /dev/gpubuf ]; then
	scripts/install-deps.sh lib
	make -s -C tools >&2
	# The tools link the tree's shared libgpubuf (tools/Makefile).
	export LD_LIBRARY_PATH="$top/libgpubuf/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	tools/build/gpubuf-info
	echo
	exec tools/build/gpubuf-bench all
fi

echo "gpubuf: /dev/gpubuf is absent here; booting the QEMU test guest with gpubuf.ko" >&2
scripts/install-deps.sh demo
kdir=${KDIR:-$(scripts/find-kdir.sh)}
make -s module KDIR="$kdir" >&2
make -s -C "$kdir" M="$top/tests/testmod" modules >&2
demo=$top/build/demo
rm -rf "$demo"
mkdir -p "$demo/empty"
make -s -C tools static OUT="$demo/extra/bin" >&2

# Sizes are trimmed so the emulated run takes a few minutes: alloc stops at
# 1 GiB (the default sweep goes to 4 GiB) and host moves 16 MiB per rep.
cat >"$demo/extra/demo.sh" <<'GUEST'
#!/bin/sh
echo "NOTE: this guest runs under QEMU TCG emulation on $(nproc) vCPUs: absolute"
echo "NOTE: numbers are not hardware speeds; only ratios within this run mean anything."
echo "NOTE: to keep it short, host moves 16 MiB per repetition and alloc stops at 1 GiB."
echo
/gpubuf/bin/gpubuf-info
# Through a pipe, so the console (a terminal) gets no progress lines.
for args in "host --rep-bytes 16M --reps 3" "alloc --sizes 64M,256M,1G --reps 3" \
	    "drm cuda hsa --reps 50"; do
	echo
	# shellcheck disable=SC2086
	/gpubuf/bin/gpubuf-bench $args 2>&1 | cat
done
GUEST
chmod +x "$demo/extra/demo.sh"

GPUBUF_VM_EXTRA_DIR=$demo/extra GPUBUF_VM_APPEND=gpubuf.demo=1 \
	GPUBUF_VM_MEM=4096 GPUBUF_VM_OUT=$demo/vm \
	tests/vm/run.sh "$kdir" "$demo/empty" >/dev/null
rc=0
awk '/^@@DEMO-BEGIN/ { on = 1; next }
     /^@@DEMO-END/ { on = 0; sub("rc=", "", $2); rc = $2; next }
     on { print }
     END { exit rc == "" ? 1 : rc }' "$demo/vm/console.txt" || rc=$?

# Vulkan runs on this machine's own device (Mesa's lavapipe where there is
# no GPU), on memfd buffers: the static guest tools cannot load a driver.
echo
echo "gpubuf: the vulkan mode on this machine (memfd backend; lavapipe, if that is the device, runs on the CPU)"
make -s -C tools >&2
# --reps 5 is the mode's default; given, it also bounds the 1M-element
# vector adds, which take tens of ms each on lavapipe (1000 by default).
LD_LIBRARY_PATH="$top/libgpubuf/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	GPUBUF_BACKEND=memfd tools/build/gpubuf-bench vulkan --reps 5 2>&1 | cat

# Storage on this machine's own disk (a file in /var/tmp), memfd buffers:
# the guest has no disk of its own in the demo.
echo
echo "gpubuf: the storage mode on this machine (memfd backend; a file made in /var/tmp)"
LD_LIBRARY_PATH="$top/libgpubuf/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	GPUBUF_BACKEND=memfd tools/build/gpubuf-bench storage 2>&1 | cat
exit "$rc"
