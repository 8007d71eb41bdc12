// SPDX-License-Identifier: MIT
/*
 * From a device to the NUMA node its buffers belong on: the device's sysfs
 * directory, its numa_node, and for a node without memory the nearest node
 * that has some. Every answer comes from sysfs as it is now; nothing is
 * cached, so a hot-plugged device or an onlined node is seen at once.
 *
 * GPUBUF_SYSFS_ROOT (environment, ignored in set-id programs) puts sysfs
 * somewhere else: tests give a made-up tree with the odd cases a machine
 * seldom has (memory-less nodes, devices without affinity).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/internal.h"
#include "topology/topology.h"

/* Nodes the distance table is read for: Linux's MAX_NUMNODES on x86-64. */
#define TOPO_MAX_NODES	1024

struct topo {
	const char *root;	/* sysfs */
	const char *device;	/* the caller's string, for messages */
};

static const char *topo_root(void)
{
	const char *root = secure_getenv("GPUBUF_SYSFS_ROOT");

	return root && *root ? root : "/sys";
}

/* A file into buf, NUL-terminated: bytes read, or -errno. */
static int topo_read_path(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return (int)n;
}

/* A sysfs file, by its path under the root. */
static int topo_read(const struct topo *t, const char *rel, char *buf,
		     size_t len)
{
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", t->root, rel) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	return topo_read_path(path, buf, len);
}

static bool topo_exists(const struct topo *t, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	return (size_t)snprintf(path, sizeof(path), "%s/%s", t->root, rel) <
	       sizeof(path) && stat(path, &st) == 0;
}

/* Whether a sysfs node list ("0-1,3\n") holds n. */
static bool topo_list_has(const char *list, int n)
{
	const char *p = list;

	while (*p && *p != '\n') {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;

		if (end == p)
			return false;
		if (*end == '-') {
			p = end + 1;
			hi = strtol(p, &end, 10);
			if (end == p)
				return false;
		}
		if (n >= lo && n <= hi)
			return true;
		p = *end == ',' ? end + 1 : end;
	}
	return false;
}

/*
 * Nodes with memory, by sysfs's has_memory list. A kernel without the
 * file (no NUMA) has the one node 0, with memory.
 */
static bool topo_has_memory(const struct topo *t, int node)
{
	char list[4096];

	if (topo_read(t, "devices/system/node/has_memory", list,
		      sizeof(list)) < 0)
		return node == 0;
	return topo_list_has(list, node);
}

/*
 * The node with memory nearest node, by node's row of the distance table
 * (one entry per online node, in node order); the lowest-numbered of
 * equals. GPUBUF_NUMA_ANY when no node has memory by that table.
 */
static int topo_nearest_memory(const struct topo *t, int node)
{
	char rel[64], online[4096], row[8192];
	int best = GPUBUF_NUMA_ANY;
	long best_d = LONG_MAX;
	const char *p;
	int id = -1;

	snprintf(rel, sizeof(rel), "devices/system/node/node%d/distance", node);
	if (topo_read(t, "devices/system/node/online", online,
		      sizeof(online)) < 0 ||
	    topo_read(t, rel, row, sizeof(row)) < 0)
		return GPUBUF_NUMA_ANY;
	for (p = row; *p && *p != '\n';) {
		char *end;
		long d = strtol(p, &end, 10);

		if (end == p)
			break;
		/* The next online node: the k-th entry is the k-th of them. */
		while (++id < TOPO_MAX_NODES && !topo_list_has(online, id))
			;
		if (id >= TOPO_MAX_NODES)
			break;
		if (d < best_d && topo_has_memory(t, id)) {
			best_d = d;
			best = id;
		}
		p = end;
		while (*p == ' ')
			p++;
	}
	return best;
}

/*
 * The node of the device whose sysfs directory is rel: its numa_node, or
 * GPUBUF_NUMA_ANY where it says -1 or neither it nor a parent device has
 * one. A device without the attribute (a virtio device, a DRM card of
 * one, a software RDMA device) takes its parent's, as the kernel's
 * dev_to_node() does. A node without memory becomes the nearest with
 * memory.
 */
static int topo_dir_node(const struct topo *t, const char *rel, int *node)
{
	char root[PATH_MAX], dir[PATH_MAX], path[PATH_MAX + 16], val[32];
	char *end, *slash;
	long n;
	int err;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", t->root, rel) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	/* A link to no device (vgem's card, a bare rxe): no affinity. */
	if (!realpath(t->root, root) || !realpath(path, dir)) {
		*node = GPUBUF_NUMA_ANY;
		return 0;
	}
	for (;;) {
		snprintf(path, sizeof(path), "%s/numa_node", dir);
		err = topo_read_path(path, val, sizeof(val));
		if (err != -ENOENT)
			break;
		slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) <= strlen(root)) {
			*node = GPUBUF_NUMA_ANY;
			return 0;
		}
		*slash = '\0';
	}
	if (err < 0) {
		gpubuf_error_set("%s: cannot read %s: %s", t->device, path,
				 strerror(-err));
		return err;
	}
	n = strtol(val, &end, 10);
	if (end == val || n < -1 || n >= TOPO_MAX_NODES) {
		gpubuf_error_set("%s: %s holds \"%.16s\", not a node",
				 t->device, path, val);
		return -EIO;
	}
	if (n < 0 || topo_has_memory(t, (int)n))
		*node = (int)n;
	else
		*node = topo_nearest_memory(t, (int)n);
	return 0;
}

/*
 * "dddd:bb:dd.f" or "bb:dd.f", any case, to "dddd:bb:dd.f" lower case. The
 * domain is 4 hex digits, or up to 8 without a leading zero, as Linux
 * names them ("%04x" of a 32-bit domain: VMD's start at 10000).
 */
static int topo_pci_parse(const char *s, char out[GPUBUF_PCI_ADDRESS_LEN])
{
	unsigned int dom = 0, bus, dev, fn;
	int n = 0, len = (int)strlen(s);
	size_t dom_digits = strcspn(s, ":");

	for (const char *p = s; *p; p++)
		if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
			return -EINVAL;
	if (dom_digits > 8 || (dom_digits > 4 && s[0] == '0'))
		return -EINVAL;
	if (sscanf(s, "%8x:%2x:%2x.%1x%n", &dom, &bus, &dev, &fn, &n) != 4 ||
	    n != len || dom_digits < 4) {
		dom = 0;
		n = 0;
		if (sscanf(s, "%2x:%2x.%1x%n", &bus, &dev, &fn, &n) != 3 ||
		    n != len)
			return -EINVAL;
	}
	if (dev > 0x1f || fn > 7)
		return -EINVAL;
	snprintf(out, GPUBUF_PCI_ADDRESS_LEN, "%04x:%02x:%02x.%x", dom, bus,
		 dev, fn);
	return 0;
}

/*
 * Each kind of device to its sysfs directory, relative to the root, in
 * rel; "" for a device that has none (no PCI address: no affinity).
 */
static int topo_pci_dir(const struct topo *t, const char *addr, char *rel,
			size_t len)
{
	char pci[GPUBUF_PCI_ADDRESS_LEN];

	if (topo_pci_parse(addr, pci)) {
		gpubuf_error_set("%s: \"%s\" is not a PCI address (dddd:bb:dd.f)",
				 t->device, addr);
		return -EINVAL;
	}
	snprintf(rel, len, "bus/pci/devices/%s", pci);
	if (!topo_exists(t, rel)) {
		gpubuf_error_set("%s: no PCI device %s in %s/bus/pci/devices",
				 t->device, pci, t->root);
		return -ENODEV;
	}
	return 0;
}

/* A runtime's device by index: its PCI address, then as "pci:". */
static int topo_runtime_dir(const struct topo *t, const char *arg,
			    int (*address)(int, char *, size_t), char *rel,
			    size_t len)
{
	char pci[GPUBUF_PCI_ADDRESS_LEN], *end;
	long index;
	int err;

	errno = 0;
	index = strtol(arg, &end, 10);
	if (!isdigit((unsigned char)*arg) || *end || errno || index > INT_MAX) {
		gpubuf_error_set("%s: \"%s\" is not a device index", t->device,
				 arg);
		return -EINVAL;
	}
	err = address((int)index, pci, sizeof(pci));
	if (err == -ENOENT) {
		/* No PCI address (a CPU device): no affinity to keep. */
		rel[0] = '\0';
		return 0;
	}
	return err ? err : topo_pci_dir(t, pci, rel, len);
}

/* A DRM device node (or /proc/self/fd/N): sysfs by its device number. */
static int topo_drm_dir(const struct topo *t, const char *path, char *rel,
			size_t len)
{
	struct stat st;

	if (stat(path, &st)) {
		int err = -errno;

		gpubuf_error_set("%s: %s", t->device, strerror(-err));
		return err == -ENOENT ? -ENODEV : err;
	}
	if (!S_ISCHR(st.st_mode)) {
		gpubuf_error_set("%s: not a character device", t->device);
		return -ENODEV;
	}
	snprintf(rel, len, "dev/char/%u:%u", major(st.st_rdev),
		 minor(st.st_rdev));
	if (!topo_exists(t, rel)) {
		gpubuf_error_set("%s: device %u:%u is not in %s/dev/char",
				 t->device, major(st.st_rdev),
				 minor(st.st_rdev), t->root);
		return -ENODEV;
	}
	snprintf(rel, len, "dev/char/%u:%u/device", major(st.st_rdev),
		 minor(st.st_rdev));
	return 0;
}

/* An ibverbs device name (what ibv_get_device_name() gives). */
/* Upper devices (VLAN, bond, bridge, macvlan) stacked at most this deep. */
#define TOPO_NET_DEPTH	8

/*
 * A network device's sysfs directory with a device behind it: its own, or
 * that of the first of its lower devices (the lower_* links a VLAN, a bond
 * or a bridge has, in name order) that has one. 0, or -ENOENT.
 */
static int topo_net_dir(const struct topo *t, const char *ndev, char *rel,
			size_t len, int depth)
{
	char dir[PATH_MAX], best[64] = "";
	struct dirent *e;
	DIR *d;

	if (!*ndev || strchr(ndev, '/') || strlen(ndev) > 32)
		return -ENOENT;
	snprintf(rel, len, "class/net/%s/device", ndev);
	if (topo_exists(t, rel))
		return 0;
	if (depth >= TOPO_NET_DEPTH)
		return -ENOENT;
	snprintf(dir, sizeof(dir), "%s/class/net/%s", t->root, ndev);
	d = opendir(dir);
	if (!d)
		return -ENOENT;
	/* Every lower in name order until one has a device. */
	for (;;) {
		char next[64] = "";

		rewinddir(d);
		while ((e = readdir(d))) {
			const char *lower = e->d_name + 6;

			if (strncmp(e->d_name, "lower_", 6) || strlen(lower) > 32)
				continue;
			if (strcmp(lower, best) > 0 &&
			    (!next[0] || strcmp(lower, next) < 0))
				snprintf(next, sizeof(next), "%s", lower);
		}
		if (!next[0])
			break;
		snprintf(best, sizeof(best), "%s", next);
		if (!topo_net_dir(t, best, rel, len, depth + 1)) {
			closedir(d);
			return 0;
		}
	}
	closedir(d);
	return -ENOENT;
}

static int topo_rdma_dir(const struct topo *t, const char *name, char *rel,
			 size_t len)
{
	if (!*name || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, "..") || strlen(name) > 64) {
		gpubuf_error_set("%s: \"%s\" is not an RDMA device name",
				 t->device, name);
		return -EINVAL;
	}
	snprintf(rel, len, "class/infiniband/%s", name);
	if (!topo_exists(t, rel)) {
		gpubuf_error_set("%s: no RDMA device %s in %s/class/infiniband",
				 t->device, name, t->root);
		return -ENODEV;
	}
	snprintf(rel, len, "class/infiniband/%s/device", name);
	if (!topo_exists(t, rel)) {
		/*
		 * A software RDMA device (rxe, siw) has no parent device: it
		 * is as near as the network device of its port 1, or, for a
		 * VLAN, bond or bridge, as that device's NIC.
		 */
		char ndev[64], path[160], *nl;

		snprintf(path, sizeof(path),
			 "class/infiniband/%s/ports/1/gid_attrs/ndevs/0", name);
		if (topo_read(t, path, ndev, sizeof(ndev)) > 0) {
			nl = strchr(ndev, '\n');
			if (nl)
				*nl = '\0';
			if (topo_net_dir(t, ndev, rel, len, 0))
				snprintf(rel, len, "class/infiniband/%s/device",
					 name);
		}
	}
	return 0;
}

static int topo_device_dir(const struct topo *t, char *rel, size_t len)
{
	const char *device = t->device, *arg = strchr(device, ':');

	if (!arg) {
		gpubuf_error_set("\"%s\" names no kind of device (pci:, cuda:, hsa:, vulkan:, drm:, rdma:)",
				 device);
		return -EINVAL;
	}
	arg++;
	if (!strncmp(device, "pci:", 4))
		return topo_pci_dir(t, arg, rel, len);
	if (!strncmp(device, "cuda:", 5))
		return topo_runtime_dir(t, arg, gpubuf_cuda_pci_address, rel,
					len);
	if (!strncmp(device, "hsa:", 4))
		return topo_runtime_dir(t, arg, gpubuf_hsa_pci_address, rel, len);
	if (!strncmp(device, "vulkan:", 7))
		return topo_runtime_dir(t, arg, gpubuf_vk_pci_address, rel, len);
	if (!strncmp(device, "drm:", 4))
		return topo_drm_dir(t, arg, rel, len);
	if (!strncmp(device, "rdma:", 5))
		return topo_rdma_dir(t, arg, rel, len);
	gpubuf_error_set("\"%s\": unknown kind of device (pci:, cuda:, hsa:, vulkan:, drm:, rdma:)",
			 device);
	return -EINVAL;
}

GPUBUF_EXPORT int gpubuf_device_node(const char *device, int *node)
{
	GPUBUF_KEEP_ERRNO;
	struct topo t = { topo_root(), device };
	char rel[PATH_MAX];
	int err;

	gpubuf_error_clear();
	if (!device || !node)
		return -EINVAL;
	err = topo_device_dir(&t, rel, sizeof(rel));
	if (err)
		return err;
	if (!rel[0]) {
		*node = GPUBUF_NUMA_ANY;
		return 0;
	}
	return topo_dir_node(&t, rel, node);
}

/*
 * For gpubuf's tools (gpubuf/tools.h): the device's sysfs directory,
 * resolved, under GPUBUF_SYSFS_ROOT if set; -ENOENT with "" for a device
 * without one.
 */
GPUBUF_EXPORT int gpubuf_device_sysfs(const char *device, char *path,
				      size_t len)
{
	GPUBUF_KEEP_ERRNO;
	struct topo t = { topo_root(), device };
	char rel[PATH_MAX], full[PATH_MAX], real[PATH_MAX];
	int err;

	gpubuf_error_clear();
	if (!device || !path || !len)
		return -EINVAL;
	path[0] = '\0';
	err = topo_device_dir(&t, rel, sizeof(rel));
	if (err)
		return err;
	if (!rel[0] ||
	    (size_t)snprintf(full, sizeof(full), "%s/%s", t.root, rel) >=
	    sizeof(full) || !realpath(full, real))
		return -ENOENT;
	if (strlen(real) >= len)
		return -ENAMETOOLONG;
	strcpy(path, real);
	return 0;
}

GPUBUF_EXPORT int gpubuf_alloc_opts_near(struct gpubuf_alloc_opts *opts,
					 const char *device)
{
	GPUBUF_KEEP_ERRNO;
	int node, err;

	if (!opts) {
		gpubuf_error_clear();
		return -EINVAL;
	}
	err = gpubuf_device_node(device, &node);
	if (!err)
		opts->numa_node = node;
	return err;
}
