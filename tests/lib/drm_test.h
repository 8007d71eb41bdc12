/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the DRM test programs (drm.c, amdgpu.c) for the QEMU guest:
 * vgem files, the module's live-buffer count, a dma-buf's importer
 * attachments (debugfs bufinfo) and what a GEM handle names.
 */
#ifndef GPUBUF_TEST_DRM_TEST_H
#define GPUBUF_TEST_DRM_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#if __has_include(<drm/drm.h>)
#include <drm/drm.h>
#else
#include <libdrm/drm.h>
#endif

#include "tap.h"

#define T_SIZE		(1u << 20)
#define T_BUFINFO	"/sys/kernel/debug/dma_buf/bufinfo"
#define T_LIVE		"/sys/class/misc/gpubuf/live_buffers"

/* A new open file of the first vgem card, or -1. */
__attribute__((unused))
static int t_open_vgem(void)
{
	for (int i = 0; i < 16; i++) {
		struct drm_version v;
		char path[32], name[64];
		int fd;

		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&v, 0, sizeof(v));
		memset(name, 0, sizeof(name));
		v.name = name;
		v.name_len = sizeof(name) - 1;
		if (ioctl(fd, DRM_IOCTL_VERSION, &v) == 0 &&
		    !strcmp(name, "vgem"))
			return fd;
		close(fd);
	}
	printf("# no vgem card in /dev/dri\n");
	return -1;
}

/* The module's count of live buffers, or -1. */
__attribute__((unused))
static long t_live(void)
{
	FILE *f = fopen(T_LIVE, "r");
	long v = -1;

	if (f && fscanf(f, "%ld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

__attribute__((unused))
static unsigned long t_ino(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : (unsigned long)st.st_ino;
}

/*
 * Importer attachments of the dma-buf behind fd, from debugfs (mounted
 * here if the guest has not yet), or -1 if it cannot be read.
 */
__attribute__((unused))
static int t_attachments(int dmabuf_fd)
{
	unsigned long want = t_ino(dmabuf_fd), ino;
	char line[512], f[5][64];
	int n = -1, in = 0;
	FILE *fp;

	if (access(T_BUFINFO, R_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	fp = fopen(T_BUFINFO, "r");
	if (!fp) {
		printf("# cannot read %s\n", T_BUFINFO);
		return -1;
	}
	/* "size flags mode count exp_name ino name", then its attachments. */
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%63s %63s %63s %63s %63s %lu", f[0], f[1],
			   f[2], f[3], f[4], &ino) == 6 && line[0] != '\t')
			in = ino == want;
		else if (in && sscanf(line, "Total %d devices attached", &n) == 1)
			break;
	}
	fclose(fp);
	return n;
}

/*
 * 1 if handle names our buffer in the DRM file of card (exporting it hands
 * back the same dma-buf), 0 if the handle does not exist, -1 otherwise.
 */
__attribute__((unused))
static int t_handle_is(int card, uint32_t handle, const struct gpubuf *buf)
{
	struct drm_prime_handle p = { .handle = handle, .flags = DRM_CLOEXEC };
	int same;

	if (ioctl(card, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p))
		return errno == ENOENT ? 0 : -1;
	same = t_ino(p.fd) == t_ino(gpubuf_fd(buf));
	close(p.fd);
	return same ? 1 : -1;
}

__attribute__((unused))
static struct gpubuf *t_buf(struct gpubuf_ctx *ctx)
{
	struct gpubuf *buf = NULL;

	if (gpubuf_alloc(ctx, T_SIZE, NULL, &buf))
		return NULL;
	memset(gpubuf_ptr(buf), 0x5a, T_SIZE);
	return buf;
}

#endif /* GPUBUF_TEST_DRM_TEST_H */
