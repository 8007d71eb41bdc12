// SPDX-License-Identifier: MIT
/*
 * The library's CUDA kernels (kernels/gpubuf_kernels.cu): a per-device
 * module cache, the streaming kernels gpubuf-bench times, and
 * gpubuf_cuda_gemv() / gpubuf_cuda_gemm().
 *
 * The fatbin is loaded once per device into its primary context, the
 * context every libgpubuf call works in. The library's lifetime retain of
 * that context (cuda_driver.c) keeps the module and its function handles
 * valid however the callers' own retains come and go, until
 * gpubuf_cuda_device_release() unloads them with it. A failed load leaves
 * the slot empty and is tried again next time.
 *
 * Everything a caller passes is checked before the driver is touched, so
 * a bad view costs no driver load and gives the same errno on machines
 * with and without a GPU.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_driver.h"
#include "core/internal.h"
#include "kernels/kernel_args.h"

#ifdef GPUBUF_HAVE_CUDA_KERNELS

/* cuda/fatbin.S; the driver needs it 8-byte aligned, which it is. */
extern const unsigned char gpubuf_cuda_fatbin[];

static const char *const gpubuf_cu_kernel_names[GPUBUF_CU_NR_KERNELS] = {
	[GPUBUF_CU_GEMV_F32] = "gpubuf_gemv_f32",
	[GPUBUF_CU_GEMV_F64] = "gpubuf_gemv_f64",
	[GPUBUF_CU_GEMM_F32] = "gpubuf_gemm_f32",
	[GPUBUF_CU_GEMM_F64] = "gpubuf_gemm_f64",
	[GPUBUF_CU_READ] = "gpubuf_stream_read",
	[GPUBUF_CU_WRITE] = "gpubuf_stream_write",
};

/* The block size every kernel is written for, and GEMM's C tile. */
#define GPUBUF_CU_THREADS	256
#define GPUBUF_CU_GEMM_TILE	64
/* CUDA's grid limits; the kernels grid-stride, so a clamp is harmless. */
#define GPUBUF_CU_GRID_X_MAX	0x7fffffffu
#define GPUBUF_CU_GRID_Y_MAX	65535u
/* GEMV blocks beyond this only queue up behind the resident ones. */
#define GPUBUF_CU_GEMV_GRID_MAX	(1u << 20)

/* One device's kernels; immutable while published (ready). */
struct gpubuf_cu_module {
	CUmodule mod;
	CUfunction fn[GPUBUF_CU_NR_KERNELS];
	int sm_count;
	int threads_per_sm;
};

/*
 * Per device: loading (which may JIT PTX for a second or more) holds only
 * that device's lock, and launches read the published module without any
 * lock once it is there.
 */
struct gpubuf_cu_slot {
	pthread_mutex_t lock;
	struct gpubuf_cu_module *_Atomic ready;	/* &m once loaded */
	struct gpubuf_cu_module m;
};

static struct {
	pthread_once_t once;
	struct gpubuf_cu_slot *dev;	/* cu->device_count slots, or NULL */
} gpubuf_cu_modules = { .once = PTHREAD_ONCE_INIT };

#define GPUBUF_STR(x)	#x
#define GPUBUF_XSTR(x)	GPUBUF_STR(x)

/*
 * A fatbin the driver cannot use: say which code it holds and which CUDA
 * the driver speaks, the usual cause being a driver older than the
 * toolkit that built it (its PTX and cubins need that driver).
 */
static int gpubuf_cu_load_fail(const struct gpubuf_cu *cu, CUdevice dev,
			       CUresult r)
{
	int err = gpubuf_cu_fail(cu, r, "cuModuleLoadData");
	int major = 0, minor = 0;
	char why[128];

	if (err != -ENOEXEC)
		return err;
	cu->cuDeviceGetAttribute(&major,
				 CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
				 dev);
	cu->cuDeviceGetAttribute(&minor,
				 CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
				 dev);
	snprintf(why, sizeof(why), "%s", gpubuf_last_error());
	gpubuf_error_set("%s: kernels built by CUDA %d.%d for sm %s, device is sm_%d%d, driver supports CUDA %d.%d",
			 why, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10,
			 GPUBUF_XSTR(GPUBUF_CUDA_ARCH_LIST), major, minor,
			 cu->driver_version / 1000,
			 cu->driver_version % 1000 / 10);
	return err;
}

/* The module, its functions and the SM geometry, in device's context. */
static int gpubuf_cu_module_fill(const struct gpubuf_cu *cu, CUdevice dev,
				 struct gpubuf_cu_module *m)
{
	char what[64];
	CUmodule mod;
	CUresult r;

	r = cu->cuModuleLoadData(&mod, gpubuf_cuda_fatbin);
	if (r != CUDA_SUCCESS)
		return gpubuf_cu_load_fail(cu, dev, r);
	for (int k = 0; k < GPUBUF_CU_NR_KERNELS; k++) {
		r = cu->cuModuleGetFunction(&m->fn[k], mod,
					    gpubuf_cu_kernel_names[k]);
		if (r != CUDA_SUCCESS) {
			snprintf(what, sizeof(what), "cuModuleGetFunction(%s)",
				 gpubuf_cu_kernel_names[k]);
			goto err_unload;
		}
	}
	snprintf(what, sizeof(what), "cuDeviceGetAttribute");
	r = cu->cuDeviceGetAttribute(&m->sm_count,
				     CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
				     dev);
	if (r == CUDA_SUCCESS)
		r = cu->cuDeviceGetAttribute(&m->threads_per_sm,
					     CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
					     dev);
	if (r != CUDA_SUCCESS)
		goto err_unload;
	m->mod = mod;
	return 0;

err_unload:
	cu->cuModuleUnload(mod);
	return gpubuf_cu_fail(cu, r, what);
}

/* Load into the primary context, which the lifetime retain keeps. */
static int gpubuf_cu_module_load(const struct gpubuf_cu *cu, int device,
				 struct gpubuf_cu_module *m)
{
	CUcontext ctx;
	CUdevice dev;
	CUresult r;
	int err;

	r = cu->cuDeviceGet(&dev, device);
	if (r != CUDA_SUCCESS)
		return gpubuf_cu_fail(cu, r, "cuDeviceGet");
	/* Usually current already; entering makes sure it is the one. */
	err = gpubuf_cu_enter(cu, device, &ctx);
	if (err)
		return err;
	err = gpubuf_cu_module_fill(cu, dev, m);
	gpubuf_cu_leave(cu, device);
	return err;
}

static void gpubuf_cu_slots_init(void)
{
	const struct gpubuf_cu *cu;
	struct gpubuf_cu_slot *slots;

	/* Only reached after a successful gpubuf_cu_get(). */
	if (gpubuf_cu_get(&cu))
		return;
	slots = calloc((size_t)cu->device_count, sizeof(*slots));
	if (!slots)
		return;
	for (int d = 0; d < cu->device_count; d++)
		pthread_mutex_init(&slots[d].lock, NULL);
	gpubuf_cu_modules.dev = slots;
}

/* device's loaded module, valid until gpubuf_cu_kernels_unload(). */
static int gpubuf_cu_module_get(const struct gpubuf_cu *cu, int device,
				const struct gpubuf_cu_module **out)
{
	struct gpubuf_cu_slot *slot;
	int err = 0;

	if (device < 0 || device >= cu->device_count) {
		gpubuf_error_set("no CUDA device %d (%d present)", device,
				 cu->device_count);
		return -ENODEV;
	}
	pthread_once(&gpubuf_cu_modules.once, gpubuf_cu_slots_init);
	if (!gpubuf_cu_modules.dev)
		return -ENOMEM;
	slot = &gpubuf_cu_modules.dev[device];
	*out = atomic_load_explicit(&slot->ready, memory_order_acquire);
	if (*out)
		return 0;
	pthread_mutex_lock(&slot->lock);
	if (!atomic_load_explicit(&slot->ready, memory_order_relaxed)) {
		err = gpubuf_cu_module_load(cu, device, &slot->m);
		if (!err)
			atomic_store_explicit(&slot->ready, &slot->m,
					      memory_order_release);
	}
	pthread_mutex_unlock(&slot->lock);
	*out = &slot->m;
	return err;
}

/*
 * Like cudaDeviceReset(), this must not race with launches on device:
 * they read the published module without a lock.
 */
int gpubuf_cu_kernels_unload(const struct gpubuf_cu *cu, int device)
{
	struct gpubuf_cu_slot *slot;
	struct gpubuf_cu_module *m;
	CUcontext ctx;
	CUresult r;
	int err;

	pthread_once(&gpubuf_cu_modules.once, gpubuf_cu_slots_init);
	if (!gpubuf_cu_modules.dev)
		return 0;	/* then nothing was ever loaded */
	slot = &gpubuf_cu_modules.dev[device];
	pthread_mutex_lock(&slot->lock);
	m = atomic_load_explicit(&slot->ready, memory_order_relaxed);
	if (!m) {
		pthread_mutex_unlock(&slot->lock);
		return 0;
	}
	err = gpubuf_cu_enter(cu, device, &ctx);
	if (!err) {
		r = cu->cuModuleUnload(m->mod);
		gpubuf_cu_leave(cu, device);
		/* Unloaded or not, the handles must not be used again. */
		atomic_store_explicit(&slot->ready, NULL, memory_order_release);
		memset(m, 0, sizeof(*m));
		if (r != CUDA_SUCCESS)
			err = gpubuf_cu_fail(cu, r, "cuModuleUnload");
	}
	pthread_mutex_unlock(&slot->lock);
	return err;
}

GPUBUF_EXPORT int gpubuf_cu_kernels_load(const struct gpubuf_cu *cu,
					 int device)
{
	const struct gpubuf_cu_module *m;

	return gpubuf_cu_module_get(cu, device, &m);
}

int gpubuf_cu_kernel(const struct gpubuf_cu *cu, int device,
		     enum gpubuf_cu_kernel k, CUfunction *fn)
{
	const struct gpubuf_cu_module *m;
	int err;

	if ((unsigned int)k >= GPUBUF_CU_NR_KERNELS)
		return -EINVAL;
	err = gpubuf_cu_module_get(cu, device, &m);
	if (!err)
		*fn = m->fn[k];
	return err;
}

/* ---- streaming kernels ------------------------------------------------ */

/* ceil(items / per), at most max. */
static unsigned int gpubuf_cu_blocks(uint64_t items, uint64_t per,
				     unsigned int max)
{
	return (unsigned int)gpubuf_kargs_blocks(items, per, max);
}

/* sink is one 32-bit word of device memory, or 0 (only the read uses it). */
static int gpubuf_cu_stream(const struct gpubuf_cu *cu, int device,
			    enum gpubuf_cu_kernel k, CUdeviceptr ptr,
			    size_t bytes, CUdeviceptr sink, CUstream stream)
{
	unsigned long long words = bytes / 16;
	const struct gpubuf_cu_module *m;
	void *params[] = { &ptr, &words, &sink };
	unsigned int blocks;
	CUresult r;
	int err;

	if (bytes % 16 || ptr % 16 || (bytes && !ptr)) {
		gpubuf_error_set("stream kernels need 16-byte aligned words");
		return -EINVAL;
	}
	if (!words)
		return 0;
	err = gpubuf_cu_module_get(cu, device, &m);
	if (err)
		return err;
	/* Every SM full, but no block without a word to move. */
	blocks = gpubuf_cu_blocks(words, GPUBUF_CU_THREADS, m->sm_count *
				  (m->threads_per_sm / GPUBUF_CU_THREADS));
	r = cu->cuLaunchKernel(m->fn[k], blocks ? blocks : 1, 1, 1,
			       GPUBUF_CU_THREADS, 1, 1, 0, stream, params,
			       NULL);
	return r ? gpubuf_cu_fail(cu, r, "cuLaunchKernel") : 0;
}

GPUBUF_EXPORT int gpubuf_cu_stream_read(const struct gpubuf_cu *cu, int device,
					CUdeviceptr ptr, size_t bytes,
					CUdeviceptr sink, CUstream stream)
{
	return gpubuf_cu_stream(cu, device, GPUBUF_CU_READ, ptr, bytes, sink,
				stream);
}

GPUBUF_EXPORT int gpubuf_cu_stream_write(const struct gpubuf_cu *cu, int device,
					 CUdeviceptr ptr, size_t bytes,
					 CUstream stream)
{
	/* The write kernel takes two parameters; the third is ignored. */
	return gpubuf_cu_stream(cu, device, GPUBUF_CU_WRITE, ptr, bytes, 0,
				stream);
}

/* ---- GEMV / GEMM: launch ---------------------------------------------- */

/* Queue k on stream in device's primary context; NULL stream waits. */
static int gpubuf_cu_run(int device, enum gpubuf_cu_kernel k,
			 unsigned int gx, unsigned int gy, void **params,
			 void *stream)
{
	const struct gpubuf_cu *cu;
	CUcontext ctx;
	CUfunction fn;
	CUresult r;
	int err;

	err = gpubuf_cu_get_device(&cu, device);
	if (err)
		return err;
	err = gpubuf_cu_enter(cu, device, &ctx);
	if (err)
		return err;
	err = gpubuf_cu_kernel(cu, device, k, &fn);
	if (!err) {
		r = cu->cuLaunchKernel(fn, gx, gy, 1, GPUBUF_CU_THREADS, 1, 1,
				       0, (CUstream)stream, params, NULL);
		if (r != CUDA_SUCCESS)
			err = gpubuf_cu_fail(cu, r, "cuLaunchKernel");
	}
	/* Legacy stream 0 (see cuda.c): it also waits for blocking streams. */
	if (!err && !stream) {
		r = cu->cuStreamSynchronize(NULL);
		if (r != CUDA_SUCCESS)
			err = gpubuf_cu_fail(cu, r, "cuStreamSynchronize");
	}
	gpubuf_cu_leave(cu, device);
	return err;
}

GPUBUF_EXPORT int gpubuf_cuda_gemv(double alpha,
				   const struct gpubuf_cuda_matrix *a,
				   const struct gpubuf_cuda_matrix *x,
				   double beta,
				   const struct gpubuf_cuda_matrix *y,
				   void *stream)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_gemv_args g;
	void *params[GPUBUF_GEMV_NARGS];
	int err;

	gpubuf_error_clear();
	err = gpubuf_cuda_gemv_args(alpha, a, x, beta, y, &g);
	if (err || !g.m)
		return err;
	gpubuf_kargs_params(&g, GPUBUF_GEMV_NARGS, params);
	/* Rows per block: a warp's worth by columns, a row per warp else. */
	return gpubuf_cu_run(a->device, a->dtype == GPUBUF_DTYPE_F32 ?
			     GPUBUF_CU_GEMV_F32 : GPUBUF_CU_GEMV_F64,
			     (unsigned int)gpubuf_kargs_blocks(g.m,
				gpubuf_kargs_gemv_by_cols(&g) ? 32 : 8,
				GPUBUF_CU_GEMV_GRID_MAX),
			     1, params, stream);
}

GPUBUF_EXPORT int gpubuf_cuda_gemm(double alpha,
				   const struct gpubuf_cuda_matrix *a,
				   const struct gpubuf_cuda_matrix *b,
				   double beta,
				   const struct gpubuf_cuda_matrix *c,
				   void *stream)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_gemm_args g;
	void *params[GPUBUF_GEMM_NARGS];
	int err;

	gpubuf_error_clear();
	err = gpubuf_cuda_gemm_args(alpha, a, b, beta, c, &g);
	if (err || !g.m || !g.n)
		return err;
	gpubuf_kargs_params(&g, GPUBUF_GEMM_NARGS, params);
	/* Row tiles on x, column tiles on y; the kernel loops over the rest. */
	return gpubuf_cu_run(a->device, a->dtype == GPUBUF_DTYPE_F32 ?
			     GPUBUF_CU_GEMM_F32 : GPUBUF_CU_GEMM_F64,
			     (unsigned int)gpubuf_kargs_blocks(g.m,
				GPUBUF_CU_GEMM_TILE, GPUBUF_CU_GRID_X_MAX),
			     (unsigned int)gpubuf_kargs_blocks(g.n,
				GPUBUF_CU_GEMM_TILE, GPUBUF_CU_GRID_Y_MAX),
			     params, stream);
}

/*
 * Whether the embedded fatbin has code device can run, before a launch
 * would find out with -ENOEXEC: SASS built for sm_XY runs on compute
 * capability X.Y and the later minors of X; PTX for compute_P is compiled
 * by the driver for P and everything later; and the driver must speak the
 * toolkit's CUDA major version (CUDA 13's code needs a 580 or later
 * driver). 1, 0 with why, or -errno when the device cannot be asked.
 */
GPUBUF_EXPORT int gpubuf_cu_kernels_cover(const struct gpubuf_cu *cu,
					  int device, int *major, int *minor,
					  char *why, size_t len)
{
	const char *list = GPUBUF_XSTR(GPUBUF_CUDA_ARCH_LIST), *p;
	CUdevice dev;
	CUresult r;
	int ptx = 0;

	why[0] = '\0';
	r = cu->cuDeviceGet(&dev, device);
	if (r == CUDA_SUCCESS)
		r = cu->cuDeviceGetAttribute(major,
			CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	if (r == CUDA_SUCCESS)
		r = cu->cuDeviceGetAttribute(minor,
			CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
	if (r != CUDA_SUCCESS)
		return gpubuf_cu_fail(cu, r, "cuDeviceGetAttribute");
	if (cu->driver_version / 1000 < CUDA_VERSION / 1000) {
		snprintf(why, len, "the kernels were built by CUDA %d.%d and need a driver for CUDA %d (580 or later for 13); this one speaks %d.%d",
			 CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10,
			 CUDA_VERSION / 1000, cu->driver_version / 1000,
			 cu->driver_version % 1000 / 10);
		return 0;
	}
	/* "75/80/90+ptx90": SASS archs, then the PTX one. */
	for (p = list; *p; ) {
		int arch = atoi(p);

		if (arch / 10 == *major && arch % 10 <= *minor)
			return 1;
		p += strcspn(p, "/+");
		if (!strncmp(p, "+ptx", 4)) {
			ptx = atoi(p + 4);
			break;
		}
		if (*p)
			p++;
	}
	if (ptx && *major * 10 + *minor >= ptx)
		return 1;
	snprintf(why, len, "no code for sm_%d%d in the kernels (sm %s)", *major,
		 *minor, list);
	return 0;
}

#else /* !GPUBUF_HAVE_CUDA_KERNELS */

static int gpubuf_no_kernels(void)
{
	gpubuf_error_set("libgpubuf was built without nvcc: no CUDA kernels");
	return -EOPNOTSUPP;
}

int gpubuf_cu_kernel(const struct gpubuf_cu *cu, int device,
		     enum gpubuf_cu_kernel k, CUfunction *fn)
{
	(void)cu, (void)device, (void)k, (void)fn;
	return gpubuf_no_kernels();
}

GPUBUF_EXPORT int gpubuf_cu_kernels_load(const struct gpubuf_cu *cu,
					 int device)
{
	(void)cu, (void)device;
	return gpubuf_no_kernels();
}

GPUBUF_EXPORT int gpubuf_cu_kernels_cover(const struct gpubuf_cu *cu,
					  int device, int *major, int *minor,
					  char *why, size_t len)
{
	(void)cu, (void)device;
	*major = *minor = 0;
	snprintf(why, len, "libgpubuf was built without CUDA kernels (no nvcc)");
	return 0;
}

/* Without kernels there is nothing to unload. */
int gpubuf_cu_kernels_unload(const struct gpubuf_cu *cu, int device)
{
	(void)cu, (void)device;
	return 0;
}

GPUBUF_EXPORT int gpubuf_cu_stream_read(const struct gpubuf_cu *cu, int device,
					CUdeviceptr ptr, size_t bytes,
					CUdeviceptr sink, CUstream stream)
{
	(void)cu, (void)device, (void)ptr, (void)bytes, (void)sink,
	(void)stream;
	return gpubuf_no_kernels();
}

GPUBUF_EXPORT int gpubuf_cu_stream_write(const struct gpubuf_cu *cu, int device,
					 CUdeviceptr ptr, size_t bytes,
					 CUstream stream)
{
	(void)cu, (void)device, (void)ptr, (void)bytes, (void)stream;
	return gpubuf_no_kernels();
}

GPUBUF_EXPORT int gpubuf_cuda_gemv(double alpha,
				   const struct gpubuf_cuda_matrix *a,
				   const struct gpubuf_cuda_matrix *x,
				   double beta,
				   const struct gpubuf_cuda_matrix *y,
				   void *stream)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_gemv_args g;
	int err;

	(void)stream;
	gpubuf_error_clear();
	/* Bad operands get the errno they get in a build with kernels. */
	err = gpubuf_cuda_gemv_args(alpha, a, x, beta, y, &g);
	return err ? err : gpubuf_no_kernels();
}

GPUBUF_EXPORT int gpubuf_cuda_gemm(double alpha,
				   const struct gpubuf_cuda_matrix *a,
				   const struct gpubuf_cuda_matrix *b,
				   double beta,
				   const struct gpubuf_cuda_matrix *c,
				   void *stream)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_gemm_args g;
	int err;

	(void)stream;
	gpubuf_error_clear();
	err = gpubuf_cuda_gemm_args(alpha, a, b, beta, c, &g);
	return err ? err : gpubuf_no_kernels();
}

#endif /* GPUBUF_HAVE_CUDA_KERNELS */
