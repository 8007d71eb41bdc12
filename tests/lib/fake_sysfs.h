/* SPDX-License-Identifier: MIT */
/*
 * A made-up sysfs tree for topology tests (GPUBUF_SYSFS_ROOT), with what
 * machines seldom have: four online nodes of which 1 and 3 have no memory.
 * Node 1 is nearer node 2 than node 0; node 3 is as near 0 as 2 (the lower
 * wins). PCI functions and the nodes their numa_node files give:
 *   0000:1a:00.0  1 (so near 2)     0000:1b:00.0  0
 *   0000:2a:00.0  -1 (no affinity)  0000:2b:00.0  2
 *   0000:3c:00.0  3 (so near 0)     0000:3d:00.0  no numa_node file
 *   10000:e1:00.0 2 (a domain past 0xffff, as behind Intel's VMD)
 * class/infiniband/rxe0 is 0000:1b:00.0's; virt0 has no device link and
 * no port; soft0 has none either, but its port 1 is net0's, on
 * 0000:2b:00.0 (soft-RoCE). soft1's port is on vlan0, a VLAN over bond0,
 * a bond over net0; soft2's on br0, a bridge of tap0 (no device, no
 * lower) and net0; soft3's on vlan9, over nothing with a device; soft4's
 * on br1, a bridge of net1 (0000:1b:00.0, node 0) and net0 (node 2): the
 * lowers in name order give net0's; soft5's on deep0, nine VLANs above
 * net0, one level more than followed.
 * dev/char/1:3 (/dev/null's number) is virtio3, a child of 0000:2b:00.0
 * without a numa_node of its own (a virtio-gpu card's device).
 */
#ifndef GPUBUF_TEST_FAKE_SYSFS_H
#define GPUBUF_TEST_FAKE_SYSFS_H

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int t_fs_put(const char *root, const char *rel, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (!text)
		return mkdir(path, 0755) && errno != EEXIST ? -1 : 0;
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static int t_fs_link(const char *root, const char *rel, const char *target)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return symlink(target, path);
}

/* The tree in a new directory, whose name goes to root; 0 or -1. */
static int t_fake_sysfs(char *root, size_t len)
{
	static const struct { const char *rel, *text; } files[] = {
		{ "devices/system/node/online", "0-3\n" },
		{ "devices/system/node/has_memory", "0,2\n" },
		{ "devices/system/node/node0/distance", "10 20 20 21\n" },
		{ "devices/system/node/node1/distance", "20 10 15 20\n" },
		{ "devices/system/node/node2/distance", "20 15 10 21\n" },
		{ "devices/system/node/node3/distance", "21 20 21 10\n" },
		{ "bus/pci/devices/0000:1a:00.0/numa_node", "1\n" },
		{ "bus/pci/devices/0000:1b:00.0/numa_node", "0\n" },
		{ "bus/pci/devices/0000:2a:00.0/numa_node", "-1\n" },
		{ "bus/pci/devices/0000:2b:00.0/numa_node", "2\n" },
		{ "bus/pci/devices/0000:3c:00.0/numa_node", "3\n" },
		{ "bus/pci/devices/0000:3d:00.0", NULL },
		{ "bus/pci/devices/10000:e1:00.0/numa_node", "2\n" },
		{ "class/infiniband/rxe0", NULL },
		{ "class/infiniband/virt0", NULL },
		{ "class/infiniband/soft0/ports/1/gid_attrs/ndevs/0", "net0\n" },
		{ "class/net/net0", NULL },
		{ "class/infiniband/soft1/ports/1/gid_attrs/ndevs/0", "vlan0\n" },
		{ "class/infiniband/soft2/ports/1/gid_attrs/ndevs/0", "br0\n" },
		{ "class/infiniband/soft3/ports/1/gid_attrs/ndevs/0", "vlan9\n" },
		{ "class/net/vlan0", NULL },
		{ "class/net/bond0", NULL },
		{ "class/net/br0", NULL },
		{ "class/net/tap0", NULL },
		{ "class/net/vlan9", NULL },
		{ "class/infiniband/soft4/ports/1/gid_attrs/ndevs/0", "br1\n" },
		{ "class/infiniband/soft5/ports/1/gid_attrs/ndevs/0", "deep0\n" },
		{ "class/net/br1", NULL },
		{ "class/net/net1", NULL },
		{ "class/net/deep0", NULL }, { "class/net/deep1", NULL },
		{ "class/net/deep2", NULL }, { "class/net/deep3", NULL },
		{ "class/net/deep4", NULL }, { "class/net/deep5", NULL },
		{ "class/net/deep6", NULL }, { "class/net/deep7", NULL },
		{ "class/net/deep8", NULL },
		{ "bus/pci/devices/0000:2b:00.0/virtio3", NULL },
		{ "dev/char/1:3", NULL },
	};

	snprintf(root, len, "%s/gpubuf-sysfs.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root))
		return -1;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (t_fs_put(root, files[i].rel, files[i].text))
			return -1;
	if (t_fs_link(root, "class/infiniband/rxe0/device",
		      "../../../bus/pci/devices/0000:1b:00.0") ||
	    t_fs_link(root, "class/net/net0/device",
		      "../../../bus/pci/devices/0000:2b:00.0") ||
	    t_fs_link(root, "dev/char/1:3/device",
		      "../../../bus/pci/devices/0000:2b:00.0/virtio3") ||
	    t_fs_link(root, "class/net/vlan0/lower_bond0", "../bond0") ||
	    t_fs_link(root, "class/net/bond0/lower_net0", "../net0") ||
	    t_fs_link(root, "class/net/br0/lower_tap0", "../tap0") ||
	    t_fs_link(root, "class/net/br0/lower_net0", "../net0") ||
	    t_fs_link(root, "class/net/vlan9/lower_tap0", "../tap0") ||
	    t_fs_link(root, "class/net/net1/device",
		      "../../../bus/pci/devices/0000:1b:00.0") ||
	    t_fs_link(root, "class/net/br1/lower_net1", "../net1") ||
	    t_fs_link(root, "class/net/br1/lower_net0", "../net0"))
		return -1;
	/* deep0 -> deep1 -> ... -> deep8 -> net0: nine levels. */
	for (int i = 0; i < 9; i++) {
		char lower[16], rel[64], target[32];

		if (i < 8)
			snprintf(lower, sizeof(lower), "deep%d", i + 1);
		else
			snprintf(lower, sizeof(lower), "net0");
		snprintf(rel, sizeof(rel), "class/net/deep%d/lower_%s", i, lower);
		snprintf(target, sizeof(target), "../%s", lower);
		if (t_fs_link(root, rel, target))
			return -1;
	}
	return 0;
}

static int t_fs_rm(const char *path, const struct stat *st, int flag,
		   struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void t_fake_sysfs_remove(const char *root)
{
	nftw(root, t_fs_rm, 16, FTW_DEPTH | FTW_PHYS);
}

#endif /* GPUBUF_TEST_FAKE_SYSFS_H */
