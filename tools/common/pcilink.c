// SPDX-License-Identifier: MIT
/* A device's PCIe link from sysfs; see pcilink.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpubuf.h>
#include <gpubuf/tools.h>

#include "pcilink.h"

/* 8b/10b up to 5 GT/s, 128b/130b from 8 GT/s, 242/256 FLITs at 64 GT/s. */
double pci_link_gbps(double gts, int width)
{
	double enc = gts < 8 ? 0.8 : gts < 64 ? 128.0 / 130 : 242.0 / 256;

	return gts * width * enc / 8;
}

/* A small sysfs file's first line without the newline; 0 or -1. */
static int pci_line(const char *dir, const char *name, char *buf, size_t len)
{
	char path[4200];
	FILE *f;
	char *nl;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
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

int pci_is_function(const char *name)
{
	size_t n = strlen(name);

	/* The domain 4 to 8 digits (VMD's 10000:...). */
	return n >= 12 && n <= 16 && name[n - 8] == ':' && name[n - 5] == ':' &&
	       name[n - 2] == '.';
}

/* GT/s and lanes of one of a function's links; 0 and 0 unknown. */
static void pci_speed(const char *dir, const char *which, double *gts,
		      int *width)
{
	char name[64], val[64];

	/* "16.0 GT/s PCIe", "8 GT/s", "Unknown" (strtod gives 0) */
	snprintf(name, sizeof(name), "%s_link_speed", which);
	if (!pci_line(dir, name, val, sizeof(val)))
		*gts = strtod(val, NULL);
	snprintf(name, sizeof(name), "%s_link_width", which);
	if (!pci_line(dir, name, val, sizeof(val)))
		*width = atoi(val);
}

int pci_link_of(const char *device, struct pci_link *l)
{
	char up[4096], *slash;
	const char *base;
	int err;

	memset(l, 0, sizeof(*l));
	err = gpubuf_device_sysfs(device, l->dir, sizeof(l->dir));
	if (err)
		return err;
	base = strrchr(l->dir, '/') ? strrchr(l->dir, '/') + 1 : l->dir;
	if (pci_is_function(base))
		snprintf(l->pci, sizeof(l->pci), "%.19s", base);
	if (pci_line(l->dir, "local_cpulist", l->cpus, sizeof(l->cpus)))
		l->cpus[0] = '\0';
	pci_speed(l->dir, "current", &l->gts, &l->width);
	pci_speed(l->dir, "max", &l->max_gts, &l->max_width);
	/* Up the resolved path, bridge by bridge, to the root complex. */
	snprintf(up, sizeof(up), "%s", l->dir);
	for (;;) {
		double gts = 0;
		int width = 0;

		base = strrchr(up, '/') ? strrchr(up, '/') + 1 : up;
		if (!pci_is_function(base))
			break;
		pci_speed(up, "current", &gts, &width);
		if (gts > 0 && width > 0 &&
		    (!l->path_gbps || pci_link_gbps(gts, width) < l->path_gbps)) {
			l->path_gbps = pci_link_gbps(gts, width);
			snprintf(l->path_pci, sizeof(l->path_pci), "%.19s", base);
		}
		slash = strrchr(up, '/');
		if (!slash || slash == up)
			break;
		*slash = '\0';
	}
	return 0;
}

void pci_link_text(const char *device, char *buf, unsigned long len)
{
	struct pci_link l;
	int err = pci_link_of(device, &l);

	if (err == -ENOENT)
		snprintf(buf, len, "no PCI device behind it");
	else if (err)
		snprintf(buf, len, "%s", gpubuf_last_error());
	else if (l.gts <= 0 || l.width <= 0)
		snprintf(buf, len, "%s: no PCIe link speed in sysfs",
			 l.pci[0] ? l.pci : l.dir);
	else
		snprintf(buf, len, "%s PCIe %.1f GT/s x%d: at most %.1f GB/s each way",
			 l.pci[0] ? l.pci : "?", l.gts, l.width,
			 pci_link_gbps(l.gts, l.width));
}
