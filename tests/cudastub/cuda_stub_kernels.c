// SPDX-License-Identifier: MIT
/*
 * Description: the GEMV and GEMM launches of cuda_kernels.c against a
 * stand-in driver (stub_*.c, through LD_LIBRARY_PATH; cuda_stub_test.h
 * runs each test in a fresh process): one module per device, kept for
 * the process; the kernel, grid and every parameter as given, in the
 * operands' device's context; a wait only on the NULL stream; and bad
 * operands or failed driver calls coming back as errors with nothing
 * launched or kept. The stand-in runs no kernel: nothing here touches a
 * GPU.
 */
#include "cuda_stub_test.h"

/* ---- kernels (cuda_kernels.c) ------------------------------------------- */

#ifdef GPUBUF_HAVE_CUDA_KERNELS
#define T_NEED_KERNELS() do { } while (0)
#else
#define T_NEED_KERNELS() return t_skip("libgpubuf built without nvcc: no kernels")
#endif

/* The parameter lists of gpubuf_kernels.cu: all 8-byte values. */
#define T_GEMV_PARAMS 11
#define T_GEMM_PARAMS 14

static void t_declare_params(void)
{
	stub.kernel_params("gpubuf_gemv_f32", T_GEMV_PARAMS);
	stub.kernel_params("gpubuf_gemv_f64", T_GEMV_PARAMS);
	stub.kernel_params("gpubuf_gemm_f32", T_GEMM_PARAMS);
	stub.kernel_params("gpubuf_gemm_f64", T_GEMM_PARAMS);
}

/* Three matrices in one buffer registered on device, and their views. */
struct t_ops {
	struct gpubuf *buf;
	struct gpubuf_cuda_matrix d[3];
};

static int t_ops_make(struct gpubuf_ctx *ctx, int device,
		      enum gpubuf_dtype dt, enum gpubuf_layout lay,
		      const size_t shape[3][2], struct t_ops *o)
{
	size_t es = gpubuf_dtype_size(dt), off[3], total = 0;
	struct gpubuf_matrix m;
	uint64_t dp;

	for (int i = 0; i < 3; i++) {
		off[i] = total;
		total += (shape[i][0] * shape[i][1] * es + 255) & ~(size_t)255;
	}
	o->buf = t_buf(ctx, (total + t_ps() - 1) / t_ps());
	T_EQ(gpubuf_cuda_register(o->buf, device, 0, &dp), 0);
	for (int i = 0; i < 3; i++) {
		size_t ld = lay == GPUBUF_ROW_MAJOR ? shape[i][1] : shape[i][0];

		T_EQ(gpubuf_matrix_view(o->buf, off[i], dt, shape[i][0],
					shape[i][1], ld, lay, &m), 0);
		T_EQ(gpubuf_cuda_matrix_view(&m, device, &o->d[i]), 0);
	}
	return T_PASS;
}

static void t_ops_drop(struct t_ops *o)
{
	gpubuf_unref(o->buf);
	o->buf = NULL;
}

/*
 * The last launch: kernel in device's context on stream, at least
 * min_gx x min_gy blocks, a valid block, and all nparams parameters.
 */
static int t_launched(const char *kernel, int device, void *stream,
		      unsigned int min_gx, unsigned int min_gy, int nparams)
{
	unsigned int g[3], b[3], shmem;
	int np, dev, res;
	char name[64];
	void *s;

	T_EQ(stub.last_launch(name, sizeof(name), g, b, &shmem, &s, &np, &dev,
			      &res), 0);
	if (strcmp(name, kernel)) {
		printf("# launched %s, expected %s\n", name, kernel);
		return T_FAIL;
	}
	T_EQ(res, CUDA_SUCCESS);
	T_EQ(dev, device);
	T_CHECK(s == stream);
	T_CHECK(g[0] >= min_gx);
	T_CHECK(g[1] >= min_gy);
	T_EQ(g[2], 1);
	T_CHECK(b[0] && b[1] && b[2] &&
		(unsigned long long)b[0] * b[1] * b[2] <= 1024);
	T_EQ(np, nparams);
	return T_PASS;
}

static unsigned long long t_param(int i)
{
	unsigned long long v = ~0ull;

	stub.last_param(i, &v);
	return v;
}

static unsigned long long t_bits(double d)
{
	unsigned long long v;

	memcpy(&v, &d, sizeof(v));
	return v;
}

/*
 * y = alpha A x + beta y, synchronous: the module once, the f32 or f64
 * kernel with every operand passed as given, a grid of at least one block
 * per 32 rows (a block covers 8 or 32), then stream 0 waited for.
 */
static int gemv_launch_synchronous(void)
{
	static const size_t shape[3][2] = { { 100, 70 }, { 70, 1 }, { 100, 1 } };
	struct gpubuf_ctx *ctx = t_open();
	struct t_ops o;
	void *s = (void *)1;

	T_NEED_KERNELS();
	T_STUB();
	t_declare_params();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, shape, &o),
	     T_PASS);
	stub.reset_log();
	T_EQ(gpubuf_cuda_gemv(2.0, &o.d[0], &o.d[1], 0.5, &o.d[2], NULL), 0);
	T_EQ(gpubuf_last_error()[0], '\0');
	T_EQ(stub.log_count("cuModuleLoadData"), 1);
	T_EQ(stub.module_loads(0), 1);
	T_EQ(stub.log_count("cuLaunchKernel"), 1);
	T_EQ(t_launched("gpubuf_gemv_f32", 0, NULL, (100 + 31) / 32, 1,
			T_GEMV_PARAMS), T_PASS);
	/* m, k, alpha, a, a's row and column strides, x, incx, beta, y, incy */
	T_EQ(t_param(0), 100);
	T_EQ(t_param(1), 70);
	T_EQ(t_param(2), t_bits(2.0));
	T_EQ(t_param(3), o.d[0].devptr);
	T_EQ(t_param(4), 70);
	T_EQ(t_param(5), 1);
	T_EQ(t_param(6), o.d[1].devptr);
	T_EQ(t_param(7), 1);
	T_EQ(t_param(8), t_bits(0.5));
	T_EQ(t_param(9), o.d[2].devptr);
	T_EQ(t_param(10), 1);
	T_EQ(stub.log_count("cuStreamSynchronize"), 1);
	T_EQ(stub.last_stream("cuStreamSynchronize", &s), 0);
	T_CHECK(s == NULL);
	T_EQ(stub.ctx_depth(), 0);

	/* Loaded once: the second call only launches. */
	T_EQ(gpubuf_cuda_gemv(1.0, &o.d[0], &o.d[1], 0.0, &o.d[2], NULL), 0);
	T_EQ(stub.log_count("cuModuleLoadData"), 1);
	T_EQ(stub.log_count("cuLaunchKernel"), 2);
	T_EQ(stub.log_count("cuStreamSynchronize"), 2);
	t_ops_drop(&o);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* C = alpha A B + beta C: one 64x64 tile per block at least. */
static int gemm_launch_covers_output(void)
{
	static const size_t shape[3][2] = {
		{ 100, 70 }, { 70, 130 }, { 100, 130 } };
	struct gpubuf_ctx *ctx = t_open();
	struct t_ops o;

	T_NEED_KERNELS();
	T_STUB();
	t_declare_params();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F64, GPUBUF_COL_MAJOR, shape, &o),
	     T_PASS);
	stub.reset_log();
	T_EQ(gpubuf_cuda_gemm(1.5, &o.d[0], &o.d[1], -1.0, &o.d[2], NULL), 0);
	T_EQ(t_launched("gpubuf_gemm_f64", 0, NULL, (100 + 63) / 64,
			(130 + 63) / 64, T_GEMM_PARAMS), T_PASS);
	/* m, n, k, alpha, a, ars, acs, b, brs, bcs, beta, c, crs, ccs */
	T_EQ(t_param(0), 100);
	T_EQ(t_param(1), 130);
	T_EQ(t_param(2), 70);
	T_EQ(t_param(3), t_bits(1.5));
	T_EQ(t_param(4), o.d[0].devptr);
	T_EQ(t_param(5), 1);
	T_EQ(t_param(6), 100);
	T_EQ(t_param(7), o.d[1].devptr);
	T_EQ(t_param(10), t_bits(-1.0));
	T_EQ(t_param(11), o.d[2].devptr);
	T_EQ(stub.log_count("cuStreamSynchronize"), 1);
	/* Same module for every kernel. */
	T_EQ(gpubuf_cuda_gemv(1.0, &o.d[0], &o.d[1], 0.0, &o.d[0], NULL) ,
	     -EINVAL);
	T_EQ(stub.module_loads(0), 1);
	t_ops_drop(&o);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* A caller's stream: launched on it, not waited for. */
static int launch_on_stream_not_synchronised(void)
{
	static const size_t shape[3][2] = { { 16, 8 }, { 8, 1 }, { 16, 1 } };
	struct gpubuf_ctx *ctx = t_open();
	PFN_cuDevicePrimaryCtxRetain_v7000 retain;
	PFN_cuDevicePrimaryCtxRelease_v11000 release;
	PFN_cuCtxPushCurrent_v4000 push;
	PFN_cuCtxPopCurrent_v4000 pop;
	PFN_cuStreamCreate_v2000 screate;
	PFN_cuStreamDestroy_v4000 sdestroy;
	CUdriverProcAddressQueryResult st;
	CUcontext pctx;
	CUstream stream;
	struct t_ops o;

	T_NEED_KERNELS();
	T_STUB();
	t_declare_params();
	T_EQ(stub.get_proc("cuDevicePrimaryCtxRetain", (void **)&retain, 7000,
			   0, &st), CUDA_SUCCESS);
	T_EQ(stub.get_proc("cuDevicePrimaryCtxRelease", (void **)&release,
			   11000, 0, &st), CUDA_SUCCESS);
	T_EQ(stub.get_proc("cuCtxPushCurrent", (void **)&push, 4000, 0, &st),
	     CUDA_SUCCESS);
	T_EQ(stub.get_proc("cuCtxPopCurrent", (void **)&pop, 4000, 0, &st),
	     CUDA_SUCCESS);
	T_EQ(stub.get_proc("cuStreamCreate", (void **)&screate, 2000, 0, &st),
	     CUDA_SUCCESS);
	T_EQ(stub.get_proc("cuStreamDestroy", (void **)&sdestroy, 4000, 0,
			   &st), CUDA_SUCCESS);
	/* A stream of device 0's primary context, as the API asks. */
	T_EQ(retain(&pctx, 0), CUDA_SUCCESS);
	T_EQ(push(pctx), CUDA_SUCCESS);
	T_EQ(screate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	T_EQ(pop(&pctx), CUDA_SUCCESS);

	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F64, GPUBUF_ROW_MAJOR, shape, &o),
	     T_PASS);
	stub.reset_log();
	T_EQ(gpubuf_cuda_gemv(1.0, &o.d[0], &o.d[1], 0.0, &o.d[2], stream), 0);
	T_EQ(t_launched("gpubuf_gemv_f64", 0, stream, 1, 1, T_GEMV_PARAMS),
	     T_PASS);
	T_EQ(stub.log_count("cuStreamSynchronize"), 0);
	T_EQ(gpubuf_cuda_gemm(1.0, &o.d[1], &o.d[1], 0.0, &o.d[0], stream),
	     -EINVAL);
	T_EQ(stub.log_count("cuStreamSynchronize"), 0);
	T_EQ(stub.ctx_depth(), 0);

	T_EQ(push(pctx), CUDA_SUCCESS);
	T_EQ(sdestroy(stream), CUDA_SUCCESS);
	T_EQ(pop(&pctx), CUDA_SUCCESS);
	T_EQ(release(0), CUDA_SUCCESS);
	t_ops_drop(&o);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* CUSTUB_DEVICES=2: a module per device, each launch in its own context. */
static int module_loaded_once_per_device(void)
{
	static const size_t shape[3][2] = { { 64, 64 }, { 64, 64 }, { 64, 64 } };
	struct gpubuf_ctx *ctx = t_open();
	struct t_ops o0, o1;

	T_NEED_KERNELS();
	T_STUB();
	t_declare_params();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, shape, &o0),
	     T_PASS);
	T_EQ(t_ops_make(ctx, 1, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, shape, &o1),
	     T_PASS);
	for (int i = 0; i < 3; i++) {
		T_EQ(gpubuf_cuda_gemm(1, &o0.d[0], &o0.d[1], 0, &o0.d[2], NULL),
		     0);
		T_EQ(t_launched("gpubuf_gemm_f32", 0, NULL, 1, 1,
				T_GEMM_PARAMS), T_PASS);
		T_EQ(gpubuf_cuda_gemm(1, &o1.d[0], &o1.d[1], 0, &o1.d[2], NULL),
		     0);
		T_EQ(t_launched("gpubuf_gemm_f32", 1, NULL, 1, 1,
				T_GEMM_PARAMS), T_PASS);
	}
	T_EQ(stub.module_loads(0), 1);
	T_EQ(stub.module_loads(1), 1);
	T_EQ(stub.log_count("cuModuleLoadData"), 2);
	/* An operand of device 1 with the others on device 0. */
	o0.d[2].device = 1;
	stub.reset_log();
	T_EQ(gpubuf_cuda_gemm(1, &o0.d[0], &o0.d[1], 0, &o0.d[2], NULL),
	     -EINVAL);
	T_EQ(stub.log_count("*"), 0);
	t_ops_drop(&o0);
	t_ops_drop(&o1);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * The cache's retain keeps device 0's primary context, and so the module,
 * alive when every registration is gone; the stand-in would see a stale
 * module otherwise.
 */
static int module_outlives_registrations(void)
{
	static const size_t shape[3][2] = { { 8, 8 }, { 8, 1 }, { 8, 1 } };
	struct gpubuf_ctx *ctx = t_open();
	struct t_ops o;

	T_NEED_KERNELS();
	T_STUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_COL_MAJOR, shape, &o),
	     T_PASS);
	T_EQ(gpubuf_cuda_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], NULL), 0);
	t_ops_drop(&o);
	T_EQ(stub.registrations(), 0);
	T_EQ(stub.retains(0), 1);
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_COL_MAJOR, shape, &o),
	     T_PASS);
	T_EQ(gpubuf_cuda_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], NULL), 0);
	T_EQ(stub.module_loads(0), 1);
	t_ops_drop(&o);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * Bad operands are refused before the driver is loaded, and once it is,
 * without any driver call.
 */
static int invalid_operands_no_driver_call(void)
{
	static const size_t shape[3][2] = { { 4, 3 }, { 3, 1 }, { 4, 1 } };
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_cuda_matrix a = { 0x10000, 4, 3, 3, GPUBUF_DTYPE_F32,
					GPUBUF_ROW_MAJOR, 0, 0 };
	struct gpubuf_cuda_matrix x = { 0x20000, 3, 1, 1, GPUBUF_DTYPE_F32,
					GPUBUF_ROW_MAJOR, 0, 0 };
	struct gpubuf_cuda_matrix y = { 0x30000, 4, 1, 1, GPUBUF_DTYPE_F32,
					GPUBUF_ROW_MAJOR, 0, 0 };
	struct gpubuf_cuda_matrix t;
	struct t_ops o;
	void *h;

	T_NEED_KERNELS();
	t = x;
	t.rows = 4;	/* x must have a's column count */
	T_EQ(gpubuf_cuda_gemv(1, &a, &t, 0, &y, NULL), -EINVAL);
	T_EQ(gpubuf_cuda_gemm(1, &a, &a, 0, &a, NULL), -EINVAL);
	T_EQ(gpubuf_cuda_gemv(1, NULL, &x, 0, &y, NULL), -EINVAL);
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	T_CHECK(h == NULL);

	T_STUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, shape, &o),
	     T_PASS);
	a = o.d[0], x = o.d[1], y = o.d[2];
	stub.reset_log();
#define T_BAD_GEMV(field, value)					\
	do {								\
		struct gpubuf_cuda_matrix a2 = a, x2 = x, y2 = y;	\
		field = value;						\
		T_EQ(gpubuf_cuda_gemv(1, &a2, &x2, 0, &y2, NULL), -EINVAL); \
		T_CHECK(gpubuf_last_error()[0]);			\
	} while (0)
	T_BAD_GEMV(x2.rows, 4);
	T_BAD_GEMV(y2.rows, 3);
	T_BAD_GEMV(x2.dtype, GPUBUF_DTYPE_F64);
	T_BAD_GEMV(a2.dtype, GPUBUF_DTYPE_I32);
	T_BAD_GEMV(a2.layout, (enum gpubuf_layout)7);
	T_BAD_GEMV(a2.ld, 2);
	T_BAD_GEMV(y2.devptr, a.devptr);	/* output overlaps a */
	T_BAD_GEMV(x2.devptr, x.devptr + 1);	/* misaligned */
	T_BAD_GEMV(y2.device, 1);
	T_BAD_GEMV(x2.cols, 2);			/* not a vector */
#undef T_BAD_GEMV
	T_EQ(gpubuf_cuda_gemv(1, &a, &x, 0, NULL, NULL), -EINVAL);
	/* 4x3 * 4x1: inner dimensions differ. */
	T_EQ(gpubuf_cuda_gemm(1, &a, &y, 0, &y, NULL), -EINVAL);
	T_EQ(gpubuf_cuda_gemm(1, &a, &x, 0, &a, NULL), -EINVAL);
	T_EQ(stub.log_count("*"), 0);
	/* Valid, on a device that does not exist. */
	a.device = x.device = y.device = 3;
	T_EQ(gpubuf_cuda_gemv(1, &a, &x, 0, &y, NULL), -ENODEV);
	T_EQ(stub.log_count("cuLaunchKernel"), 0);
	T_EQ(stub.log_count("cuModuleLoadData"), 0);
	t_ops_drop(&o);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * CUSTUB_FAIL=cuModuleLoadData:1:CUDA_ERROR_INVALID_IMAGE: the error
 * comes back, nothing is launched or kept, and the next call loads.
 */
static int module_load_failure_retried(void)
{
	static const size_t shape[3][2] = { { 8, 8 }, { 8, 1 }, { 8, 1 } };
	struct gpubuf_ctx *ctx = t_open();
	struct t_ops o;

	T_NEED_KERNELS();
	T_STUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, shape, &o),
	     T_PASS);
	T_EQ(gpubuf_cuda_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], NULL),
	     -ENOEXEC);
	T_ERR_HAS("CUDA_ERROR_INVALID_IMAGE");
	T_EQ(stub.log_count("cuLaunchKernel"), 0);
	T_EQ(stub.log_count("cuStreamSynchronize"), 0);
	T_EQ(stub.ctx_depth(), 0);
	T_EQ(stub.retains(0), 3);	/* the registration's and the lifetime one */
	T_EQ(gpubuf_cuda_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], NULL), 0);
	T_EQ(stub.log_count("cuModuleLoadData"), 2);
	T_EQ(stub.module_loads(0), 1);
	t_ops_drop(&o);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * CUSTUB_FAIL=cuModuleGetFunction:3:CUDA_ERROR_NOT_FOUND: a module
 * missing a kernel is unloaded, not kept.
 */
static int missing_kernel_unloads_module(void)
{
	static const size_t shape[3][2] = { { 8, 8 }, { 8, 1 }, { 8, 1 } };
	struct gpubuf_ctx *ctx = t_open();
	struct t_ops o;

	T_NEED_KERNELS();
	T_STUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, shape, &o),
	     T_PASS);
	T_EQ(gpubuf_cuda_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], NULL), -EIO);
	T_ERR_HAS("CUDA_ERROR_NOT_FOUND");
	T_EQ(stub.log_count("cuModuleUnload"), 1);
	T_EQ(stub.log_count("cuLaunchKernel"), 0);
	T_EQ(stub.retains(0), 3);
	T_EQ(gpubuf_cuda_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], NULL), 0);
	t_ops_drop(&o);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * CUSTUB_FAIL=cuLaunchKernel:1:CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: the
 * error comes back and there is nothing to wait for.
 */
static int launch_failure_not_synchronised(void)
{
	static const size_t shape[3][2] = { { 8, 8 }, { 8, 8 }, { 8, 8 } };
	struct gpubuf_ctx *ctx = t_open();
	struct t_ops o;

	T_NEED_KERNELS();
	T_STUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F64, GPUBUF_ROW_MAJOR, shape, &o),
	     T_PASS);
	T_EQ(gpubuf_cuda_gemm(1, &o.d[0], &o.d[1], 0, &o.d[2], NULL), -ENOMEM);
	T_ERR_HAS("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
	T_EQ(stub.log_count("cuStreamSynchronize"), 0);
	T_EQ(stub.ctx_depth(), 0);
	T_EQ(gpubuf_cuda_gemm(1, &o.d[0], &o.d[1], 0, &o.d[2], NULL), 0);
	T_EQ(stub.log_count("cuStreamSynchronize"), 1);
	t_ops_drop(&o);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* ---- the tests, each run in a fresh process ----------------------------- */

/* name, environment ("K=V K=V") */
#define T_CASES(X)							\
	X(gemv_launch_synchronous, "")					\
	X(gemm_launch_covers_output, "")				\
	X(launch_on_stream_not_synchronised, "")			\
	X(module_loaded_once_per_device, "CUSTUB_DEVICES=2")		\
	X(module_outlives_registrations, "")				\
	X(invalid_operands_no_driver_call, "")				\
	X(module_load_failure_retried,					\
	  "CUSTUB_FAIL=cuModuleLoadData:1:CUDA_ERROR_INVALID_IMAGE")	\
	X(missing_kernel_unloads_module,				\
	  "CUSTUB_FAIL=cuModuleGetFunction:3:CUDA_ERROR_NOT_FOUND")	\
	X(launch_failure_not_synchronised,				\
	  "CUSTUB_FAIL=cuLaunchKernel:1:CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")

T_STUB_MAIN(T_CASES)
