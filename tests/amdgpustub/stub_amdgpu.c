// SPDX-License-Identifier: MIT
/*
 * The stand-in libdrm_amdgpu.so.1 (amdgpu_stub.h says what the stand-ins
 * are): what libgpubuf calls, behaving as libdrm_amdgpu does where it
 * matters to a caller, cited by file:function of libdrm 2.4.114 (Debian
 * 12) unless said otherwise. Its libdrm calls go to libdrm.so.2, which in
 * the tests is the libdrm stand-in.
 *
 * With -DGPUBUF_STUB_INITIALIZE2 it also has amdgpu_device_initialize2
 * (libdrm 2.4.121), which libgpubuf may find with dlsym.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xf86drm.h>
#include <amdgpu.h>
#include <amdgpu_drm.h>

#include "amdgpu_stub.h"

#define STUB_EXPORT __attribute__((visibility("default")))

/*
 * The VA window the kernel reports (linux 6.1, amdgpu_kms.c,
 * AMDGPU_INFO_DEV_INFO: virtual_address_offset = AMDGPU_VA_RESERVED_SIZE,
 * alignment = the page size) and that amdgpu_device_initialize gives its
 * VA manager (amdgpu_device.c: amdgpu_device_initialize ->
 * amdgpu_vamgr_init). Only the general range, low addresses.
 */
#define STUB_VA_START	(2ull << 20)
#define STUB_VA_END	(1ull << 47)
#define STUB_VA_ALIGN	4096ull

/* A VA manager: the reserved ranges, sorted by address. */
struct stub_range {
	struct stub_range *next;
	uint64_t start, size;
};

struct amdgpu_device {
	struct amdgpu_device *next;	/* on stub_devs if deduplicated */
	int refcount;
	int fd;				/* our dup of the first fd */
	char *primary;			/* the GPU, for deduplication */
	struct stub_range *ranges;
	struct amdgpu_bo *bos;		/* one per GEM handle */
};

struct amdgpu_bo {
	struct amdgpu_bo *next;
	struct amdgpu_device *dev;
	int refcount;
	uint32_t handle;
	uint64_t size;
};

struct amdgpu_va {
	struct amdgpu_device *dev;
	uint64_t address, size;
};

/* One lock for everything, as libdrm's dev_mutex guards its device list. */
static pthread_mutex_t stub_lock = PTHREAD_MUTEX_INITIALIZER;
static struct amdgpu_device *stub_devs;
static int stub_ndevs;

/*
 * GPUBUF_AMDGPU_STUB_FAIL="fn:errno" names fn: it fails with -1 and errno
 * set, as the real function does when the drmIoctl or drmPrimeFDToHandle
 * inside it fails (e.g. amdgpu_device.c: amdgpu_get_auth's
 * DRM_IOCTL_GET_CLIENT, amdgpu_bo.c: amdgpu_bo_import's
 * drmPrimeFDToHandle, both returned as they are).
 */
static bool stub_fail(const char *fn)
{
	const char *s = getenv(GPUBUF_AMDGPU_STUB_FAIL);
	size_t n = strlen(fn);

	if (!s || strncmp(s, fn, n) || s[n] != ':')
		return false;
	errno = atoi(s + n + 1);
	return true;
}

static void stub_device_free(struct amdgpu_device *dev)
{
	for (struct amdgpu_device **pp = &stub_devs; *pp; pp = &(*pp)->next) {
		if (*pp == dev) {
			*pp = dev->next;
			break;
		}
	}
	while (dev->ranges) {
		struct stub_range *r = dev->ranges;

		dev->ranges = r->next;
		free(r);
	}
	close(dev->fd);
	free(dev->primary);
	free(dev);
	stub_ndevs--;
}

/*
 * amdgpu_device.c: amdgpu_device_initialize: with deduplication, a device
 * already made for the same GPU (fd_compare: the same primary node name)
 * is returned with one more reference, whichever fd it was made from;
 * else a new one keeps an F_DUPFD_CLOEXEC of fd, after checking that the
 * DRM version is 3.x (-EBADF otherwise).
 */
static int stub_initialize(int fd, bool dedup, uint32_t *major,
			   uint32_t *minor, amdgpu_device_handle *out)
{
	struct amdgpu_device *dev;
	drmVersionPtr v;
	char *primary;
	int major_found, r = 0;

	*out = NULL;
	if (stub_fail("amdgpu_device_initialize"))
		return -1;
	primary = drmGetPrimaryDeviceNameFromFd(fd);
	if (!primary)
		return -EBADF;
	pthread_mutex_lock(&stub_lock);
	for (dev = dedup ? stub_devs : NULL; dev; dev = dev->next)
		if (!strcmp(dev->primary, primary))
			break;
	if (dev) {
		dev->refcount++;
		free(primary);
		goto out;
	}
	v = drmGetVersion(fd);
	major_found = v ? v->version_major : 0;
	if (v)
		drmFreeVersion(v);
	if (major_found != 3) {
		r = -EBADF;
		goto err;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		r = -ENOMEM;
		goto err;
	}
	dev->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dev->fd < 0) {
		r = -errno;
		free(dev);
		goto err;
	}
	dev->refcount = 1;
	dev->primary = primary;
	if (dedup) {
		dev->next = stub_devs;
		stub_devs = dev;
	}
	stub_ndevs++;
out:
	*major = 3;
	*minor = 49;
	*out = dev;
	pthread_mutex_unlock(&stub_lock);
	return 0;
err:
	free(primary);
	pthread_mutex_unlock(&stub_lock);
	return r;
}

STUB_EXPORT int amdgpu_device_initialize(int fd, uint32_t *major,
					 uint32_t *minor,
					 amdgpu_device_handle *out)
{
	return stub_initialize(fd, true, major, minor, out);
}

#ifdef GPUBUF_STUB_INITIALIZE2
/* libdrm 2.4.121 amdgpu_device.c: the same, deduplicating only if asked. */
STUB_EXPORT int amdgpu_device_initialize2(int fd, bool deduplicate_device,
					  uint32_t *major, uint32_t *minor,
					  amdgpu_device_handle *out)
{
	return stub_initialize(fd, deduplicate_device, major, minor, out);
}
#endif

/* amdgpu_device.c: amdgpu_device_deinitialize: drop a reference; 0. */
STUB_EXPORT int amdgpu_device_deinitialize(amdgpu_device_handle dev)
{
	pthread_mutex_lock(&stub_lock);
	if (--dev->refcount == 0)
		stub_device_free(dev);
	pthread_mutex_unlock(&stub_lock);
	return 0;
}

STUB_EXPORT int amdgpu_device_get_fd(amdgpu_device_handle dev)
{
	return dev->fd;
}

/*
 * amdgpu_bo.c: amdgpu_bo_import of a dma-buf: drmPrimeFDToHandle on the
 * device's own fd (its -1 is returned as it is, errno set), the size from
 * lseek, and one amdgpu_bo per handle, counted. Other handle types are
 * not needed here (-EINVAL).
 */
STUB_EXPORT int amdgpu_bo_import(amdgpu_device_handle dev,
				 enum amdgpu_bo_handle_type type,
				 uint32_t shared_handle,
				 struct amdgpu_bo_import_result *output)
{
	struct amdgpu_bo *bo;
	uint32_t handle;
	off_t size;
	int r;

	if (type != amdgpu_bo_handle_type_dma_buf_fd)
		return -EINVAL;
	if (stub_fail("amdgpu_bo_import"))
		return -1;
	pthread_mutex_lock(&stub_lock);
	r = drmPrimeFDToHandle(dev->fd, (int)shared_handle, &handle);
	if (r)
		goto out;
	size = lseek((int)shared_handle, 0, SEEK_END);
	if (size < 0) {
		r = -errno;
		drmCloseBufferHandle(dev->fd, handle);
		goto out;
	}
	for (bo = dev->bos; bo; bo = bo->next)
		if (bo->handle == handle)
			break;
	if (bo) {
		bo->refcount++;
	} else {
		bo = calloc(1, sizeof(*bo));
		if (!bo) {
			/* As libdrm does: the handle it just got is closed. */
			drmCloseBufferHandle(dev->fd, handle);
			r = -ENOMEM;
			goto out;
		}
		*bo = (struct amdgpu_bo){ dev->bos, dev, 1, handle, (uint64_t)size };
		dev->bos = bo;
	}
	output->buf_handle = bo;
	output->alloc_size = bo->size;
out:
	pthread_mutex_unlock(&stub_lock);
	return r;
}

/* amdgpu_bo.c: amdgpu_bo_free: the last reference closes the GEM handle. */
STUB_EXPORT int amdgpu_bo_free(amdgpu_bo_handle bo)
{
	struct amdgpu_device *dev = bo->dev;

	pthread_mutex_lock(&stub_lock);
	if (--bo->refcount == 0) {
		for (struct amdgpu_bo **pp = &dev->bos; *pp; pp = &(*pp)->next) {
			if (*pp == bo) {
				*pp = bo->next;
				break;
			}
		}
		drmCloseBufferHandle(dev->fd, bo->handle);
		free(bo);
	}
	pthread_mutex_unlock(&stub_lock);
	return 0;
}

/*
 * amdgpu_vamgr.c: amdgpu_va_range_alloc: a free range of the device's VA
 * manager, size rounded up to the manager's alignment, base aligned to
 * the larger of both (-ENOMEM when none is left). First fit here; only
 * the general range and flags 0, which is all libgpubuf asks for.
 */
STUB_EXPORT int amdgpu_va_range_alloc(amdgpu_device_handle dev,
				      enum amdgpu_gpu_va_range type,
				      uint64_t size, uint64_t align,
				      uint64_t required, uint64_t *va_out,
				      amdgpu_va_handle *handle_out,
				      uint64_t flags)
{
	struct stub_range **pp, *r;
	struct amdgpu_va *va;
	uint64_t base;

	if (type != amdgpu_gpu_va_range_general || flags || required)
		return -EINVAL;
	if (stub_fail("amdgpu_va_range_alloc"))
		return -1;
	if (align < STUB_VA_ALIGN)
		align = STUB_VA_ALIGN;
	size = (size + STUB_VA_ALIGN - 1) & ~(STUB_VA_ALIGN - 1);
	va = calloc(1, sizeof(*va));
	r = calloc(1, sizeof(*r));
	if (!va || !r) {
		free(va);
		free(r);
		return -ENOMEM;
	}
	pthread_mutex_lock(&stub_lock);
	base = STUB_VA_START;
	for (pp = &dev->ranges; ; pp = &(*pp)->next) {
		base = (base + align - 1) & ~(align - 1);
		if (!*pp || base + size <= (*pp)->start)
			break;
		base = (*pp)->start + (*pp)->size;
	}
	if (base + size > STUB_VA_END) {
		pthread_mutex_unlock(&stub_lock);
		free(va);
		free(r);
		return -ENOMEM;
	}
	*r = (struct stub_range){ *pp, base, size };
	*pp = r;
	pthread_mutex_unlock(&stub_lock);
	*va = (struct amdgpu_va){ dev, base, size };
	*va_out = base;
	*handle_out = va;
	return 0;
}

/* amdgpu_vamgr.c: amdgpu_va_range_free: the range goes back; 0. */
STUB_EXPORT int amdgpu_va_range_free(amdgpu_va_handle va)
{
	if (!va)
		return 0;
	pthread_mutex_lock(&stub_lock);
	for (struct stub_range **pp = &va->dev->ranges; *pp; pp = &(*pp)->next) {
		if ((*pp)->start == va->address) {
			struct stub_range *r = *pp;

			*pp = r->next;
			free(r);
			break;
		}
	}
	pthread_mutex_unlock(&stub_lock);
	free(va);
	return 0;
}

/*
 * amdgpu_bo.c: amdgpu_bo_va_op_raw: one GEM_VA ioctl on the device's own
 * fd through drmCommandWriteRead (-errno), for the bo's handle there.
 */
STUB_EXPORT int amdgpu_bo_va_op_raw(amdgpu_device_handle dev, amdgpu_bo_handle bo,
				    uint64_t offset, uint64_t size,
				    uint64_t addr, uint64_t flags, uint32_t ops)
{
	struct drm_amdgpu_gem_va args = {
		.handle = bo ? bo->handle : 0, .operation = ops,
		.flags = flags, .va_address = addr, .offset_in_bo = offset,
		.map_size = size,
	};

	if (ops < AMDGPU_VA_OP_MAP || ops > AMDGPU_VA_OP_REPLACE)
		return -EINVAL;
	return drmCommandWriteRead(dev->fd, DRM_AMDGPU_GEM_VA, &args,
				   sizeof(args));
}

STUB_EXPORT int gpubuf_amdgpu_stub_devices(void)
{
	int n;

	pthread_mutex_lock(&stub_lock);
	n = stub_ndevs;
	pthread_mutex_unlock(&stub_lock);
	return n;
}
