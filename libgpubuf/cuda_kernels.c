// SPDX-License-Identifier: MIT
/*
 * The library's CUDA kernels (kernels/gpubuf_kernels.cu): a per-device
 * module cache, the streaming kernels gpubuf-bench times, and
 * gpubuf_cuda_gemv() / gpubuf_cuda_gemm().
 *
 * The fatbin is loaded once per device into its primary context, the
 * context every libgpubuf call works in. The cache holds one retain of
 * that context for the life of the process, so the module and its
 * function handles stay valid however the callers' own retains come and
 * go. A failed load leaves the slot empty and is tried again next time.
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

#include "cuda_driver.h"
#include "internal.h"

#ifdef GPUBUF_HAVE_CUDA_KERNELS

/* kernels/fatbin.S; the driver needs it 8-byte aligned, which it is. */
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

/* One device's kernels; immutable once mod is set, which is never undone. */
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

/* Load into the primary context, keeping a retain of it on success. */
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
	if (err) {
		gpubuf_cu_leave(cu, device);
		return err;
	}
	/* Pop only: enter's retain is the one the cache keeps. */
	cu->cuCtxPopCurrent(&ctx);
	return 0;
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

/* device's loaded module; the pointer stays valid for the process. */
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
	uint64_t b = items / per + (items % per != 0);

	return b > max ? max : (unsigned int)b;
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

int gpubuf_cu_stream_read(const struct gpubuf_cu *cu, int device,
			  CUdeviceptr ptr, size_t bytes, CUdeviceptr sink,
			  CUstream stream)
{
	return gpubuf_cu_stream(cu, device, GPUBUF_CU_READ, ptr, bytes, sink,
				stream);
}

int gpubuf_cu_stream_write(const struct gpubuf_cu *cu, int device,
			   CUdeviceptr ptr, size_t bytes, CUstream stream)
{
	/* The write kernel takes two parameters; the third is ignored. */
	return gpubuf_cu_stream(cu, device, GPUBUF_CU_WRITE, ptr, bytes, 0,
				stream);
}

/* ---- GEMV / GEMM: operand checks -------------------------------------- */

__attribute__((format(printf, 2, 3)))
static int gpubuf_cu_bad(int err, const char *fmt, ...)
{
	char text[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	gpubuf_error_set("%s", text);
	return err;
}

/* An operand as the kernels take it, and the bytes it spans. */
struct gpubuf_cu_op {
	uint64_t ptr;
	uint64_t rs, cs;	/* element strides of rows and columns */
	uint64_t lo, hi;	/* [lo, hi) spanned; lo == hi when empty */
};

/*
 * matrix.c's rules on a device view (layout, ld >= max(1, inner)), plus
 * f32 or f64, the dtype and device of the first operand (a, checked
 * first), an aligned non-zero devptr when there are elements, and an
 * extent within 64-bit addresses.
 */
static int gpubuf_cu_operand(const char *fn, const char *name,
			     const struct gpubuf_cuda_matrix *m,
			     const struct gpubuf_cuda_matrix *first,
			     struct gpubuf_cu_op *op)
{
	uint64_t last, t, es;
	bool row;

	if (!m)
		return gpubuf_cu_bad(-EINVAL, "%s: %s is NULL", fn, name);
	if (m->dtype != GPUBUF_DTYPE_F32 && m->dtype != GPUBUF_DTYPE_F64)
		return gpubuf_cu_bad(-EINVAL, "%s: %s dtype %d is not f32 or f64",
				     fn, name, (int)m->dtype);
	if (m->dtype != first->dtype || m->device != first->device)
		return gpubuf_cu_bad(-EINVAL,
				     "%s: %s differs from a in dtype or device",
				     fn, name);
	if (m->layout != GPUBUF_ROW_MAJOR && m->layout != GPUBUF_COL_MAJOR)
		return gpubuf_cu_bad(-EINVAL, "%s: %s has no valid layout",
				     fn, name);
	row = m->layout == GPUBUF_ROW_MAJOR;
	es = gpubuf_dtype_size(m->dtype);
	if (m->ld < 1 || m->ld < (row ? m->cols : m->rows))
		return gpubuf_cu_bad(-EINVAL, "%s: %s has ld %zu < %zu", fn,
				     name, m->ld, row ? m->cols : m->rows);
	op->ptr = op->lo = op->hi = m->devptr;
	op->rs = row ? m->ld : 1;
	op->cs = row ? 1 : m->ld;
	if (!m->rows || !m->cols)
		return 0;
	/* A misaligned access would fault and poison the context. */
	if (!m->devptr || m->devptr % es)
		return gpubuf_cu_bad(-EINVAL,
				     "%s: %s devptr 0x%llx is 0 or misaligned",
				     fn, name, (unsigned long long)m->devptr);
	/* hi = devptr + ((rows - 1) * rs + (cols - 1) * cs + 1) * es */
	if (__builtin_mul_overflow(m->rows - 1, op->rs, &last) ||
	    __builtin_mul_overflow(m->cols - 1, op->cs, &t) ||
	    __builtin_add_overflow(last, t, &last) ||
	    __builtin_add_overflow(last, 1, &t) ||
	    __builtin_mul_overflow(t, es, &t) ||
	    __builtin_add_overflow(t, m->devptr, &op->hi))
		return gpubuf_cu_bad(-EOVERFLOW,
				     "%s: %s extends past 64-bit addresses",
				     fn, name);
	return 0;
}

/* An operand with one row or one column of len elements, and its step. */
static int gpubuf_cu_vector(const char *fn, const char *name,
			    const struct gpubuf_cuda_matrix *v,
			    const struct gpubuf_cuda_matrix *first, size_t len,
			    struct gpubuf_cu_op *op, uint64_t *inc)
{
	int err = gpubuf_cu_operand(fn, name, v, first, op);

	if (err)
		return err;
	if (v->rows != 1 && v->cols != 1)
		return gpubuf_cu_bad(-EINVAL, "%s: %s is %zux%zu, not a vector",
				     fn, name, v->rows, v->cols);
	/* One factor is 1: the product cannot overflow. */
	if (v->rows * v->cols != len)
		return gpubuf_cu_bad(-EINVAL,
				     "%s: %s has %zu elements, not %zu", fn,
				     name, v->rows * v->cols, len);
	*inc = v->cols == 1 ? op->rs : op->cs;
	return 0;
}

/* Byte ranges, so conservative for interleaved strided views. */
static int gpubuf_cu_no_overlap(const char *fn, const struct gpubuf_cu_op *out,
				const struct gpubuf_cu_op *in1,
				const struct gpubuf_cu_op *in2)
{
	const struct gpubuf_cu_op *in[] = { in1, in2 };

	for (int i = 0; i < 2; i++)
		if (out->lo < out->hi && in[i]->lo < in[i]->hi &&
		    out->lo < in[i]->hi && in[i]->lo < out->hi)
			return gpubuf_cu_bad(-EINVAL,
					     "%s: the output overlaps an input",
					     fn);
	return 0;
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

static int gpubuf_cu_gemv_check(const struct gpubuf_cuda_matrix *a,
				const struct gpubuf_cuda_matrix *x,
				const struct gpubuf_cuda_matrix *y,
				struct gpubuf_cu_op *oa,
				struct gpubuf_cu_op *ox, uint64_t *incx,
				struct gpubuf_cu_op *oy, uint64_t *incy)
{
	static const char fn[] = "gpubuf_cuda_gemv";
	int err;

	err = gpubuf_cu_operand(fn, "a", a, a, oa);
	if (!err)
		err = gpubuf_cu_vector(fn, "x", x, a, a->cols, ox, incx);
	if (!err)
		err = gpubuf_cu_vector(fn, "y", y, a, a->rows, oy, incy);
	if (!err && (y->flags & GPUBUF_CUDA_MATRIX_READ_ONLY))
		err = gpubuf_cu_bad(-EROFS, "%s: y is registered read-only", fn);
	if (!err)
		err = gpubuf_cu_no_overlap(fn, oy, oa, ox);
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
	struct gpubuf_cu_op oa, ox, oy;
	uint64_t m, k, incx, incy, per;
	void *params[] = { &m, &k, &alpha, &oa.ptr, &oa.rs, &oa.cs, &ox.ptr,
			   &incx, &beta, &oy.ptr, &incy };
	int err;

	gpubuf_error_clear();
	err = gpubuf_cu_gemv_check(a, x, y, &oa, &ox, &incx, &oy, &incy);
	if (err || !a->rows)
		return err;
	m = a->rows;
	k = a->cols;
	/* Rows per block, as gpubuf_gemv_by_cols() in the kernel decides. */
	per = oa.rs < oa.cs || (oa.rs == oa.cs && k < m) ? 32 : 8;
	return gpubuf_cu_run(a->device, a->dtype == GPUBUF_DTYPE_F32 ?
			     GPUBUF_CU_GEMV_F32 : GPUBUF_CU_GEMV_F64,
			     gpubuf_cu_blocks(m, per, GPUBUF_CU_GEMV_GRID_MAX),
			     1, params, stream);
}

static int gpubuf_cu_gemm_check(const struct gpubuf_cuda_matrix *a,
				const struct gpubuf_cuda_matrix *b,
				const struct gpubuf_cuda_matrix *c,
				struct gpubuf_cu_op *oa,
				struct gpubuf_cu_op *ob,
				struct gpubuf_cu_op *oc)
{
	static const char fn[] = "gpubuf_cuda_gemm";
	int err;

	err = gpubuf_cu_operand(fn, "a", a, a, oa);
	if (!err)
		err = gpubuf_cu_operand(fn, "b", b, a, ob);
	if (!err)
		err = gpubuf_cu_operand(fn, "c", c, a, oc);
	if (err)
		return err;
	if (b->rows != a->cols || c->rows != a->rows || c->cols != b->cols)
		return gpubuf_cu_bad(-EINVAL,
				     "%s: shapes %zux%zu * %zux%zu -> %zux%zu do not fit",
				     fn, a->rows, a->cols, b->rows, b->cols,
				     c->rows, c->cols);
	if (c->flags & GPUBUF_CUDA_MATRIX_READ_ONLY)
		return gpubuf_cu_bad(-EROFS, "%s: c is registered read-only", fn);
	return gpubuf_cu_no_overlap(fn, oc, oa, ob);
}

GPUBUF_EXPORT int gpubuf_cuda_gemm(double alpha,
				   const struct gpubuf_cuda_matrix *a,
				   const struct gpubuf_cuda_matrix *b,
				   double beta,
				   const struct gpubuf_cuda_matrix *c,
				   void *stream)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_cu_op oa, ob, oc;
	uint64_t m, n, k;
	void *params[] = { &m, &n, &k, &alpha, &oa.ptr, &oa.rs, &oa.cs,
			   &ob.ptr, &ob.rs, &ob.cs, &beta, &oc.ptr, &oc.rs,
			   &oc.cs };
	int err;

	gpubuf_error_clear();
	err = gpubuf_cu_gemm_check(a, b, c, &oa, &ob, &oc);
	if (err || !c->rows || !c->cols)
		return err;
	m = a->rows;
	n = b->cols;
	k = a->cols;
	/* Row tiles on x, column tiles on y; the kernel loops over the rest. */
	return gpubuf_cu_run(a->device, a->dtype == GPUBUF_DTYPE_F32 ?
			     GPUBUF_CU_GEMM_F32 : GPUBUF_CU_GEMM_F64,
			     gpubuf_cu_blocks(m, GPUBUF_CU_GEMM_TILE,
					      GPUBUF_CU_GRID_X_MAX),
			     gpubuf_cu_blocks(n, GPUBUF_CU_GEMM_TILE,
					      GPUBUF_CU_GRID_Y_MAX),
			     params, stream);
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

int gpubuf_cu_stream_read(const struct gpubuf_cu *cu, int device,
			  CUdeviceptr ptr, size_t bytes, CUdeviceptr sink,
			  CUstream stream)
{
	(void)cu, (void)device, (void)ptr, (void)bytes, (void)sink,
	(void)stream;
	return gpubuf_no_kernels();
}

int gpubuf_cu_stream_write(const struct gpubuf_cu *cu, int device,
			   CUdeviceptr ptr, size_t bytes, CUstream stream)
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
	(void)alpha, (void)a, (void)x, (void)beta, (void)y, (void)stream;
	gpubuf_error_clear();
	return gpubuf_no_kernels();
}

GPUBUF_EXPORT int gpubuf_cuda_gemm(double alpha,
				   const struct gpubuf_cuda_matrix *a,
				   const struct gpubuf_cuda_matrix *b,
				   double beta,
				   const struct gpubuf_cuda_matrix *c,
				   void *stream)
{
	(void)alpha, (void)a, (void)b, (void)beta, (void)c, (void)stream;
	gpubuf_error_clear();
	return gpubuf_no_kernels();
}

#endif /* GPUBUF_HAVE_CUDA_KERNELS */
