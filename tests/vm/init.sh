#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only
# /init of the gpubuf test guest: mount the usual file systems, load the
# modules, run every suite under /gpubuf/tests in name order, dump dmesg,
# power off. Lines starting with @@ are read by tests/vm/run.sh.
/bin/busybox mkdir -p /proc /sys /dev /tmp /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mkdir -p /sys/fs/cgroup
mount -t cgroup2 cgroup2 /sys/fs/cgroup

echo "@@GUEST kernel $(uname -r) cpus $(nproc) $(grep MemTotal /proc/meminfo)"
setup_ok=1
modprobe vgem || { echo "@@SETUP-FAIL modprobe vgem"; setup_ok=0; }
insmod /gpubuf/gpubuf_pinprobe.ko || { echo "@@SETUP-FAIL insmod gpubuf_pinprobe.ko"; setup_ok=0; }
insmod /gpubuf/gpubuf_importer.ko || { echo "@@SETUP-FAIL insmod gpubuf_importer.ko"; setup_ok=0; }
insmod /gpubuf/gpubuf.ko || { echo "@@SETUP-FAIL insmod gpubuf.ko"; setup_ok=0; }
# Let devtmpfs create the nodes before the first open.
for i in 1 2 3 4 5; do
	[ -c /dev/gpubuf ] && [ -c /dev/gpubuf_pinprobe ] &&
		[ -c /dev/gpubuf_importer ] && break
	sleep 1
done

# gpubuf.hostroot=1 (run.sh's GPUBUF_VM_HOST_ROOT=1): the host's / is shared
# read-only over virtio-9p. It is mounted at /host.9p, and /host, a tmpfs, gets
# its top-level directories (bind mounts, read-only like the share) and
# symlinks, with the guest's /proc, /sys (and its cgroup2), /dev (with a
# tmpfs /dev/shm for POSIX semaphores), /tmp and /gpubuf in place of the
# host's, and an empty /root and /run: /gpubuf/host-run chroots there. A
# failure fails the guest setup result; the other suites still run.
# cache=loose lets the guest cache pages and attributes (the share does not
# change under a test run); msize 512000 is the most 6.1's virtio transport
# takes.
host_root() {
	moddir=/lib/modules/$(uname -r)
	nomod=
	for m in virtio_pci 9pnet_virtio 9p; do
		grep -q "/$m\.ko" "$moddir/modules.builtin" 2>/dev/null ||
			modprobe "$m" || nomod="$nomod $m"
	done
	mkdir -p /host.9p /host
	if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 \
		hostroot /host.9p; then
		echo "@@SETUP-FAIL host root: mount -t 9p hostroot /host.9p${nomod:+ (modprobe failed:$nomod)}"
		return
	fi
	mount -t tmpfs -o mode=755 host /host || {
		echo "@@SETUP-FAIL host root: tmpfs on /host"
		return
	}
	for p in /host.9p/* /host.9p/.[!.]*; do
		n=${p##*/}
		case $n in proc|sys|dev|tmp|run|root|gpubuf) continue ;; esac
		if [ -L "$p" ]; then
			ln -s "$(readlink "$p")" "/host/$n"
		elif [ -d "$p" ]; then
			mkdir "/host/$n" && mount -o bind "$p" "/host/$n"
		fi || echo "@@SETUP-FAIL host root: /host/$n"
	done
	mkdir -p /dev/shm /host/proc /host/sys /host/dev /host/tmp /host/run \
		/host/root /host/gpubuf
	chmod 700 /host/root
	mount -t tmpfs -o mode=1777 shm /dev/shm &&
		mount -o bind /proc /host/proc &&
		mount -o rbind /sys /host/sys &&
		mount -o rbind /dev /host/dev &&
		mount -o bind /tmp /host/tmp &&
		mount -o bind /gpubuf /host/gpubuf ||
		echo "@@SETUP-FAIL host root: the guest's /dev/shm, /proc, /sys, /dev, /tmp or /gpubuf in /host"
}
grep -q 'gpubuf\.hostroot=1' /proc/cmdline && host_root

# Each suite's time limit: 900 s, or gpubuf.suite_timeout=S on the kernel
# command line (long fuzzer and stress runs).
suite_timeout=$(sed -n 's/.*gpubuf\.suite_timeout=\([0-9][0-9]*\).*/\1/p' /proc/cmdline)

# Every user process's state and kernel stack (a stuck suite's watchdog).
user_stacks() {
	for p in /proc/[0-9]*; do
		cmd=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)
		[ -n "$cmd" ] || continue # a kernel thread
		echo "@@TASK ${p#/proc/} ${cmd}state=$(cut -d' ' -f3 "$p/stat")"
		cat "$p/stack" 2>/dev/null
	done
}

echo "gpubuf-tests-begin" > /dev/kmsg
if grep -q 'gpubuf\.demo=1' /proc/cmdline; then
	echo "@@DEMO-BEGIN"
	/gpubuf/demo.sh
	echo "@@DEMO-END rc=$?"
elif [ $setup_ok = 1 ]; then
	for t in /gpubuf/tests/*; do
		name=${t##*/}
		echo "@@SUITE-BEGIN $name"
		case $name in
		*-example-*)
			# Examples print no TAP: their exit status is the result.
			echo "1..1"
			if GPUBUF_BACKEND=module timeout 300 "$t"; then
				echo "ok 1 - runs on the module backend"
			else
				echo "not ok 1 - runs on the module backend"
			fi
			rc=0
			;;
		*)
			# A suite that outlives its limit by a minute did not
			# die of timeout's SIGTERM: stuck in the kernel. Dump
			# the blocked tasks and every CPU's stack to the console
			# before the host's limit ends the guest without a word.
			(sleep $((${suite_timeout:-900} + 60)) &&
				echo "@@SUITE-STUCK $name" && sleep 1 &&
				user_stacks &&
				echo w >/proc/sysrq-trigger &&
				echo l >/proc/sysrq-trigger) &
			watchdog=$!
			GPUBUF_KO=/gpubuf/gpubuf.ko GPUBUF_FAKEABI_KO=/gpubuf/gpubuf_fakeabi.ko \
				GPUBUF_BACKEND=module timeout "${suite_timeout:-900}" "$t"
			rc=$?
			kill "$watchdog" 2>/dev/null
			;;
		esac
		echo "@@SUITE-END $name rc=$rc"
	done
fi
# Debug kernels (tests/vm/debug-kernel.sh) have kmemleak: scan after the
# suites, twice, as its documentation advises, and print what it found.
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
if [ -w /sys/kernel/debug/kmemleak ]; then
	echo scan > /sys/kernel/debug/kmemleak
	sleep 6
	echo scan > /sys/kernel/debug/kmemleak
	echo "@@KMEMLEAK-BEGIN"
	cat /sys/kernel/debug/kmemleak
	echo "@@KMEMLEAK-END"
fi
# With page_owner=on (debug runs), every page still allocated carries its
# allocation stack: once all buffers are freed, none may have been allocated
# for a buffer by gpubuf. Slab pages (kmalloc'ed metadata that shared a new
# slab) legitimately outlive the objects and are not counted; the first
# records counted are printed.
if [ -r /sys/kernel/debug/page_owner ] && grep -q 'page_owner=on' /proc/cmdline; then
	# busybox awk fails with ENOMEM reading the debugfs file directly.
	cat /sys/kernel/debug/page_owner >/tmp/page_owner &&
	# Kernel page tables built for a vmalloc'ed page array stay after
	# vfree(); they are the kernel's, not a buffer's.
	left=$(awk '/^$/ { if (ours && !slab && !table) { n++; if (n <= 3) print rec > "/dev/stderr" }
			ours = slab = table = 0; rec = ""; next }
		{ rec = rec "\n" $0 }
		/gpubuf_buffer_create/ { ours = 1 }
		/allocate_slab/ { slab = 1 }
		/__pte_alloc_kernel|__pmd_alloc|__pud_alloc|__p4d_alloc/ { table = 1 }
		END { if (ours && !slab && !table) n++; print n + 0 }' /tmp/page_owner)
	rm -f /tmp/page_owner
	echo "@@PAGE-OWNER gpubuf_pages=${left:-unreadable}"
fi
echo "@@DMESG-BEGIN"
dmesg
echo "@@DMESG-END"
echo "@@GUEST-DONE"
poweroff -f
