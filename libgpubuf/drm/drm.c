// SPDX-License-Identifier: MIT
/*
 * DRM PRIME import of buffers into GEM handles, through libdrm loaded with
 * dlopen (nothing links against it), and the per-buffer records that
 * count imports per DRM file.
 *
 * The kernel keeps one GEM handle per dma-buf and DRM file description: a
 * second PRIME import into the same file returns the same handle without
 * a reference of its own, so one GEM_CLOSE would end both. Hence the
 * counting here, per (buffer, DRM file), for GEM imports and amdgpu
 * mappings alike (drm_lib.h); the file is told apart from other files of
 * the same device with kcmp(KCMP_FILE), not by fd number.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "drm/drm_lib.h"
#include "core/internal.h"

/* The character-device major of every DRM node, fixed in Linux. */
#define GPUBUF_DRM_MAJOR	226

int gpubuf_drm_check_fd(int drm_fd, struct stat *st)
{
	if (drm_fd < 0 || fstat(drm_fd, st) < 0) {
		gpubuf_error_set("drm_fd %d is not an open file descriptor",
				 drm_fd);
		return -EBADF;
	}
	/* No ioctl on anything else: its number could mean something there. */
	if (!S_ISCHR(st->st_mode) || major(st->st_rdev) != GPUBUF_DRM_MAJOR) {
		gpubuf_error_set("drm_fd %d is not a DRM device (/dev/dri/*)",
				 drm_fd);
		return -ENOTTY;
	}
	return 0;
}

int gpubuf_drm_check_args(struct gpubuf *buf, int drm_fd, struct stat *st)
{
	/* First, so the answer for a memfd buffer does not depend on drm_fd. */
	if (buf->fd < 0) {
		gpubuf_error_set("a memfd-backend buffer has no dma-buf for DRM to import");
		return -EOPNOTSUPP;
	}
	return gpubuf_drm_check_fd(drm_fd, st);
}

/*
 * What a build without DRM (or amdgpu) support answers: argument errors
 * first, as a full build reports them, then -EOPNOTSUPP naming what was
 * missing at build time.
 */
int gpubuf_drm_refuse(struct gpubuf *buf, bool out_ok, int drm_fd,
		      const char *missing)
{
	struct stat st;
	int err;

	if (!buf || !out_ok)
		return -EINVAL;
	err = gpubuf_drm_check_args(buf, drm_fd, &st);
	if (err)
		return err;
	gpubuf_error_set("libgpubuf was built without %s", missing);
	return -EOPNOTSUPP;
}

#ifdef GPUBUF_HAVE_DRM

#include <dlfcn.h>
#include <linux/kcmp.h>

static struct {
	pthread_once_t once;
	int err;
	char msg[200];
	struct gpubuf_drm_api api;
} gpubuf_drm_loaded = { .once = PTHREAD_ONCE_INIT };

static void gpubuf_drm_load(void)
{
	struct gpubuf_drm_api *api = &gpubuf_drm_loaded.api;
	const char *missing = NULL;
	void *lib;

	/* Never closed: records may call it until the process exits. */
	lib = dlopen("libdrm.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		gpubuf_drm_loaded.err = -ENODEV;
		snprintf(gpubuf_drm_loaded.msg, sizeof(gpubuf_drm_loaded.msg),
			 "no libdrm: %s", gpubuf_dlerror());
		return;
	}
#define GPUBUF_DRM_SYM(field, name)					\
	api->field = (__typeof__(api->field))dlsym(lib, #name);		\
	if (!api->field && !missing)					\
		missing = #name;
	GPUBUF_DRM_SYM(PrimeFDToHandle, drmPrimeFDToHandle)
	GPUBUF_DRM_SYM(GetVersion, drmGetVersion)
	GPUBUF_DRM_SYM(FreeVersion, drmFreeVersion)
	GPUBUF_DRM_SYM(Ioctl, drmIoctl)
#undef GPUBUF_DRM_SYM
	/* libdrm 2.4.109 and later; GEM_CLOSE through drmIoctl before. */
	api->CloseBufferHandle = (__typeof__(api->CloseBufferHandle))
		dlsym(lib, "drmCloseBufferHandle");
	if (missing) {
		gpubuf_drm_loaded.err = -ENODEV;
		snprintf(gpubuf_drm_loaded.msg, sizeof(gpubuf_drm_loaded.msg),
			 "libdrm.so.2 lacks %s", missing);
	}
}

int gpubuf_drm_api_get(const struct gpubuf_drm_api **api)
{
	pthread_once(&gpubuf_drm_loaded.once, gpubuf_drm_load);
	if (gpubuf_drm_loaded.err) {
		gpubuf_error_set("%s", gpubuf_drm_loaded.msg);
		return gpubuf_drm_loaded.err;
	}
	*api = &gpubuf_drm_loaded.api;
	return 0;
}

int gpubuf_drm_gem_close(const struct gpubuf_drm_api *api, int fd,
			 uint32_t handle)
{
	struct drm_gem_close c = { .handle = handle };
	int r;

	errno = 0;
	if (api->CloseBufferHandle)
		r = api->CloseBufferHandle(fd, handle);
	else
		r = api->Ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c);
	if (!r)
		return 0;
	/* The only refusal of a valid file: no such handle (any more). */
	if (errno == EINVAL) {
		gpubuf_error_set("GEM handle %u was already closed by someone else",
				 handle);
		return -ENOENT;
	}
	if (!errno)
		errno = EIO;
	gpubuf_error_set("GEM_CLOSE of handle %u: %m", handle);
	return -errno;
}

/* Whether drm_fd and the record's dup are one open file description. */
static bool gpubuf_drm_same_file(int drm_fd, const struct gpubuf_drm_rec *rec)
{
	pid_t pid = getpid();
	long r = syscall(SYS_kcmp, pid, pid, KCMP_FILE, drm_fd, rec->fd);

	if (r >= 0)
		return r == 0;
	/* A kernel without kcmp (CONFIG_KCMP=n): the caller's fd number. */
	return drm_fd == rec->user_fd;
}

static const struct gpubuf_hold_ops gpubuf_drm_hold_ops;

struct gpubuf_drm_rec *gpubuf_drm_find(struct gpubuf *buf, int drm_fd,
				       const struct stat *st)
{
	struct gpubuf_hold *h = NULL;
	pid_t pid = getpid();

	while ((h = gpubuf_hold_next(buf, h, &gpubuf_drm_hold_ops))) {
		struct gpubuf_drm_rec *r =
			gpubuf_container_of(h, struct gpubuf_drm_rec, hold);

		if (r->pid == pid && r->rdev == st->st_rdev &&
		    gpubuf_drm_same_file(drm_fd, r))
			return r;
	}
	return NULL;
}

static void gpubuf_drm_rec_free(struct gpubuf *buf, struct gpubuf_drm_rec *rec)
{
	gpubuf_hold_del(buf, &rec->hold);
	close(rec->fd);
	free(rec);
}

/* A new record: our dup of drm_fd and the PRIME import into its file. */
static int gpubuf_drm_rec_new(const struct gpubuf_drm_api *api,
			      struct gpubuf *buf, int drm_fd,
			      const struct stat *st,
			      struct gpubuf_drm_rec **recp)
{
	struct gpubuf_drm_rec *rec = calloc(1, sizeof(*rec));
	int err;

	if (!rec)
		return -ENOMEM;
	rec->fd = fcntl(drm_fd, F_DUPFD_CLOEXEC, 0);
	if (rec->fd < 0) {
		err = errno == EMFILE || errno == ENFILE ? -EMFILE : -errno;
		gpubuf_error_set("cannot duplicate drm_fd %d: %m", drm_fd);
		free(rec);
		return err;
	}
	rec->user_fd = drm_fd;
	rec->rdev = st->st_rdev;
	rec->pid = getpid();
	errno = 0;
	if (api->PrimeFDToHandle(rec->fd, buf->fd, &rec->handle)) {
		/* A driver without PRIME import says ENOSYS (6.1) or EOPNOTSUPP. */
		err = errno == ENOSYS ? -EOPNOTSUPP : errno ? -errno : -EIO;
		errno = -err;
		gpubuf_error_set("drmPrimeFDToHandle: %m");
		gpubuf_drm_rec_free(buf, rec);
		return err;
	}
	*recp = rec;
	return 0;
}

int gpubuf_drm_rec_get(const struct gpubuf_drm_api *api, struct gpubuf *buf,
		       int drm_fd, const struct stat *st,
		       struct gpubuf_drm_rec **recp)
{
	int err;

	*recp = gpubuf_drm_find(buf, drm_fd, st);
	if (*recp)
		return 0;
	err = gpubuf_drm_rec_new(api, buf, drm_fd, st, recp);
	if (!err)
		gpubuf_hold_add(buf, &(*recp)->hold, &gpubuf_drm_hold_ops);
	return err;
}

int gpubuf_drm_rec_put(const struct gpubuf_drm_api *api, struct gpubuf *buf,
		       struct gpubuf_drm_rec *rec)
{
	int err;

	if (rec->count || rec->map_count)
		return 0;
	err = gpubuf_drm_gem_close(api, rec->fd, rec->handle);
	/* Nothing to retry: a handle the close refused is gone. */
	gpubuf_drm_rec_free(buf, rec);
	return err;
}

/*
 * At the last unref: a mapping still there is undone, then the GEM handle
 * still open is closed.
 */
static void gpubuf_drm_hold_release(struct gpubuf *buf,
				    struct gpubuf_hold *hold)
{
	struct gpubuf_drm_rec *rec =
		gpubuf_container_of(hold, struct gpubuf_drm_rec, hold);
	const struct gpubuf_drm_api *api;

	/* A fork() child shares the parent's DRM files: hands off. */
	if (rec->pid == getpid() && !gpubuf_drm_api_get(&api)) {
		if (rec->unmap)
			rec->unmap(api, rec);
		gpubuf_drm_gem_close(api, rec->fd, rec->handle);
	}
	gpubuf_drm_rec_free(buf, rec);
}

static const struct gpubuf_hold_ops gpubuf_drm_hold_ops = {
	.release = gpubuf_drm_hold_release,
};

GPUBUF_EXPORT int gpubuf_drm_import(struct gpubuf *buf, int drm_fd,
				    uint32_t *gem_handle)
{
	GPUBUF_KEEP_ERRNO;
	const struct gpubuf_drm_api *api;
	struct gpubuf_drm_rec *rec;
	struct stat st;
	int err;

	gpubuf_error_clear();
	if (!buf || !gem_handle)
		return -EINVAL;
	err = gpubuf_drm_check_args(buf, drm_fd, &st);
	if (!err)
		err = gpubuf_drm_api_get(&api);
	if (err)
		return err;
	pthread_mutex_lock(&buf->lock);
	err = gpubuf_drm_rec_get(api, buf, drm_fd, &st, &rec);
	if (!err && rec->count == UINT_MAX) {
		gpubuf_error_set("too many DRM imports of one buffer");
		err = -EOVERFLOW;
	} else if (!err) {
		rec->count++;
		*gem_handle = rec->handle;
	}
	pthread_mutex_unlock(&buf->lock);
	return err;
}

GPUBUF_EXPORT int gpubuf_drm_release(struct gpubuf *buf, int drm_fd)
{
	GPUBUF_KEEP_ERRNO;
	const struct gpubuf_drm_api *api;
	struct gpubuf_drm_rec *rec;
	struct stat st;
	int err;

	gpubuf_error_clear();
	if (!buf)
		return -EINVAL;
	err = gpubuf_drm_check_args(buf, drm_fd, &st);
	if (err)
		return err;
	pthread_mutex_lock(&buf->lock);
	rec = gpubuf_drm_find(buf, drm_fd, &st);
	if (!rec || !rec->count) {
		gpubuf_error_set("buffer is not imported into the DRM file of fd %d",
				 drm_fd);
		err = -ENXIO;
	} else {
		rec->count--;
		/* A record exists, so libdrm was loaded: this cannot fail. */
		err = gpubuf_drm_api_get(&api);
		if (!err)
			err = gpubuf_drm_rec_put(api, buf, rec);
	}
	pthread_mutex_unlock(&buf->lock);
	return err;
}

#else /* !GPUBUF_HAVE_DRM */

#define GPUBUF_NO_DRM "DRM support (no xf86drm.h at build time)"

/* Argument errors are reported as in a DRM build, then the lack of DRM. */
GPUBUF_EXPORT int gpubuf_drm_import(struct gpubuf *buf, int drm_fd,
				    uint32_t *gem_handle)
{
	GPUBUF_KEEP_ERRNO;

	gpubuf_error_clear();
	return gpubuf_drm_refuse(buf, gem_handle, drm_fd, GPUBUF_NO_DRM);
}

GPUBUF_EXPORT int gpubuf_drm_release(struct gpubuf *buf, int drm_fd)
{
	GPUBUF_KEEP_ERRNO;

	gpubuf_error_clear();
	return gpubuf_drm_refuse(buf, true, drm_fd, GPUBUF_NO_DRM);
}

GPUBUF_EXPORT int gpubuf_amdgpu_map(struct gpubuf *buf, int drm_fd,
				    uint64_t *gpu_va)
{
	GPUBUF_KEEP_ERRNO;

	gpubuf_error_clear();
	return gpubuf_drm_refuse(buf, gpu_va, drm_fd, GPUBUF_NO_DRM);
}

GPUBUF_EXPORT int gpubuf_amdgpu_unmap(struct gpubuf *buf, int drm_fd)
{
	return gpubuf_drm_release(buf, drm_fd);
}

#endif /* GPUBUF_HAVE_DRM */
