// SPDX-License-Identifier: MIT
/*
 * CUDA driver API: lazy loading, error mapping, and registration of
 * buffers for in-place GPU access.
 *
 * An x86 discrete NVIDIA GPU cannot import a dma-buf, so the path is the
 * CPU mapping: cuMemHostRegister pins it with pin_user_pages(FOLL_LONGTERM)
 * (which the module's struct-page mapping and memfd pages both allow) and
 * cuMemHostGetDevicePointer gives the address kernels use.
 *
 * The only process-wide state is the loaded driver table, written once
 * under pthread_once and read-only afterwards; registrations live in their
 * buffer, under its lock.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_driver.h"
#include "internal.h"

#ifdef GPUBUF_HAVE_CUDA

/* Ask for legacy default-stream semantics: a NULL stream is stream 0. */
#define GPUBUF_CU_PROC_FLAGS	CU_GET_PROC_ADDRESS_LEGACY_STREAM

static struct {
	pthread_once_t once;
	pid_t pid;		/* the process that initialised the driver */
	int err;
	char msg[200];
	struct gpubuf_cu cu;
} gpubuf_cu_loaded = { .once = PTHREAD_ONCE_INIT };

static int gpubuf_cu_errno(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS:
		return 0;
	case CUDA_ERROR_INVALID_VALUE:
	case CUDA_ERROR_INVALID_HANDLE:
		return -EINVAL;
	case CUDA_ERROR_NOT_READY:
		return -EAGAIN;
	case CUDA_ERROR_OUT_OF_MEMORY:
	case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
		return -ENOMEM;
	case CUDA_ERROR_NOT_INITIALIZED:
	case CUDA_ERROR_DEINITIALIZED:
	case CUDA_ERROR_STUB_LIBRARY:
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_INVALID_DEVICE:
	case CUDA_ERROR_DEVICE_UNAVAILABLE:
	case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
	case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
	case CUDA_ERROR_SYSTEM_NOT_READY:
	case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
		return -ENODEV;
	case CUDA_ERROR_CONTEXT_ALREADY_IN_USE:
		return -EBUSY;
	case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
		return -EBUSY;
	case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
		return -ENXIO;
	case CUDA_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case CUDA_ERROR_NOT_PERMITTED:
		return -EPERM;
	case CUDA_ERROR_INVALID_IMAGE:
	case CUDA_ERROR_NO_BINARY_FOR_GPU:
	case CUDA_ERROR_INVALID_PTX:
	case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
	case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
	case CUDA_ERROR_JIT_COMPILATION_DISABLED:
		return -ENOEXEC;
	case CUDA_ERROR_ILLEGAL_ADDRESS:
	case CUDA_ERROR_MISALIGNED_ADDRESS:
		return -EFAULT;
	default:
		return -EIO;
	}
}

static const char *gpubuf_cu_name(const struct gpubuf_cu *cu, CUresult r)
{
	const char *name = NULL;

	if (cu && cu->cuGetErrorName && cu->cuGetErrorName(r, &name) == 0 &&
	    name)
		return name;
	return "unknown CUDA error";
}

int gpubuf_cu_fail(const struct gpubuf_cu *cu, CUresult r, const char *what)
{
	gpubuf_error_set("%s: %s (%d)", what, gpubuf_cu_name(cu, r), (int)r);
	return gpubuf_cu_errno(r);
}

/* Loader failures are remembered once and replayed to every caller. */
__attribute__((format(printf, 2, 3)))
static void gpubuf_cu_load_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(gpubuf_cu_loaded.msg, sizeof(gpubuf_cu_loaded.msg), fmt, ap);
	va_end(ap);
	gpubuf_cu_loaded.err = err;
}

static void *gpubuf_cu_proc(PFN_cuGetProcAddress_v12000 get,
			    const char *name, int version)
{
	CUdriverProcAddressQueryResult status;
	void *fn = NULL;

	/*
	 * No retry with another version: that could hand back a different
	 * ABI than the typedef this pointer is called through.
	 */
	if (get(name, &fn, version, GPUBUF_CU_PROC_FLAGS, &status) !=
	    CUDA_SUCCESS)
		return NULL;
	return fn;	/* NULL for a symbol the driver does not have */
}

static void gpubuf_cu_load(void)
{
	struct gpubuf_cu *cu = &gpubuf_cu_loaded.cu;
	PFN_cuGetProcAddress_v12000 get;
	const char *missing = NULL, *what;
	void *lib;
	CUresult r;

	/* Never closed: the driver keeps threads and state for the process. */
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		gpubuf_cu_load_fail(-ENODEV, "no NVIDIA driver: %s", dlerror());
		return;
	}
	/* The plain dlsym() name would be the legacy 11.x ABI. */
	get = (PFN_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2");
	if (!get) {
		gpubuf_cu_load_fail(-ENODEV,
				    "NVIDIA driver older than CUDA 12.0 (no cuGetProcAddress_v2)");
		return;
	}
#define GPUBUF_CU_RESOLVE(name, version)				\
	cu->name = (PFN_##name##_v##version)gpubuf_cu_proc(get, #name, version); \
	if (!cu->name && !missing)					\
		missing = #name;
	GPUBUF_CU_ENTRIES(GPUBUF_CU_RESOLVE)
#undef GPUBUF_CU_RESOLVE
	if (missing) {
		gpubuf_cu_load_fail(-ENODEV,
				    "NVIDIA driver lacks %s (older than CUDA 12.0?)",
				    missing);
		return;
	}
	what = "cuInit";
	r = cu->cuInit(0);
	if (r == CUDA_SUCCESS) {
		what = "cuDriverGetVersion";
		r = cu->cuDriverGetVersion(&cu->driver_version);
	}
	if (r == CUDA_SUCCESS) {
		what = "cuDeviceGetCount";
		r = cu->cuDeviceGetCount(&cu->device_count);
	}
	if (r != CUDA_SUCCESS) {
		gpubuf_cu_load_fail(gpubuf_cu_errno(r), "%s: %s (%d)", what,
				    gpubuf_cu_name(cu, r), (int)r);
		return;
	}
	gpubuf_cu_loaded.pid = getpid();
	if (cu->device_count <= 0)
		gpubuf_cu_load_fail(-ENODEV, "no CUDA device");
}

/* A child of fork() inherits no usable CUDA state; calls there may hang. */
static bool gpubuf_cu_forked(void)
{
	return gpubuf_cu_loaded.pid && gpubuf_cu_loaded.pid != getpid();
}

int gpubuf_cu_get(const struct gpubuf_cu **cu)
{
	pthread_once(&gpubuf_cu_loaded.once, gpubuf_cu_load);
	if (gpubuf_cu_loaded.err) {
		gpubuf_error_set("%s", gpubuf_cu_loaded.msg);
		return gpubuf_cu_loaded.err;
	}
	if (gpubuf_cu_forked()) {
		gpubuf_error_set("CUDA was initialised by process %d; a child after fork() cannot use it",
				 (int)gpubuf_cu_loaded.pid);
		return -ENODEV;
	}
	*cu = &gpubuf_cu_loaded.cu;
	return 0;
}

/* The driver, and device a valid ordinal on it. */
static int gpubuf_cu_get_device(const struct gpubuf_cu **cu, int device)
{
	int err = gpubuf_cu_get(cu);

	if (err)
		return err;
	if (device < 0 || device >= (*cu)->device_count) {
		gpubuf_error_set("no CUDA device %d (%d present)", device,
				 (*cu)->device_count);
		return -ENODEV;
	}
	return 0;
}

static int gpubuf_cu_retain(const struct gpubuf_cu *cu, int device,
			    CUcontext *ctx)
{
	CUdevice dev;
	CUresult r;

	r = cu->cuDeviceGet(&dev, device);
	if (r == CUDA_SUCCESS)
		r = cu->cuDevicePrimaryCtxRetain(ctx, dev);
	return r ? gpubuf_cu_fail(cu, r, "cuDevicePrimaryCtxRetain") : 0;
}

static void gpubuf_cu_release(const struct gpubuf_cu *cu, int device)
{
	CUdevice dev;

	if (cu->cuDeviceGet(&dev, device) == CUDA_SUCCESS)
		cu->cuDevicePrimaryCtxRelease(dev);
}

int gpubuf_cu_enter(const struct gpubuf_cu *cu, int device, CUcontext *ctx)
{
	CUresult r;
	int err;

	err = gpubuf_cu_retain(cu, device, ctx);
	if (err)
		return err;
	r = cu->cuCtxPushCurrent(*ctx);
	if (r != CUDA_SUCCESS) {
		gpubuf_cu_release(cu, device);
		return gpubuf_cu_fail(cu, r, "cuCtxPushCurrent");
	}
	return 0;
}

void gpubuf_cu_leave(const struct gpubuf_cu *cu, int device)
{
	CUcontext ctx;

	cu->cuCtxPopCurrent(&ctx);
	gpubuf_cu_release(cu, device);
}

/*
 * One registration per buffer (the driver refuses a second one of the same
 * range), made in reg_device's primary context and PORTABLE, so every
 * context sees it. Each device with a count holds a retain on its primary
 * context; reg_device holds one more for the registration itself, because
 * destroying the registering context would drop the page lock.
 */
struct gpubuf_cuda_reg {
	int reg_device;
	unsigned int cu_flags;		/* CU_MEMHOSTREGISTER_* used */
	unsigned int total;		/* sum of the counts below */
	int ndev;
	struct {
		unsigned int count;
		CUdeviceptr devptr;	/* of the buffer's first byte */
	} dev[];
};

static int gpubuf_cu_attr(const struct gpubuf_cu *cu, int device,
			  CUdevice_attribute attr, int *value)
{
	CUdevice dev;
	CUresult r;

	r = cu->cuDeviceGet(&dev, device);
	if (r == CUDA_SUCCESS)
		r = cu->cuDeviceGetAttribute(value, attr, dev);
	return r ? gpubuf_cu_fail(cu, r, "cuDeviceGetAttribute") : 0;
}

/* Whether device can register host memory at all, and read-only if asked. */
static int gpubuf_cu_can_register(const struct gpubuf_cu *cu, int device,
				  int read_only)
{
	int map = 0, reg = 0, ro = 0, err;

	err = gpubuf_cu_attr(cu, device, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
			     &map);
	if (!err)
		err = gpubuf_cu_attr(cu, device,
				     CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED,
				     &reg);
	if (!err && read_only)
		err = gpubuf_cu_attr(cu, device,
				     CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED,
				     &ro);
	if (err)
		return err;
	if (!map || !reg) {
		gpubuf_error_set("CUDA device %d cannot map registered host memory",
				 device);
		return -EOPNOTSUPP;
	}
	if (read_only && !ro) {
		gpubuf_error_set("CUDA device %d cannot register read-only host memory",
				 device);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* Device pointer of the registered range in device's primary context. */
static int gpubuf_cu_devptr(const struct gpubuf_cu *cu, struct gpubuf *buf,
			    CUdeviceptr *devptr)
{
	CUresult r = cu->cuMemHostGetDevicePointer(devptr, buf->ptr, 0);

	return r ? gpubuf_cu_fail(cu, r, "cuMemHostGetDevicePointer") : 0;
}

/* Register buf->ptr in device's context; the reg_device retain stays. */
static int gpubuf_cu_register_first(const struct gpubuf_cu *cu,
				    struct gpubuf *buf, int device,
				    int read_only, struct gpubuf_cuda_reg *reg)
{
	unsigned int cu_flags = CU_MEMHOSTREGISTER_PORTABLE |
				CU_MEMHOSTREGISTER_DEVICEMAP;
	CUcontext ctx;
	CUresult r;
	int err;

	if (read_only)
		cu_flags |= CU_MEMHOSTREGISTER_READ_ONLY;
	err = gpubuf_cu_can_register(cu, device, read_only);
	if (err)
		return err;
	err = gpubuf_cu_enter(cu, device, &ctx);
	if (err)
		return err;
	r = cu->cuMemHostRegister(buf->ptr, buf->size, cu_flags);
	if (r != CUDA_SUCCESS) {
		err = gpubuf_cu_fail(cu, r, "cuMemHostRegister");
		goto out_leave;
	}
	err = gpubuf_cu_devptr(cu, buf, &reg->dev[device].devptr);
	if (err) {
		cu->cuMemHostUnregister(buf->ptr);
		goto out_leave;
	}
	/* The registration's own retain, dropped when it is undone. */
	err = gpubuf_cu_retain(cu, device, &ctx);
	if (err) {
		cu->cuMemHostUnregister(buf->ptr);
		goto out_leave;
	}
	reg->reg_device = device;
	reg->cu_flags = cu_flags;
out_leave:
	/* Leaving drops enter's retain; the device count's is taken below. */
	gpubuf_cu_leave(cu, device);
	return err;
}

/*
 * Undo the registration and drop every count with its retains. If the
 * driver call fails, !force leaves everything as it was, so the caller
 * can report the error and a later unregister or the last unref can try
 * again: forgetting a registration the driver still holds would leave
 * the pages pinned after munmap(), and a new buffer at the same address
 * could not be registered. force (last unref, undoing a failed first
 * register) drops the bookkeeping anyway: nothing could retry.
 */
static int gpubuf_cu_unregister_all(const struct gpubuf_cu *cu,
				    struct gpubuf *buf, bool force)
{
	struct gpubuf_cuda_reg *reg = buf->cuda;
	CUcontext ctx;
	CUresult r;
	int err;

	err = gpubuf_cu_enter(cu, reg->reg_device, &ctx);
	if (!err) {
		r = cu->cuMemHostUnregister(buf->ptr);
		/* Gone already, e.g. with a reset primary context: done. */
		if (r != CUDA_SUCCESS && r != CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
			err = gpubuf_cu_fail(cu, r, "cuMemHostUnregister");
		gpubuf_cu_leave(cu, reg->reg_device);
	}
	if (err && !force)
		return err;
	for (int d = 0; d < reg->ndev; d++)
		if (reg->dev[d].count)
			gpubuf_cu_release(cu, d);
	gpubuf_cu_release(cu, reg->reg_device);
	free(reg);
	buf->cuda = NULL;
	return err;
}

static int gpubuf_cu_register_locked(const struct gpubuf_cu *cu,
				     struct gpubuf *buf, int device,
				     int read_only, uint64_t *devptr)
{
	struct gpubuf_cuda_reg *reg = buf->cuda;
	bool fresh = !reg;
	CUcontext ctx;
	int err;

	if (reg && reg->dev[device].count) {
		/* A writable registration serves a read-only request. */
		if (!read_only && (reg->cu_flags & CU_MEMHOSTREGISTER_READ_ONLY)) {
			gpubuf_error_set("buffer is registered read-only with CUDA");
			return -EBUSY;
		}
		if (reg->dev[device].count == UINT_MAX ||
		    reg->total == UINT_MAX) {
			gpubuf_error_set("too many registrations of one buffer");
			return -EOVERFLOW;
		}
		reg->dev[device].count++;
		reg->total++;
		*devptr = reg->dev[device].devptr;
		return 0;
	}
	if (reg && !read_only && (reg->cu_flags & CU_MEMHOSTREGISTER_READ_ONLY)) {
		gpubuf_error_set("buffer is registered read-only with CUDA");
		return -EBUSY;
	}
	if (fresh) {
		reg = calloc(1, sizeof(*reg) +
			     (size_t)cu->device_count * sizeof(reg->dev[0]));
		if (!reg)
			return -ENOMEM;
		reg->ndev = cu->device_count;
		err = gpubuf_cu_register_first(cu, buf, device, read_only, reg);
		if (err) {
			free(reg);
			return err;
		}
		buf->cuda = reg;
	}
	/* Another device joins: it must be able to map it, read-only too. */
	if (!fresh) {
		err = gpubuf_cu_can_register(cu, device, reg->cu_flags &
					     CU_MEMHOSTREGISTER_READ_ONLY);
		if (err)
			return err;
	}
	/* This device's count holds a retain of its primary context. */
	err = gpubuf_cu_enter(cu, device, &ctx);
	if (err)
		goto err_undo;
	if (!fresh) {
		err = gpubuf_cu_devptr(cu, buf, &reg->dev[device].devptr);
		if (err) {
			gpubuf_cu_leave(cu, device);
			goto err_undo;
		}
	}
	cu->cuCtxPopCurrent(&ctx);
	reg->dev[device].count = 1;
	reg->total++;
	*devptr = reg->dev[device].devptr;
	return 0;

err_undo:
	if (fresh)
		gpubuf_cu_unregister_all(cu, buf, true);
	return err;
}

GPUBUF_EXPORT int gpubuf_cuda_register(struct gpubuf *buf, int device,
				       unsigned int flags, uint64_t *devptr)
{
	GPUBUF_KEEP_ERRNO;
	const struct gpubuf_cu *cu;
	int read_only, err;

	gpubuf_error_clear();
	if (!buf || !devptr || (flags & ~GPUBUF_CUDA_REGISTER_VALID_FLAGS))
		return -EINVAL;
	err = gpubuf_cu_get_device(&cu, device);
	if (err)
		return err;
	/* A PROT_READ mapping cannot be pinned for writing. */
	read_only = (flags & GPUBUF_CUDA_REGISTER_READ_ONLY) ||
		    (buf->flags & GPUBUF_BUF_READONLY);
	pthread_mutex_lock(&buf->lock);
	err = gpubuf_cu_register_locked(cu, buf, device, read_only, devptr);
	pthread_mutex_unlock(&buf->lock);
	return err;
}

static int gpubuf_cu_unregister_locked(const struct gpubuf_cu *cu,
				       struct gpubuf *buf, int device)
{
	struct gpubuf_cuda_reg *reg = buf->cuda;

	if (!reg || device < 0 || device >= reg->ndev ||
	    !reg->dev[device].count) {
		gpubuf_error_set("buffer is not registered with CUDA device %d",
				 device);
		return -ENXIO;
	}
	/* The last count of all: undo the registration first, or nothing. */
	if (reg->total == 1)
		return gpubuf_cu_unregister_all(cu, buf, false);
	reg->total--;
	if (--reg->dev[device].count == 0)
		gpubuf_cu_release(cu, device);
	return 0;
}

GPUBUF_EXPORT int gpubuf_cuda_unregister(struct gpubuf *buf, int device)
{
	GPUBUF_KEEP_ERRNO;
	const struct gpubuf_cu *cu = NULL;
	int err;

	gpubuf_error_clear();
	if (!buf)
		return -EINVAL;
	/* Not registered is -ENXIO, whether or not a driver is there. */
	pthread_mutex_lock(&buf->lock);
	err = buf->cuda ? gpubuf_cu_get(&cu) : 0;
	if (!err)
		err = gpubuf_cu_unregister_locked(cu, buf, device);
	pthread_mutex_unlock(&buf->lock);
	return err;
}

int gpubuf_cuda_hold(struct gpubuf *buf, int device, uint64_t *devptr,
		     bool *read_only)
{
	struct gpubuf_cuda_reg *reg;
	int err = -ENXIO;

	pthread_mutex_lock(&buf->lock);
	reg = buf->cuda;
	if (reg && device >= 0 && device < reg->ndev &&
	    reg->dev[device].count && reg->dev[device].count < UINT_MAX &&
	    reg->total < UINT_MAX) {
		reg->dev[device].count++;
		reg->total++;
		*devptr = reg->dev[device].devptr;
		*read_only = reg->cu_flags & CU_MEMHOSTREGISTER_READ_ONLY;
		err = 0;
	}
	pthread_mutex_unlock(&buf->lock);
	if (err)
		gpubuf_error_set("buffer is not registered with CUDA device %d",
				 device);
	return err;
}

void gpubuf_cuda_release(struct gpubuf *buf)
{
	const struct gpubuf_cu *cu;
	struct gpubuf_cuda_reg *reg = buf->cuda;

	if (!reg)
		return;
	/*
	 * A registration exists only if the driver loaded. In a child after
	 * fork() it is the parent's: forget it without calling the driver.
	 */
	if (gpubuf_cu_get(&cu)) {
		free(reg);
		buf->cuda = NULL;
		return;
	}
	gpubuf_cu_unregister_all(cu, buf, true);
}

GPUBUF_EXPORT int gpubuf_cuda_device_count(int *count)
{
	const struct gpubuf_cu *cu;
	int err;

	gpubuf_error_clear();
	if (!count)
		return -EINVAL;
	err = gpubuf_cu_get(&cu);
	if (err)
		return err;
	*count = cu->device_count;
	return 0;
}

GPUBUF_EXPORT int gpubuf_cuda_matrix_view(const struct gpubuf_matrix *m,
					  int device,
					  struct gpubuf_cuda_matrix *out)
{
	struct gpubuf_cuda_reg *reg;
	CUdeviceptr base = 0;
	unsigned int flags = 0;
	int err;

	gpubuf_error_clear();
	if (!m || !out)
		return -EINVAL;
	err = gpubuf_matrix_check(m);
	if (err)
		return err;
	pthread_mutex_lock(&m->buf->lock);
	reg = m->buf->cuda;
	if (reg && device >= 0 && device < reg->ndev && reg->dev[device].count) {
		base = reg->dev[device].devptr;
		if (reg->cu_flags & CU_MEMHOSTREGISTER_READ_ONLY)
			flags |= GPUBUF_CUDA_MATRIX_READ_ONLY;
	}
	pthread_mutex_unlock(&m->buf->lock);
	if (!base) {
		gpubuf_error_set("buffer is not registered with CUDA device %d",
				 device);
		return -ENXIO;
	}
	out->devptr = (uint64_t)base + m->offset;
	out->rows = m->rows;
	out->cols = m->cols;
	out->ld = m->ld;
	out->dtype = m->dtype;
	out->layout = m->layout;
	out->device = device;
	out->flags = flags;
	return 0;
}

#else /* !GPUBUF_HAVE_CUDA */

static int gpubuf_no_cuda(void)
{
	gpubuf_error_set("libgpubuf was built without CUDA support (no cuda.h at build time)");
	return -EOPNOTSUPP;
}

/* Argument errors are reported as in a CUDA build, then the lack of CUDA. */
GPUBUF_EXPORT int gpubuf_cuda_device_count(int *count)
{
	if (!count)
		return -EINVAL;
	return gpubuf_no_cuda();
}

GPUBUF_EXPORT int gpubuf_cuda_register(struct gpubuf *buf, int device,
				       unsigned int flags, uint64_t *devptr)
{
	(void)device;
	if (!buf || !devptr || (flags & ~GPUBUF_CUDA_REGISTER_VALID_FLAGS))
		return -EINVAL;
	return gpubuf_no_cuda();
}

GPUBUF_EXPORT int gpubuf_cuda_unregister(struct gpubuf *buf, int device)
{
	(void)device;
	if (!buf)
		return -EINVAL;
	return gpubuf_no_cuda();
}

/* Nothing can have been registered: the kDLCUDA answer is -ENXIO. */
int gpubuf_cuda_hold(struct gpubuf *buf, int device, uint64_t *devptr,
		     bool *read_only)
{
	(void)buf, (void)devptr, (void)read_only;
	gpubuf_error_set("buffer is not registered with CUDA device %d (libgpubuf was built without CUDA support)",
			 device);
	return -ENXIO;
}

void gpubuf_cuda_release(struct gpubuf *buf)
{
	(void)buf;
}

GPUBUF_EXPORT int gpubuf_cuda_matrix_view(const struct gpubuf_matrix *m,
					  int device,
					  struct gpubuf_cuda_matrix *out)
{
	(void)device;
	if (!m || !out)
		return -EINVAL;
	return gpubuf_no_cuda();
}

GPUBUF_EXPORT int gpubuf_cuda_gemv(double alpha,
				   const struct gpubuf_cuda_matrix *a,
				   const struct gpubuf_cuda_matrix *x,
				   double beta,
				   const struct gpubuf_cuda_matrix *y,
				   void *stream)
{
	(void)alpha, (void)a, (void)x, (void)beta, (void)y, (void)stream;
	return gpubuf_no_cuda();
}

GPUBUF_EXPORT int gpubuf_cuda_gemm(double alpha,
				   const struct gpubuf_cuda_matrix *a,
				   const struct gpubuf_cuda_matrix *b,
				   double beta,
				   const struct gpubuf_cuda_matrix *c,
				   void *stream)
{
	(void)alpha, (void)a, (void)b, (void)beta, (void)c, (void)stream;
	return gpubuf_no_cuda();
}

#endif /* GPUBUF_HAVE_CUDA */
