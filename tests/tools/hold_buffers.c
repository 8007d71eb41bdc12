// SPDX-License-Identifier: MIT
/*
 * A process holding gpubuf memory, for gpubuf-info --processes in the
 * guest (tests/tools/guest.sh). "hold-buffers fds": 1 MiB (asked for on
 * node 0) and 3 MiB allocated through one open /dev/gpubuf, the first
 * kept by its fd, the second by a mapping only. "hold-buffers pinned": 2 MiB allocated,
 * pinned by the test pin probe as an RDMA MR would pin it, then unmapped
 * and closed: released, its pages held by the pin, owned by no process.
 * "hold-buffers foreign": no gpubuf memory at all, but two vgem dma-bufs
 * that their owner named "gpubuf" and "gpubuf x" (DMA_BUF_SET_NAME), kept
 * by mappings alone, which look like gpubuf's in /proc/PID/maps (exit 3
 * without vgem). Each writes "ready" to stdout, then waits to be killed.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/gpubuf.h>
#if __has_include(<drm.h>)
#include <drm.h>
#include <drm_mode.h>
#define HOLD_HAVE_DRM 1
#endif

#include "../testmod/gpubuf_pinprobe.h"

static int alloc(int dev, uint64_t size, int node)
{
	struct gpubuf_alloc req;

	memset(&req, 0, sizeof(req));
	req.size = size;
	req.numa_node = node;
	req.fd_flags = O_RDWR | O_CLOEXEC;
	return ioctl(dev, GPUBUF_IOC_ALLOC, &req) ? -1 : req.fd;
}

#ifdef HOLD_HAVE_DRM
static int vgem_card(void)
{
	for (int i = 0; i < 16; i++) {
		struct drm_version v;
		char path[32], name[16] = "";
		int fd;

		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&v, 0, sizeof(v));
		v.name = name;
		v.name_len = sizeof(name) - 1;
		if (!ioctl(fd, DRM_IOCTL_VERSION, &v) && !strcmp(name, "vgem"))
			return fd;
		close(fd);
	}
	return -1;
}

/* A vgem dma-buf named @name, mapped, its fd closed; 0 or -1. */
static int foreign(int card, const char *name)
{
	struct drm_mode_create_dumb dumb = { .height = 64, .width = 64,
					     .bpp = 32 };
	struct drm_prime_handle prime = { .flags = DRM_CLOEXEC | DRM_RDWR };
	void *p;

	if (ioctl(card, DRM_IOCTL_MODE_CREATE_DUMB, &dumb))
		return -1;
	prime.handle = dumb.handle;
	if (ioctl(card, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime) ||
	    ioctl(prime.fd, DMA_BUF_SET_NAME, name))
		return -1;
	p = mmap(NULL, dumb.size, PROT_READ, MAP_SHARED, prime.fd, 0);
	close(prime.fd);
	return p == MAP_FAILED ? -1 : 0;
}
#endif

int main(int argc, char **argv)
{
	int dev = open("/dev/gpubuf", O_RDWR | O_CLOEXEC), a, b;
	void *p;

	if (argc != 2 || dev < 0)
		return 2;
	if (!strcmp(argv[1], "fds")) {
		a = alloc(dev, 1 << 20, 0);
		b = alloc(dev, 3 << 20, GPUBUF_NUMA_ANY);
		if (a < 0 || b < 0)
			return 1;
		p = mmap(NULL, 3 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, b, 0);
		if (p == MAP_FAILED)
			return 1;
		close(b);
	} else if (!strcmp(argv[1], "pinned")) {
		struct pinprobe_req req = { .len = 2 << 20,
					    .op = PINPROBE_OP_PIN_HOLD };
		int probe = open(PINPROBE_DEVICE_PATH, O_RDWR | O_CLOEXEC);

		a = alloc(dev, 2 << 20, GPUBUF_NUMA_ANY);
		if (a < 0 || probe < 0)
			return 1;
		p = mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, a, 0);
		if (p == MAP_FAILED)
			return 1;
		req.addr = (uintptr_t)p;
		if (ioctl(probe, PINPROBE_IOC_RUN, &req))
			return 1;
		munmap(p, 2 << 20);
		close(a);
	} else if (!strcmp(argv[1], "foreign")) {
#ifdef HOLD_HAVE_DRM
		int card = vgem_card();

		close(dev);
		if (card < 0)
			return 3;
		if (foreign(card, "gpubuf") || foreign(card, "gpubuf x"))
			return 1;
#else
		return 3;
#endif
	} else {
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
