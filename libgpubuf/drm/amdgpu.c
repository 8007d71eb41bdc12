// SPDX-License-Identifier: MIT
/*
 * amdgpu: a buffer's dma-buf imported into the caller's amdgpu DRM file and
 * mapped at a GPU virtual address in that file's VM, so a client without
 * Mesa or ROCm gets an address its GPU work can use. libdrm_amdgpu, loaded
 * with dlopen, only lends its VA manager (see gpubuf_amdgpu_do()).
 *
 * Compiled against Debian 12's libdrm 2.4.114 headers; no AMD GPU has been
 * reachable: tests/lib/amdgpu.c runs it on vgem against stand-ins of
 * libdrm and libdrm_amdgpu (tests/amdgpustub). A mapping maps the GEM
 * handle of drm.c's record for the (buffer, DRM file), counted there
 * beside the GEM imports that share the handle (drm_lib.h).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drm/drm_lib.h"
#include "core/internal.h"

#if defined(GPUBUF_HAVE_DRM) && defined(GPUBUF_HAVE_AMDGPU)

#include <dlfcn.h>
#include <amdgpu.h>
#include <amdgpu_drm.h>

/* GPU VA alignment: 2 MiB lets the VM use its large page fragments. */
#define GPUBUF_AMDGPU_VA_ALIGN	(2ull << 20)

static struct {
	pthread_once_t once;
	int err;
	char msg[200];
	__typeof__(amdgpu_device_initialize) *device_initialize;
	__typeof__(amdgpu_device_deinitialize) *device_deinitialize;
	__typeof__(amdgpu_va_range_alloc) *va_range_alloc;
	__typeof__(amdgpu_va_range_free) *va_range_free;
} amd = { .once = PTHREAD_ONCE_INIT };

static void gpubuf_amdgpu_load(void)
{
	const char *missing = NULL;
	void *lib;

	/* Never closed, like libdrm: mappings outlive any one call. */
	lib = dlopen("libdrm_amdgpu.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		amd.err = -ENODEV;
		snprintf(amd.msg, sizeof(amd.msg), "no libdrm_amdgpu: %s",
			 gpubuf_dlerror());
		return;
	}
#define GPUBUF_AMD_SYM(field)						\
	amd.field = (__typeof__(amd.field))dlsym(lib, "amdgpu_" #field); \
	if (!amd.field && !missing)					\
		missing = "amdgpu_" #field;
	GPUBUF_AMD_SYM(device_initialize)
	GPUBUF_AMD_SYM(device_deinitialize)
	GPUBUF_AMD_SYM(va_range_alloc)
	GPUBUF_AMD_SYM(va_range_free)
#undef GPUBUF_AMD_SYM
	if (missing) {
		amd.err = -ENODEV;
		snprintf(amd.msg, sizeof(amd.msg), "libdrm_amdgpu.so.1 lacks %s",
			 missing);
	}
}

static int gpubuf_amdgpu_get(void)
{
	pthread_once(&amd.once, gpubuf_amdgpu_load);
	if (amd.err)
		gpubuf_error_set("%s", amd.msg);
	return amd.err;
}

/*
 * libdrm_amdgpu returns negative errno values, except that a failed
 * drmIoctl() or drmPrimeFDToHandle() inside it comes back as their -1
 * with errno set (libdrm 2.4.114: amdgpu_device_initialize's
 * DRM_IOCTL_GET_CLIENT, amdgpu_bo_import's PRIME import), which is not
 * EPERM. Callers clear errno first, so a -1 without errno is -EPERM.
 */
static int gpubuf_amdgpu_fail(int r, const char *what)
{
	if (r == -1 && errno > 0)
		r = -errno;
	else if (r >= 0)
		r = -EIO;
	errno = -r;
	gpubuf_error_set("%s: %m", what);
	return r;
}

/* The kernel driver behind drm_fd must be amdgpu. */
static int gpubuf_amdgpu_check_driver(const struct gpubuf_drm_api *api,
				      int drm_fd)
{
	drmVersionPtr v = api->GetVersion(drm_fd);
	int err = 0;

	if (!v) {
		gpubuf_error_set("drmGetVersion failed on drm_fd %d", drm_fd);
		return -ENODEV;
	}
	if (!v->name || strcmp(v->name, "amdgpu")) {
		gpubuf_error_set("DRM driver of fd %d is \"%s\", not amdgpu",
				 drm_fd, v->name ? v->name : "");
		err = -ENODEV;
	}
	api->FreeVersion(v);
	return err;
}

/* One GEM_VA ioctl on the record's file, for its whole range: 0 or -errno. */
static int gpubuf_amdgpu_va_op(const struct gpubuf_drm_api *api,
			       const struct gpubuf_drm_rec *rec, uint32_t op,
			       uint64_t flags)
{
	struct drm_amdgpu_gem_va va = {
		.handle = rec->handle, .operation = op, .flags = flags,
		.va_address = rec->va, .map_size = rec->va_size,
	};

	errno = 0;
	if (!api->Ioctl(rec->fd, DRM_IOCTL_AMDGPU_GEM_VA, &va))
		return 0;
	return errno ? -errno : -EIO;
}

/* Undo one record's mapping (force: ignore failures). */
static int gpubuf_amdgpu_undo(const struct gpubuf_drm_api *api,
			      struct gpubuf_drm_rec *rec, bool force)
{
	int r;

	/* Records exist only once the library loaded. */
	if (rec->amd_va_range) {
		r = gpubuf_amdgpu_va_op(api, rec, AMDGPU_VA_OP_UNMAP, 0);
		if (r && !force)
			return gpubuf_amdgpu_fail(r, "GEM_VA(UNMAP)");
		amd.va_range_free(rec->amd_va_range);
		rec->amd_va_range = NULL;
	}
	if (rec->amd_dev)
		amd.device_deinitialize(rec->amd_dev);
	rec->amd_dev = NULL;
	return 0;
}

/*
 * Reserve a VA range and map the record's GEM handle there: undone in
 * reverse on failure.
 *
 * GPU VMs are per DRM file: the amdgpu driver gives each open file its
 * own, and a GEM handle or a GEM_VA mapping lives in the file it was made
 * in. libdrm_amdgpu keeps one device per GPU and process, with a dup of
 * the first fd it was given, and imports and maps through that fd: were
 * drm_fd a second open, or had Mesa made the device first, the address
 * would be in another file's VM and fault in the caller's submissions
 * (issue 23, defect 2). So the PRIME import (drm.c's, shared with
 * gpubuf_drm_import()) and the GEM_VA ioctl go to our dup of drm_fd, on
 * every libdrm version. (libdrm 2.4.121's
 * amdgpu_device_initialize2(fd, false) gives a device on drm_fd's file,
 * but its buffer objects own GEM handles, closing them when freed, and its
 * fresh VA manager knows no other mapping in that file: not used.)
 *
 * The range comes from the VA manager of libdrm_amdgpu's deduplicated
 * device for the GPU: the VA layout is the GPU's, the same in every file,
 * and that manager is shared by our mappings in every file and by the
 * process's other libdrm_amdgpu users (Mesa's radeonsi, callers of
 * amdgpu_device_initialize), so none of them is handed the same range.
 * Nothing is mapped through that device. An allocator it does not know
 * (the caller's own VA manager, fixed addresses) can still pick an
 * overlapping range; the kernel then refuses the second mapping with
 * -EINVAL (amdgpu_vm_bo_map), it never aliases.
 */
static int gpubuf_amdgpu_do(const struct gpubuf_drm_api *api,
			    struct gpubuf *buf, struct gpubuf_drm_rec *rec)
{
	uint64_t flags = AMDGPU_VM_PAGE_READABLE;
	uint32_t major, minor;
	amdgpu_va_handle range;
	int r;

	errno = 0;
	r = amd.device_initialize(rec->fd, &major, &minor, &rec->amd_dev);
	if (r) {
		rec->amd_dev = NULL;
		r = gpubuf_amdgpu_fail(r, "amdgpu_device_initialize");
		goto err_undo;
	}
	rec->va_size = buf->size;
	errno = 0;
	r = amd.va_range_alloc(rec->amd_dev, amdgpu_gpu_va_range_general,
			       rec->va_size, GPUBUF_AMDGPU_VA_ALIGN, 0, &rec->va,
			       &range, 0);
	if (r) {
		r = gpubuf_amdgpu_fail(r, "amdgpu_va_range_alloc");
		goto err_undo;
	}
	/* The GPU gets the CPU mapping's access: read-only stays so. */
	if (!(buf->flags & GPUBUF_BUF_READONLY))
		flags |= AMDGPU_VM_PAGE_WRITEABLE;
	r = gpubuf_amdgpu_va_op(api, rec, AMDGPU_VA_OP_MAP, flags);
	if (r) {
		r = gpubuf_amdgpu_fail(r, "GEM_VA(MAP)");
		amd.va_range_free(range);
		goto err_undo;
	}
	rec->amd_va_range = range;
	return 0;

err_undo:
	gpubuf_amdgpu_undo(api, rec, true);
	return r;
}

/* At the last unref (drm.c), before the GEM handle is closed. */
static void gpubuf_amdgpu_rec_unmap(const struct gpubuf_drm_api *api,
				    struct gpubuf_drm_rec *rec)
{
	gpubuf_amdgpu_undo(api, rec, true);
}

GPUBUF_EXPORT int gpubuf_amdgpu_map(struct gpubuf *buf, int drm_fd,
				    uint64_t *gpu_va)
{
	GPUBUF_KEEP_ERRNO;
	const struct gpubuf_drm_api *api;
	struct gpubuf_drm_rec *rec;
	struct stat st;
	int err;

	gpubuf_error_clear();
	if (!buf || !gpu_va)
		return -EINVAL;
	err = gpubuf_drm_check_args(buf, drm_fd, &st);
	if (!err)
		err = gpubuf_drm_api_get(&api);
	if (!err)
		err = gpubuf_amdgpu_check_driver(api, drm_fd);
	if (!err)
		err = gpubuf_amdgpu_get();
	if (err)
		return err;
	pthread_mutex_lock(&buf->lock);
	err = gpubuf_drm_rec_get(api, buf, drm_fd, &st, &rec);
	if (err)
		goto out;
	if (rec->map_count == UINT_MAX) {
		gpubuf_error_set("too many amdgpu mappings of one buffer");
		err = -EOVERFLOW;
	} else if (rec->map_count) {
		rec->map_count++;
		*gpu_va = rec->va;
	} else {
		err = gpubuf_amdgpu_do(api, buf, rec);
		if (err) {
			/* Closes the handle unless an import still holds it. */
			gpubuf_drm_rec_put(api, buf, rec);
			goto out;
		}
		rec->map_count = 1;
		rec->unmap = gpubuf_amdgpu_rec_unmap;
		*gpu_va = rec->va;
	}
out:
	pthread_mutex_unlock(&buf->lock);
	return err;
}

GPUBUF_EXPORT int gpubuf_amdgpu_unmap(struct gpubuf *buf, int drm_fd)
{
	GPUBUF_KEEP_ERRNO;
	const struct gpubuf_drm_api *api = NULL;
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
	if (!rec || !rec->map_count) {
		gpubuf_error_set("buffer is not mapped on the amdgpu DRM file of fd %d",
				 drm_fd);
		err = -ENXIO;
	} else if (rec->map_count > 1) {
		rec->map_count--;
	} else {
		/* A record exists, so libdrm was loaded: this cannot fail. */
		err = gpubuf_drm_api_get(&api);
		/* A failed UNMAP keeps the mapping and its count: retry later. */
		if (!err)
			err = gpubuf_amdgpu_undo(api, rec, false);
		if (!err) {
			rec->map_count = 0;
			rec->unmap = NULL;
			/* Closes the handle unless an import still holds it. */
			err = gpubuf_drm_rec_put(api, buf, rec);
		}
	}
	pthread_mutex_unlock(&buf->lock);
	return err;
}

#elif defined(GPUBUF_HAVE_DRM)

#define GPUBUF_NO_AMDGPU "amdgpu support (no libdrm/amdgpu.h at build time)"

GPUBUF_EXPORT int gpubuf_amdgpu_map(struct gpubuf *buf, int drm_fd,
				    uint64_t *gpu_va)
{
	GPUBUF_KEEP_ERRNO;

	gpubuf_error_clear();
	return gpubuf_drm_refuse(buf, gpu_va, drm_fd, GPUBUF_NO_AMDGPU);
}

GPUBUF_EXPORT int gpubuf_amdgpu_unmap(struct gpubuf *buf, int drm_fd)
{
	GPUBUF_KEEP_ERRNO;

	gpubuf_error_clear();
	return gpubuf_drm_refuse(buf, true, drm_fd, GPUBUF_NO_AMDGPU);
}

#endif
