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
 * One buffer in one DRM file, made by this process: a hold on the buffer,
 * under buf->lock. The kernel keeps one GEM handle per dma-buf and DRM
 * file, without a reference per import, so the handle is counted here
 * for everyone in the process who holds it (issue 23, defect 3): imports
 * from gpubuf_drm_import() (drm.c) and mappings from gpubuf_amdgpu_map()
 * (amdgpu.c, which maps that handle). It is closed when both counts are
 * 0. The dup keeps the DRM file (and so the handle) alive even if the
 * caller closes drm_fd first.
 */
struct gpubuf_drm_rec {
	struct gpubuf_hold hold;
	int fd;			/* our F_DUPFD_CLOEXEC of the caller's fd */
	int user_fd;		/* the caller's number, identity without kcmp */
	dev_t rdev;
	pid_t pid;		/* the process that made it */
	uint32_t handle;	/* GEM handle in the file of fd */
	unsigned int count;	/* gpubuf_drm_import()s not yet released */
	unsigned int map_count;	/* gpubuf_amdgpu_map()s not yet unmapped */
	/*
	 * amdgpu.c, while map_count > 0: the deduplicated device whose VA
	 * manager lent the range, the range, mapped in the file of fd, and
	 * how to undo that at the last unref.
	 */
	struct amdgpu_device *amd_dev;
	struct amdgpu_va *amd_va_range;
	uint64_t va;
	uint64_t va_size;
	void (*unmap)(const struct gpubuf_drm_api *api,
		      struct gpubuf_drm_rec *rec);
};

/*
 * The record for the DRM file behind drm_fd (st its stat) made by this
 * process, or NULL. Caller holds buf->lock.
 */
struct gpubuf_drm_rec *gpubuf_drm_find(struct gpubuf *buf, int drm_fd,
				       const struct stat *st);

/*
 * The record for the DRM file behind drm_fd, found, or made with the PRIME
 * import of buf's dma-buf and attached (both counts 0: the caller takes
 * its count, or puts it back). Caller holds buf->lock. 0 or -errno.
 */
int gpubuf_drm_rec_get(const struct gpubuf_drm_api *api, struct gpubuf *buf,
		       int drm_fd, const struct stat *st,
		       struct gpubuf_drm_rec **recp);

/*
 * After a count was dropped: if nobody holds the handle any more, close it
 * and free the record (0, or the GEM_CLOSE error; the record is gone
 * either way). Caller holds buf->lock.
 */
int gpubuf_drm_rec_put(const struct gpubuf_drm_api *api, struct gpubuf *buf,
		       struct gpubuf_drm_rec *rec);

#endif /* GPUBUF_HAVE_DRM */

#endif /* GPUBUF_DRM_LIB_H */
