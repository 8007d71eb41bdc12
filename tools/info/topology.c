// SPDX-License-Identifier: MIT
/*
 * gpubuf-info --topology: every device gpubuf works with (CUDA devices,
 * HSA GPU agents, Vulkan devices, DRM cards, RDMA devices), each with its
 * PCI address, the NUMA node gpubuf_device_node(3) gives it, the CPUs
 * local to it and its PCIe link's current speed and width with the GB/s
 * they carry at most, the most the link can train to, and the narrowest
 * link on its way to the root port; then the node distance table. What
 * does not fit (past 64 devices or nodes) is said, never cut silently. Like `nvidia-smi topo
 * -m`, for every kind. sysfs is GPUBUF_SYSFS_ROOT's when set, as the
 * library's (tests give a made-up tree).
 */
#include <ctype.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpubuf.h>
#include <gpubuf/tools.h>

#include "../common/drmdev.h"
#include "../common/gpuprobe.h"
#include "../common/json.h"
#include "../common/pcilink.h"
#include "topology.h"

#define TOPO_MAX_DEVICES	64
#define TOPO_MAX_NODES		64

struct topo_dev {
	char device[96];	/* gpubuf_device_node()'s name for it */
	char name[128];		/* what its runtime or driver calls it */
	char pci[20];		/* "" when it has no PCI function */
	int node_err;		/* gpubuf_device_node()'s error, 0 */
	int node;		/* GPUBUF_NUMA_ANY: no affinity */
	char cpus[4096];	/* local_cpulist, "" unknown */
	double gts;		/* current_link_speed, 0 unknown */
	int width;		/* current_link_width, 0 unknown */
	double max_gts;		/* max_link_speed, 0 unknown */
	int max_width;		/* max_link_width, 0 unknown */
	double path_gbps;	/* the narrowest link up to the root, 0 unknown */
	char path_pci[20];	/* whose */
	char why[200];		/* the library's words on node_err */
};

struct topo_node {
	int id;
	bool memory;
	int nr;			/* distances to every online node, in order */
	int dist[TOPO_MAX_NODES];
};

struct topo_report {
	struct topo_dev dev[TOPO_MAX_DEVICES];
	int nr_dev;
	int dev_left_out;	/* found past TOPO_MAX_DEVICES */
	struct topo_node node[TOPO_MAX_NODES];
	int nr_node;
	int node_left_out;	/* online past TOPO_MAX_NODES */
};

static const char *topo_root(void)
{
	const char *root = getenv("GPUBUF_SYSFS_ROOT");

	return root && *root ? root : "/sys";
}

/* A small sysfs file, its first line without the newline; 0 or -1. */
static int topo_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	char *nl;

	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	return 0;
}

/* Whether a node list ("0-1,3") holds n. */
static bool topo_list_has(const char *list, int n)
{
	const char *p = list;

	while (*p) {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;

		if (end == p)
			return false;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		if (n >= lo && n <= hi)
			return true;
		p = *end == ',' ? end + 1 : end;
	}
	return false;
}

static void topo_add(struct topo_report *r, const char *device,
		     const char *name)
{
	struct pci_link l;
	struct topo_dev *d;

	if (r->nr_dev == TOPO_MAX_DEVICES) {
		r->dev_left_out++;
		return;
	}
	d = &r->dev[r->nr_dev++];
	memset(d, 0, sizeof(*d));
	snprintf(d->device, sizeof(d->device), "%s", device);
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->node_err = gpubuf_device_node(device, &d->node);
	if (d->node_err)
		snprintf(d->why, sizeof(d->why), "%s", gpubuf_last_error());
	if (pci_link_of(device, &l))
		return;
	snprintf(d->pci, sizeof(d->pci), "%s", l.pci);
	memcpy(d->cpus, l.cpus, sizeof(d->cpus));
	d->gts = l.gts;
	d->width = l.width;
	d->max_gts = l.max_gts;
	d->max_width = l.max_width;
	d->path_gbps = l.path_gbps;
	memcpy(d->path_pci, l.path_pci, sizeof(d->path_pci));
}

static void topo_devices(struct topo_report *r)
{
	struct drm_card cards[DRMDEV_MAX];
	char dev[96], path[4096];
	struct dirent *e;
	int n = 0, i;
	DIR *dir;

	char name[128], kern[240];

	/* Each GPU's architecture, and whether libgpubuf's kernels run there. */
	if (!gpubuf_cuda_device_count(&n))
		for (i = 0; i < n; i++) {
			snprintf(dev, sizeof(dev), "cuda:%d", i);
			gpu_kernels_text("cuda", i, kern, sizeof(kern));
			snprintf(name, sizeof(name), "CUDA device%s%.*s%s",
				 kern[0] ? " (" : "", 100, kern,
				 kern[0] ? ")" : "");
			topo_add(r, dev, name);
		}
	n = 0;
	if (!gpubuf_hsa_agents(NULL, 0, &n))
		for (i = 0; i < n; i++) {
			snprintf(dev, sizeof(dev), "hsa:%d", i);
			gpu_kernels_text("hsa", i, kern, sizeof(kern));
			snprintf(name, sizeof(name), "HSA GPU agent%s%.*s%s",
				 kern[0] ? " (" : "", 100, kern,
				 kern[0] ? ")" : "");
			topo_add(r, dev, name);
		}
	for (i = 0; i < TOPO_MAX_DEVICES; i++) {
		struct gpubuf_vk_info vi;
		struct gpubuf_vk *vk;

		if (gpubuf_vk_open(i, 0, &vk))
			break;
		if (gpubuf_vk_info(vk, &vi))
			snprintf(vi.name, sizeof(vi.name), "?");
		gpubuf_vk_close(vk);
		snprintf(dev, sizeof(dev), "vulkan:%d", i);
		topo_add(r, dev, vi.name);
	}
	n = drm_card_list(cards, DRMDEV_MAX);
	for (i = 0; i < n; i++) {
		snprintf(dev, sizeof(dev), "drm:%.64s", cards[i].path);
		topo_add(r, dev, cards[i].driver);
	}
	snprintf(path, sizeof(path), "%s/class/infiniband", topo_root());
	dir = opendir(path);
	while (dir && (e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(dev, sizeof(dev), "rdma:%.64s", e->d_name);
		topo_add(r, dev, "RDMA device");
	}
	if (dir)
		closedir(dir);
}

static void topo_nodes(struct topo_report *r)
{
	char path[4096], online[1024], mem[1024], row[1024];
	const char *root = topo_root();

	snprintf(path, sizeof(path), "%s/devices/system/node/online", root);
	if (topo_line(path, online, sizeof(online)))
		return;
	snprintf(path, sizeof(path), "%s/devices/system/node/has_memory", root);
	if (topo_line(path, mem, sizeof(mem)))
		snprintf(mem, sizeof(mem), "%s", online);
	for (int id = 0; id < 1024; id++) {
		struct topo_node *n;
		char *p, *end;

		if (!topo_list_has(online, id))
			continue;
		if (r->nr_node == TOPO_MAX_NODES) {
			r->node_left_out++;
			continue;
		}
		n = &r->node[r->nr_node++];
		n->id = id;
		n->memory = topo_list_has(mem, id);
		n->nr = 0;
		snprintf(path, sizeof(path),
			 "%s/devices/system/node/node%d/distance", root, id);
		if (topo_line(path, row, sizeof(row)))
			continue;
		for (p = row; n->nr < TOPO_MAX_NODES; p = end) {
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			n->dist[n->nr++] = (int)v;
		}
	}
}

static void topo_text(const struct topo_report *r)
{
	printf("%-28s %-12s %-5s %-12s %-15s %7s  %-15s %7s  %-22s %s\n",
	       "device", "pci", "node", "local_cpus", "link", "GB/s",
	       "max link", "GB/s", "narrowest on the path", "name");
	for (int i = 0; i < r->nr_dev; i++) {
		const struct topo_dev *d = &r->dev[i];
		char node[16], link[32] = "-", gbps[16] = "-", max[32] = "-",
		     max_gbps[16] = "-", path[48] = "-";

		if (d->node_err)
			snprintf(node, sizeof(node), "?");
		else if (d->node == GPUBUF_NUMA_ANY)
			snprintf(node, sizeof(node), "any");
		else
			snprintf(node, sizeof(node), "%d", d->node);
		if (d->gts > 0 && d->width > 0) {
			snprintf(link, sizeof(link), "%.1f GT/s x%d", d->gts,
				 d->width);
			snprintf(gbps, sizeof(gbps), "%.1f",
				 pci_link_gbps(d->gts, d->width));
		}
		if (d->max_gts > 0 && d->max_width > 0) {
			snprintf(max, sizeof(max), "%.1f GT/s x%d", d->max_gts,
				 d->max_width);
			snprintf(max_gbps, sizeof(max_gbps), "%.1f",
				 pci_link_gbps(d->max_gts, d->max_width));
		}
		if (d->path_gbps > 0)
			snprintf(path, sizeof(path), "%.1f GB/s %s", d->path_gbps,
				 d->path_pci);
		printf("%-28s %-12s %-5s %-12s %-15s %7s  %-15s %7s  %-22s %s%s%s\n",
		       d->device, d->pci[0] ? d->pci : "-", node,
		       d->cpus[0] ? d->cpus : "-", link, gbps, max, max_gbps,
		       path, d->name, d->node_err ? ": " : "",
		       d->node_err ? d->why : "");
	}
	if (!r->nr_dev)
		printf("(no CUDA, HSA, Vulkan, DRM or RDMA device found)\n");
	if (r->dev_left_out)
		printf("(%d more devices not listed: %d at most)\n",
		       r->dev_left_out, TOPO_MAX_DEVICES);
	printf("\nnode distances%s\n", r->nr_node ? "" : ": none (no NUMA in sysfs)");
	if (!r->nr_node)
		return;
	printf("%-6s", "node");
	for (int i = 0; i < r->nr_node; i++)
		printf(" %5d", r->node[i].id);
	printf("  memory\n");
	for (int i = 0; i < r->nr_node; i++) {
		printf("%-6d", r->node[i].id);
		for (int k = 0; k < r->node[i].nr; k++)
			printf(" %5d", r->node[i].dist[k]);
		printf("  %s\n", r->node[i].memory ? "yes" : "no");
	}
	if (r->node_left_out)
		printf("(%d more nodes not listed: %d at most; /sys/devices/system/node has them)\n",
		       r->node_left_out, TOPO_MAX_NODES);
}

static void topo_json(const struct topo_report *r)
{
	struct json j;

	json_init(&j, stdout);
	json_obj_begin(&j, NULL);
	json_arr_begin(&j, "devices");
	for (int i = 0; i < r->nr_dev; i++) {
		const struct topo_dev *d = &r->dev[i];

		json_obj_begin(&j, NULL);
		json_str(&j, "device", d->device);
		json_str(&j, "name", d->name);
		if (d->pci[0])
			json_str(&j, "pci", d->pci);
		else
			json_null(&j, "pci");
		if (d->node_err || d->node == GPUBUF_NUMA_ANY)
			json_null(&j, "numa_node");
		else
			json_int(&j, "numa_node", d->node);
		if (d->node_err)
			json_str(&j, "error", d->why);
		if (d->cpus[0])
			json_str(&j, "local_cpus", d->cpus);
		if (d->gts > 0 && d->width > 0) {
			json_dbl(&j, "link_gt_per_s", d->gts);
			json_int(&j, "link_width", d->width);
			json_dbl(&j, "link_gb_per_s",
				 pci_link_gbps(d->gts, d->width));
		}
		if (d->max_gts > 0 && d->max_width > 0) {
			json_dbl(&j, "max_link_gt_per_s", d->max_gts);
			json_int(&j, "max_link_width", d->max_width);
			json_dbl(&j, "max_link_gb_per_s",
				 pci_link_gbps(d->max_gts, d->max_width));
		}
		if (d->path_gbps > 0) {
			json_dbl(&j, "path_gb_per_s", d->path_gbps);
			json_str(&j, "path_narrowest", d->path_pci);
		}
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_int(&j, "devices_not_listed", r->dev_left_out);
	json_arr_begin(&j, "nodes");
	for (int i = 0; i < r->nr_node; i++) {
		json_obj_begin(&j, NULL);
		json_int(&j, "node", r->node[i].id);
		json_bool(&j, "memory", r->node[i].memory);
		json_arr_begin(&j, "distances");
		for (int k = 0; k < r->node[i].nr; k++)
			json_int(&j, NULL, r->node[i].dist[k]);
		json_arr_end(&j);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_int(&j, "nodes_not_listed", r->node_left_out);
	json_obj_end(&j);
	json_finish(&j);
}

int info_topology(int json)
{
	struct topo_report *r = calloc(1, sizeof(*r));

	if (!r) {
		fprintf(stderr, "ERROR: out of memory\n");
		return 1;
	}
	topo_devices(r);
	topo_nodes(r);
	if (json)
		topo_json(r);
	else
		topo_text(r);
	free(r);
	return 0;
}
