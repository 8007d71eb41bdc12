/* SPDX-License-Identifier: MIT */
/*
 * A device's PCIe link from sysfs, by gpubuf_device_node(3)'s name for the
 * device ("cuda:0", "hsa:1", "rdma:mlx5_0", ...): what gpubuf-info
 * --topology lists and gpubuf-bench prints beside its copy rows.
 */
#ifndef GPUBUF_TOOLS_PCILINK_H
#define GPUBUF_TOOLS_PCILINK_H

struct pci_link {
	char dir[4096];		/* the device's sysfs directory */
	char pci[20];		/* "dddd:bb:dd.f" (domains to 8 digits), "" when not a PCI function */
	char cpus[4096];	/* local_cpulist (a sysfs page at most), "" unknown */
	double gts;		/* current_link_speed, 0 unknown */
	int width;		/* current_link_width, 0 unknown */
	double max_gts;		/* max_link_speed, 0 unknown */
	int max_width;		/* max_link_width, 0 unknown */
	/*
	 * The narrowest current link between the device and its root port
	 * (its own included): an idle link trains down, and a switch's
	 * upstream link can be narrower than the device's. 0 unknown.
	 */
	double path_gbps;
	char path_pci[20];	/* whose link that is */
};

/* Whether a sysfs name is a PCI function's ("dddd:bb:dd.f"). */
int pci_is_function(const char *name);

/* The most a link of gts GT/s and width lanes carries one way, GB/s. */
double pci_link_gbps(double gts, int width);
/* 0 with what sysfs says (fields it lacks are left 0), or -errno. */
int pci_link_of(const char *device, struct pci_link *l);
/*
 * "0000:3b:00.0 PCIe 16.0 GT/s x16: at most 31.5 GB/s each way", or why
 * not ("no PCIe link in sysfs", the library's error).
 */
void pci_link_text(const char *device, char *buf, unsigned long len);

#endif
