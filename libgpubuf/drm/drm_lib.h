/* SPDX-License-Identifier: MIT */
/*
 * drm/, libgpubuf's DRM consumer: PRIME imports of a buffer into any DRM
 * device file (drm.c) and GPU virtual-address mappings on amdgpu
 * (amdgpu.c, built on drm.c's records). It owns libdrm and libdrm_amdgpu,
 * loaded with dlopen, and the per-buffer records, attached to buffers as
 * core holds. Types come from libdrm-dev's headers at build time; nothing
 * links against libdrm.
 */
#ifndef GPUBUF_DRM_LIB_H
#define GPUBUF_DRM_LIB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "core/internal.h"

/*
 * drm_fd must be an open DRM device file: 0 with its stat, -EBADF (negative
 * or not open) or -ENOTTY (not a DRM character device).
 */
int gpubuf_drm_check_fd(int drm_fd, struct stat *st);

/*
 * Checks common to every entry point after its NULL checks, the same in
 * builds with and without DRM support: a buffer without a dma-buf
 * (-EOPNOTSUPP), then drm_fd. 0 with st filled.
 */
int gpubuf_drm_check_args(struct gpubuf *buf, int drm_fd, struct stat *st);
/* A build without DRM or amdgpu support: the argument errors, then -EOPNOTSUPP. */
int gpubuf_drm_refuse(struct gpubuf *buf, bool out_ok, int drm_fd,
		      const char *missing);

#ifdef GPUBUF_HAVE_DRM

#include <xf86drm.h>

/*
 * libdrm.so.2 entry points. CloseBufferHandle may be NULL (before 2.4.109),
 * and is spelled out because older libdrm headers do not declare it.
 */
struct gpubuf_drm_api {
	__typeof__(drmPrimeFDToHandle) *PrimeFDToHandle;
	int (*CloseBufferHandle)(int fd, uint32_t handle);
	__typeof__(drmGetVersion) *GetVersion;
	__typeof__(drmFreeVersion) *FreeVersion;
	__typeof__(drmIoctl) *Ioctl;
};

/* Loaded once per process: 0, or -ENODEV with gpubuf_last_error() set. */
int gpubuf_drm_api_get(const struct gpubuf_drm_api **api);

/* Close a GEM handle in the DRM file behind fd; 0 or a negative errno. */
int gpubuf_drm_gem_close(const struct gpubuf_drm_api *api, int fd,
			 uint32_t handle);

/*
 * One buffer in one DRM file, counted: a hold on the buffer, under
 * buf->lock, whose ops say what it is (drm.c: a GEM handle from
 * gpubuf_drm_import(); amdgpu.c: a GPU mapping from gpubuf_amdgpu_map()).
 * The dup keeps the DRM file (and so the handle) alive even if the caller
 * closes drm_fd first.
 */
struct gpubuf_drm_rec {
	struct gpubuf_hold hold;
	int fd;			/* our F_DUPFD_CLOEXEC of the caller's fd */
	int user_fd;		/* the caller's number, identity without kcmp */
	dev_t rdev;
	pid_t pid;		/* the process that made it */
	unsigned int count;
	uint32_t handle;	/* GEM handle in the file of fd, 0: none */
	/*
	 * amdgpu.c: the deduplicated device whose VA manager lent the range,
	 * and the range, mapped in the file of fd.
	 */
	struct amdgpu_device *amd_dev;
	struct amdgpu_va *amd_va_range;
	uint64_t va;
	uint64_t va_size;
};

/*
 * The record with ops for the DRM file behind drm_fd (st its stat) made by
 * this process, or NULL. Caller holds buf->lock.
 */
struct gpubuf_drm_rec *gpubuf_drm_find(struct gpubuf *buf,
				       const struct gpubuf_hold_ops *ops,
				       int drm_fd, const struct stat *st);

/* A new record with its dup of drm_fd, count 0, not attached; NULL: errno. */
struct gpubuf_drm_rec *gpubuf_drm_rec_new(int drm_fd, const struct stat *st,
					  int *err);
/* Detach (if attached), close the dup and free. */
void gpubuf_drm_rec_free(struct gpubuf *buf, struct gpubuf_drm_rec *rec);

#endif /* GPUBUF_HAVE_DRM */

#endif /* GPUBUF_DRM_LIB_H */
