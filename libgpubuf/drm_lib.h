/* SPDX-License-Identifier: MIT */
/*
 * Private to libgpubuf: libdrm and libdrm_amdgpu as loaded by dlopen, and
 * the per-buffer records of DRM imports. Types come from libdrm-dev's
 * headers at build time; nothing links against libdrm.
 */
#ifndef GPUBUF_DRM_LIB_H
#define GPUBUF_DRM_LIB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct gpubuf;

/*
 * Close every DRM handle and amdgpu mapping a buffer still holds; from its
 * last gpubuf_unref(). Records a fork() child inherited are only forgotten.
 */
void gpubuf_drm_release_all(struct gpubuf *buf);

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

enum gpubuf_drm_kind {
	GPUBUF_DRM_GEM,		/* gpubuf_drm_import() */
	GPUBUF_DRM_AMDGPU,	/* gpubuf_amdgpu_map() */
};

/*
 * One buffer in one DRM file, counted. Kept in struct gpubuf's drm list
 * under buf->lock. The dup keeps the DRM file (and so the handle) alive
 * even if the caller closes drm_fd first.
 */
struct gpubuf_drm_rec {
	struct gpubuf_drm_rec *next;
	enum gpubuf_drm_kind kind;
	int fd;			/* our F_DUPFD_CLOEXEC of the caller's fd */
	int user_fd;		/* the caller's number, identity without kcmp */
	dev_t rdev;
	pid_t pid;		/* the process that made it */
	unsigned int count;
	uint32_t handle;	/* GEM handle (GPUBUF_DRM_GEM) */
	/* GPUBUF_DRM_AMDGPU: libdrm_amdgpu's objects, undone in reverse. */
	struct amdgpu_device *amd_dev;
	struct amdgpu_bo *amd_bo;
	struct amdgpu_va *amd_va_range;
	uint64_t va;
	uint64_t va_size;
};

/*
 * The record of kind for the DRM file behind drm_fd (st its stat) made by
 * this process, or NULL. Caller holds buf->lock.
 */
struct gpubuf_drm_rec *gpubuf_drm_find(struct gpubuf *buf,
				       enum gpubuf_drm_kind kind, int drm_fd,
				       const struct stat *st);

/* A new record with its dup of drm_fd, count 0, not linked; NULL: errno. */
struct gpubuf_drm_rec *gpubuf_drm_rec_new(enum gpubuf_drm_kind kind,
					  int drm_fd, const struct stat *st,
					  int *err);
void gpubuf_drm_link(struct gpubuf *buf, struct gpubuf_drm_rec *rec);
/* Unlink (if linked), close the dup and free. */
void gpubuf_drm_rec_free(struct gpubuf *buf, struct gpubuf_drm_rec *rec);

/* amdgpu.c: undo one amdgpu record's mapping (force: ignore failures). */
int gpubuf_amdgpu_undo(struct gpubuf_drm_rec *rec, int force);

#endif /* GPUBUF_HAVE_DRM */

#endif /* GPUBUF_DRM_LIB_H */
