#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: gpubuf-info --topology in the NUMA guest with devices
# (tests/vm/run.sh GPUBUF_VM_NUMA=1 GPUBUF_VM_NUMA_DEVICES=1), after
# 29-near loaded the drivers and bound rxe0 to the node-1 NIC: every DRM
# card and the RDMA device with its PCI address and node, the distance
# table. The static tool cannot dlopen, so Vulkan, CUDA and HSA are
# absent here. Busybox only: the text form is checked. TAP on stdout.
set -u
dir=${GPUBUF_TOOLS:-/gpubuf/bin}
info=$dir/gpubuf-info
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpubuf-near.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
n=0 failed=0
result() { # status name file
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
		sed 's/^/# /' "$3" | head -n 30
	fi
}

if [ ! -x "$info" ]; then
	echo "not ok 1 - gpubuf-info is in $dir (tests/check.sh carries guest-extra/bin)"
	echo "1..1"
	exit 1
fi
# The bed's PCI functions: e1000e and virtio-gpu on node 1's bridge,
# bochs-display on node 0's, q35's VGA on the root bus.
pci_of() { # vendor device node
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor")" = "$1" ] && [ "$(cat "$d/device")" = "$2" ] &&
			[ "$(cat "$d/numa_node")" = "$3" ] && basename "$d"
	done
}
nic=$(pci_of 0x8086 0x10d3 1)
gpu=$(pci_of 0x1af4 0x1050 1)
disp0=$(pci_of 0x1234 0x1111 0)
disp2=$(pci_of 0x1234 0x1111 2)
vga=$(pci_of 0x1234 0x1111 -1)

"$info" --topology >"$tmp/topo.txt" 2>&1
echo "# gpubuf-info --topology:"
sed 's/^/#   /' "$tmp/topo.txt"
grep -Eq "^drm:/dev/dri/card[0-9]+ +$gpu +1 " "$tmp/topo.txt" &&
	grep -Eq "^drm:/dev/dri/card[0-9]+ +$disp0 +0 " "$tmp/topo.txt" &&
	grep -Eq "^drm:/dev/dri/card[0-9]+ +$disp2 +1 " "$tmp/topo.txt" &&
	grep -Eq "^drm:/dev/dri/card[0-9]+ +$vga +any " "$tmp/topo.txt" &&
	grep -Eq '^drm:/dev/dri/card[0-9]+ +- +any .*vgem' "$tmp/topo.txt"
result $? "DRM cards: virtio-gpu ($gpu) on node 1, bochs-displays on node 0 ($disp0) and on memory-less node 2 ($disp2, so node 1), the root bus's VGA and vgem without affinity" "$tmp/topo.txt"
grep -Eq "^rdma:rxe0 +$nic +1 " "$tmp/topo.txt"
result $? "rdma:rxe0 is its NIC's ($nic), on node 1" "$tmp/topo.txt"
grep -Eq '^0 +10 +20 +25 +yes$' "$tmp/topo.txt" && grep -Eq '^1 +20 +10 +15 +yes$' "$tmp/topo.txt" &&
	grep -Eq '^2 +25 +15 +10 +no$' "$tmp/topo.txt"
result $? "the distance table: 20 between nodes 0 and 1, node 2 15 from node 1 and 25 from node 0, without memory" "$tmp/topo.txt"
"$info" --topology --json >"$tmp/topo.json" 2>&1
grep -q '"device": "rdma:rxe0"' "$tmp/topo.json" && grep -q '"nodes": \[' "$tmp/topo.json"
result $? "--json has the devices and the nodes" "$tmp/topo.json"
echo "1..$n"
[ "$failed" = 0 ]
