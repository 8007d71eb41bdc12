// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf fuzzer: vgem as a second driver. Its dumb buffers give dma-bufs
 * of another exporter; PRIME import of gpubuf fds attaches and DMA-maps
 * them, re-export hands back the gpubuf dma-buf, mmap through vgem goes
 * to gpubuf's mmap by way of dma_buf_mmap(), and GEM close detaches.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <drm.h>
#include <drm_mode.h>

#include "fuzz.h"

/* The vgem card, opened non-blocking so a stray read() cannot hang. */
int fz_vgem_open(struct fz_thread *t)
{
	char path[32], name[16];
	int i, fd;

	for (i = 0; i < 16; i++) {
		struct drm_version v = { .name = name,
					 .name_len = sizeof(name) - 1 };

		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = fz_sys(t, SC_VGEM, open(path, O_RDWR | O_CLOEXEC |
						   O_NONBLOCK));
		if (fd < 0)
			continue;
		memset(name, 0, sizeof(name));
		if (!fz_sys(t, SC_VGEM, ioctl(fd, DRM_IOCTL_VERSION, &v)) &&
		    !strcmp(name, "vgem"))
			return fd;
		fz_sys(t, SC_CLOSE, close(fd));
	}
	return -1;
}

static int fz_handle_held(struct fz_thread *t, uint32_t handle)
{
	int i;

	for (i = 0; i < t->nhandles; i++)
		if (t->handles[i].handle == handle)
			return 1;
	return 0;
}

static void fz_handle_add(struct fz_thread *t, uint32_t handle, uint64_t size,
			  unsigned int buf_id)
{
	/* PRIME hands out one handle per dma-buf and file. */
	if (fz_handle_held(t, handle))
		return;
	if (t->nhandles == FZ_MAX_HANDLES) {
		struct drm_gem_close c = { .handle = handle };

		fz_sys(t, SC_VGEM, ioctl(t->vgem, DRM_IOCTL_GEM_CLOSE, &c));
		return;
	}
	t->handles[t->nhandles].handle = handle;
	t->handles[t->nhandles].size = size;
	t->handles[t->nhandles++].buf_id = buf_id;
}

/* Map an imported buffer through vgem: dma_buf_mmap() into gpubuf. */
static void fz_vgem_map(struct fz_thread *t, struct fz_handle *h)
{
	struct drm_mode_map_dumb m = { .handle = h->handle };
	struct fz_buf shadow = { .id = h->buf_id, .shared = 1 };
	long p;

	if (!h->size || fz_sys(t, SC_VGEM, ioctl(t->vgem,
					DRM_IOCTL_MODE_MAP_DUMB, &m)))
		return;
	p = fz_sys(t, SC_MMAP, (long)mmap(NULL, h->size, PROT_READ | PROT_WRITE,
					  MAP_SHARED, t->vgem, m.offset));
	if (p < 0 && p > -4096)
		return;
	if (fz_map_add(t, (char *)p, h->size, PROT_READ | PROT_WRITE, &shadow))
		fz_sys(t, SC_MUNMAP, munmap((void *)p, h->size));
}

void fz_op_vgem(struct fz_thread *t)
{
	struct drm_prime_handle p = { 0 };
	struct drm_gem_close c = { 0 };
	struct fz_buf *b;
	int i;

	if (t->vgem < 0)
		return;
	switch (fz_below(t, 6)) {
	case 0: {	/* a vgem buffer: another exporter's dma-bufs */
		static const uint32_t dims[] = { 0, UINT32_MAX, 1U << 31, 1 << 16 };
		struct drm_mode_create_dumb d = {
			/* Nasty, but never a large object: vgem's are shmem. */
			.width = fz_one_in(t, 8) ? dims[fz_below(t, 4)] :
				 1 + fz_below(t, 64),
			.height = 1 + fz_below(t, 16),
			.bpp = fz_one_in(t, 8) ? fz_below(t, 256) : 32,
		};

		if (!fz_sys(t, SC_VGEM, ioctl(t->vgem,
					DRM_IOCTL_MODE_CREATE_DUMB, &d)))
			fz_handle_add(t, d.handle, 0, 0);
		break;
	}
	case 1: case 2:	/* import a gpubuf (or anything) into vgem */
		b = t->nbufs && fz_below(t, 4) ?
		    &t->bufs[fz_below(t, t->nbufs)] : NULL;
		p.fd = b ? b->fd : fz_any_fd(t);
		if (fz_sys(t, SC_VGEM, ioctl(t->vgem,
					DRM_IOCTL_PRIME_FD_TO_HANDLE, &p))) {
			if (b && errno != ENOMEM)
				fz_violation(t, "vgem import of a gpubuf failed: %s",
					     strerror(errno));
			break;
		}
		/*
		 * Someone else's buffer is let go at once: re-exported, it
		 * would reach threads its owner does not know of.
		 */
		if (b) {
			fz_handle_add(t, p.handle, b->size, b->id);
		} else if (!fz_handle_held(t, p.handle)) {
			c.handle = p.handle;
			fz_sys(t, SC_VGEM, ioctl(t->vgem, DRM_IOCTL_GEM_CLOSE, &c));
		}
		break;
	case 3:	/* export: vgem's own, or a re-export of a gpubuf import */
		if (!t->nhandles)
			break;
		i = fz_below(t, t->nhandles);
		p.handle = t->handles[i].handle;
		/* A gpubuf import re-exports as that gpubuf's dma-buf. */
		if (t->handles[i].buf_id)
			fz_buf_mark_shared(t, t->handles[i].buf_id);
		p.flags = fz_one_in(t, 8) ? (uint32_t)fz_rand(t) :
			  DRM_CLOEXEC | DRM_RDWR;
		if (!fz_sys(t, SC_VGEM, ioctl(t->vgem,
					DRM_IOCTL_PRIME_HANDLE_TO_FD, &p)))
			fz_other_add(t, p.fd);
		break;
	case 4:
		if (t->nhandles)
			fz_vgem_map(t, &t->handles[fz_below(t, t->nhandles)]);
		break;
	default:	/* GEM close, of a handle held or of nonsense */
		if (!t->nhandles || fz_one_in(t, 6)) {
			c.handle = fz_one_in(t, 2) ? 0 : (uint32_t)fz_rand(t);
			fz_sys(t, SC_VGEM, ioctl(t->vgem, DRM_IOCTL_GEM_CLOSE, &c));
			break;
		}
		i = fz_below(t, t->nhandles);
		c.handle = t->handles[i].handle;
		if (fz_sys(t, SC_VGEM, ioctl(t->vgem, DRM_IOCTL_GEM_CLOSE, &c)))
			fz_violation(t, "GEM close of a held handle failed");
		t->handles[i] = t->handles[--t->nhandles];
		break;
	}
}
