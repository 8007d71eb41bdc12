// SPDX-License-Identifier: MIT
/*
 * CUDA driver API: lazy loading through dlopen and cuGetProcAddress_v2,
 * CUresult to errno mapping, and primary-context entry and exit.
 *
 * The process-wide state is the loaded driver table, written once under
 * pthread_once and read-only afterwards, and one flag per device saying
 * whether the library holds its lifetime retain of that device's primary
 * context. Compiled only when the toolkit's headers were found
 * (GPUBUF_HAVE_CUDA).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cuda/cuda_driver.h"
#include "core/internal.h"

/* Ask for legacy default-stream semantics: a NULL stream is stream 0. */
#define GPUBUF_CU_PROC_FLAGS	CU_GET_PROC_ADDRESS_LEGACY_STREAM

/*
 * A primary context lives while anyone retains it; the last release
 * destroys it, and making it again costs hundreds of milliseconds on a
 * large GPU. So the first retain the library takes on a device comes
 * with one more, kept (kept[device]) until gpubuf_cuda_device_release()
 * or the end of the process. No destructor gives it back at exit: libcuda,
 * dlopen()ed after libgpubuf, is finalised before it.
 */
static struct {
	pthread_once_t once;
	pid_t pid;		/* the process that initialised the driver */
	int err;
	char msg[200];
	struct gpubuf_cu cu;
	pthread_mutex_t keep_lock;	/* taking or dropping a kept retain */
	atomic_bool *kept;		/* cu.device_count flags */
} gpubuf_cu_loaded = {
	.once = PTHREAD_ONCE_INIT,
	.keep_lock = PTHREAD_MUTEX_INITIALIZER,
};

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

GPUBUF_EXPORT int gpubuf_cu_fail(const struct gpubuf_cu *cu, CUresult r,
				 const char *what)
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
		gpubuf_cu_load_fail(-ENODEV, "no NVIDIA driver: %s", gpubuf_dlerror());
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
	if (cu->device_count <= 0) {
		gpubuf_cu_load_fail(-ENODEV, "no CUDA device");
		return;
	}
	gpubuf_cu_loaded.kept = calloc((size_t)cu->device_count,
				       sizeof(*gpubuf_cu_loaded.kept));
	if (!gpubuf_cu_loaded.kept)
		gpubuf_cu_load_fail(-ENOMEM, "out of memory for %d CUDA devices",
				    cu->device_count);
}

/* A child of fork() inherits no usable CUDA state; calls there may hang. */
static bool gpubuf_cu_forked(void)
{
	return gpubuf_cu_loaded.pid && gpubuf_cu_loaded.pid != getpid();
}

GPUBUF_EXPORT int gpubuf_cu_get(const struct gpubuf_cu **cu)
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
int gpubuf_cu_get_device(const struct gpubuf_cu **cu, int device)
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

/* Take the library's lifetime retain of dev's context, once. */
static CUresult gpubuf_cu_keep(const struct gpubuf_cu *cu, int device,
			       CUdevice dev)
{
	atomic_bool *kept = &gpubuf_cu_loaded.kept[device];
	CUresult r = CUDA_SUCCESS;
	CUcontext ctx;

	if (atomic_load_explicit(kept, memory_order_acquire))
		return CUDA_SUCCESS;
	pthread_mutex_lock(&gpubuf_cu_loaded.keep_lock);
	if (!atomic_load_explicit(kept, memory_order_relaxed)) {
		r = cu->cuDevicePrimaryCtxRetain(&ctx, dev);
		if (r == CUDA_SUCCESS)
			atomic_store_explicit(kept, true, memory_order_release);
	}
	pthread_mutex_unlock(&gpubuf_cu_loaded.keep_lock);
	return r;
}

int gpubuf_cu_retain(const struct gpubuf_cu *cu, int device,
			    CUcontext *ctx)
{
	CUdevice dev;
	CUresult r;

	r = cu->cuDeviceGet(&dev, device);
	if (r == CUDA_SUCCESS)
		r = cu->cuDevicePrimaryCtxRetain(ctx, dev);
	if (r != CUDA_SUCCESS)
		return gpubuf_cu_fail(cu, r, "cuDevicePrimaryCtxRetain");
	/* The kernel cache relies on it: no kept retain, no retain. */
	r = gpubuf_cu_keep(cu, device, dev);
	if (r != CUDA_SUCCESS) {
		cu->cuDevicePrimaryCtxRelease(dev);
		return gpubuf_cu_fail(cu, r, "cuDevicePrimaryCtxRetain");
	}
	return 0;
}

void gpubuf_cu_unretain(const struct gpubuf_cu *cu, int device)
{
	CUdevice dev;

	if (cu->cuDeviceGet(&dev, device) == CUDA_SUCCESS)
		cu->cuDevicePrimaryCtxRelease(dev);
}

GPUBUF_EXPORT int gpubuf_cuda_device_release(int device)
{
	GPUBUF_KEEP_ERRNO;
	const struct gpubuf_cu *cu;
	atomic_bool *kept;
	CUdevice dev;
	CUresult r;
	int err;

	gpubuf_error_clear();
	err = gpubuf_cu_get_device(&cu, device);
	if (err)
		return err;
	kept = &gpubuf_cu_loaded.kept[device];
	if (!atomic_load_explicit(kept, memory_order_acquire))
		return 0;
	/* The kernels live in the context: unload them while it is there. */
	err = gpubuf_cu_kernels_unload(cu, device);
	if (err)
		return err;
	r = cu->cuDeviceGet(&dev, device);
	if (r != CUDA_SUCCESS)
		return gpubuf_cu_fail(cu, r, "cuDeviceGet");
	pthread_mutex_lock(&gpubuf_cu_loaded.keep_lock);
	if (atomic_load_explicit(kept, memory_order_relaxed)) {
		r = cu->cuDevicePrimaryCtxRelease(dev);
		if (r == CUDA_SUCCESS)
			atomic_store_explicit(kept, false,
					      memory_order_release);
	}
	pthread_mutex_unlock(&gpubuf_cu_loaded.keep_lock);
	return r ? gpubuf_cu_fail(cu, r, "cuDevicePrimaryCtxRelease") : 0;
}

GPUBUF_EXPORT int gpubuf_cu_enter(const struct gpubuf_cu *cu, int device,
				  CUcontext *ctx)
{
	CUresult r;
	int err;

	err = gpubuf_cu_retain(cu, device, ctx);
	if (err)
		return err;
	r = cu->cuCtxPushCurrent(*ctx);
	if (r != CUDA_SUCCESS) {
		gpubuf_cu_unretain(cu, device);
		return gpubuf_cu_fail(cu, r, "cuCtxPushCurrent");
	}
	return 0;
}

GPUBUF_EXPORT void gpubuf_cu_leave(const struct gpubuf_cu *cu, int device)
{
	CUcontext ctx;

	cu->cuCtxPopCurrent(&ctx);
	gpubuf_cu_unretain(cu, device);
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
