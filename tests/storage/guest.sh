#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# 57-storage, in the guest tests/check.sh boots with two disks: an NVMe
# namespace holding the host's pattern raw (/dev/nvme0n1) and a virtio-blk
# disk with ext4 holding data.bin (/dev/vda). Loads their drivers, mounts
# the file system and runs tests/storage/storage_guest.c (TAP).
# crc32c_generic: ext4 asks the crypto API for crc32c, which the guest
# cannot autoload.
for m in nvme virtio_pci virtio_blk crc32c_generic ext4; do
	modprobe "$m" 2>/dev/null
done
i=0
while [ ! -b /dev/nvme0n1 ] || [ ! -b /dev/vda ]; do
	i=$((i + 1))
	if [ "$i" -gt 60 ]; then
		echo "1..1"
		echo "not ok 1 - storage: /dev/nvme0n1 and /dev/vda did not appear in 60 s ($(ls /dev | tr '\n' ' '))"
		exit 1
	fi
	sleep 1
done
mkdir -p /mnt/ext4
if ! mount -t ext4 /dev/vda /mnt/ext4; then
	echo "1..1"
	echo "not ok 1 - storage: mount -t ext4 /dev/vda"
	exit 1
fi
/gpubuf/storage/storage_guest /dev/nvme0n1 /mnt/ext4/data.bin
rc=$?
umount /mnt/ext4
exit $rc
