/* SPDX-License-Identifier: MIT */
/*
 * A buffer imported from a dma-buf whose exporter maps it VM_PFNMAP, the
 * way the dma-heap system heap and many DRM drivers do: gpubuf_pinprobe.ko's
 * PINPROBE_IOC_EXPORT_PFNMAP (the QEMU guest loads it). For the tests of
 * what GPU consumers do with foreign imports. Needs tap.h.
 */
#ifndef GPUBUF_TEST_PFNMAP_IMPORT_H
#define GPUBUF_TEST_PFNMAP_IMPORT_H

#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../testmod/gpubuf_pinprobe.h"

/* A new context and the imported PFNMAP buffer of len bytes, or the skip. */
static inline int t_pfnmap_import(size_t len, struct gpubuf_ctx **ctx,
				  struct gpubuf **buf)
{
	struct pinprobe_export exp = { .len = len };
	int dev, err;

	dev = open(PINPROBE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return t_skip("no %s (gpubuf_pinprobe.ko, loaded in the QEMU guest) for a PFNMAP dma-buf",
			      PINPROBE_DEVICE_PATH);
	err = ioctl(dev, PINPROBE_IOC_EXPORT_PFNMAP, &exp) ? -errno : 0;
	close(dev);
	if (err) {
		printf("# PINPROBE_IOC_EXPORT_PFNMAP: %s\n", strerror(-err));
		return T_FAIL;
	}
	*ctx = t_open();
	err = gpubuf_import(*ctx, exp.fd, buf);
	close(exp.fd);
	if (err) {
		printf("# gpubuf_import of the PFNMAP dma-buf: %s\n",
		       strerror(-err));
		gpubuf_close(*ctx);
		return T_FAIL;
	}
	return 0;
}

#endif /* GPUBUF_TEST_PFNMAP_IMPORT_H */
