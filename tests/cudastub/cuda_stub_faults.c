// SPDX-License-Identifier: MIT
/*
 * Description: libgpubuf's CUDA layer against a stand-in driver that
 * falls short (stub_*.c, through LD_LIBRARY_PATH; cuda_stub_test.h runs
 * each test in a fresh process): no device, a failed cuInit, a missing
 * entry point, device attributes that rule registration out, and chosen
 * driver calls failing while buffers are registered and unregistered.
 * Every error comes back named, and nothing stays registered, retained
 * or current. Also: the loader asks for every entry point once, with the
 * version of its ABI. Nothing here touches a GPU.
 */
#include "cuda_stub_test.h"

/* ---- loading ------------------------------------------------------------ */

/* CUSTUB_DEVICES=3 */
static int loader_resolves_every_entry_once(void)
{
	int n = -1;

	T_STUB();
	T_EQ(gpubuf_cuda_device_count(&n), 0);
	T_EQ(n, 3);
	T_EQ(gpubuf_last_error()[0], '\0');
	T_EQ(gpubuf_cuda_device_count(&n), 0);
	/* First asked for with the version of its ABI, legacy streams. */
#define T_ASKED(name, version) T_EQ(stub.proc_version(#name), version);
	GPUBUF_CU_ENTRIES(T_ASKED)
#undef T_ASKED
	T_EQ(stub.proc_flags(), CU_GET_PROC_ADDRESS_LEGACY_STREAM);
	/* Once per process, whatever the number of calls. */
	T_EQ(stub.log_count("cuInit"), 1);
	T_EQ(stub.log_count("cuDeviceGetCount"), 1);
	T_CLEAN();
	return T_PASS;
}

/* CUSTUB_DEVICES=0 */
static int no_device_enodev(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t dp;
	int n;

	T_STUB();
	T_EQ(gpubuf_cuda_device_count(&n), -ENODEV);
	T_ERR_HAS("no CUDA device");
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), -ENODEV);
	T_EQ(stub.log_count("cuMemHostRegister"), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* CUSTUB_INIT=CUDA_ERROR_NO_DEVICE */
static int init_failure_every_call_enodev(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t dp = 7;
	int n = 7;

	T_STUB();
	T_EQ(gpubuf_cuda_device_count(&n), -ENODEV);
	T_EQ(n, 7);
	T_ERR_HAS("CUDA_ERROR_NO_DEVICE");
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), -ENODEV);
	T_ERR_HAS("CUDA_ERROR_NO_DEVICE");
	T_EQ(dp, 7);
	T_EQ(gpubuf_cuda_register(buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp),
	     -ENODEV);
	/* Not registered is -ENXIO, driver or none. */
	T_EQ(gpubuf_cuda_unregister(buf, 0), -ENXIO);
	T_ERR_HAS("not registered");
#ifdef GPUBUF_HAVE_CUDA_KERNELS
	{
		/* Valid operands anywhere in device memory. */
		struct gpubuf_cuda_matrix a = { 0x10000, 4, 4, 4,
			GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, 0, 0 };
		struct gpubuf_cuda_matrix x = { 0x20000, 4, 1, 1,
			GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, 0, 0 };
		struct gpubuf_cuda_matrix y = { 0x30000, 4, 1, 1,
			GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, 0, 0 };
		struct gpubuf_cuda_matrix c = { 0x40000, 4, 4, 4,
			GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, 0, 0 };

		T_EQ(gpubuf_cuda_gemv(1, &a, &x, 0, &y, NULL), -ENODEV);
		T_ERR_HAS("CUDA_ERROR_NO_DEVICE");
		T_EQ(gpubuf_cuda_gemm(1, &a, &a, 0, &c, NULL), -ENODEV);
		T_ERR_HAS("CUDA_ERROR_NO_DEVICE");
	}
#endif
	/* The failure is remembered, not retried. */
	T_EQ(stub.log_count("cuInit"), 1);
	T_EQ(stub.log_count("cuMemHostRegister"), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* CUSTUB_MISSING=cuMemHostGetDevicePointer */
static int missing_entry_point_named(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t dp;
	int n;

	T_STUB();
	T_EQ(gpubuf_cuda_device_count(&n), -ENODEV);
	T_ERR_HAS("cuMemHostGetDevicePointer");
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), -ENODEV);
	T_ERR_HAS("cuMemHostGetDevicePointer");
	/* An incomplete driver is not initialised at all. */
	T_EQ(stub.log_count("cuInit"), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* ---- driver failures ---------------------------------------------------- */

/* CUSTUB_FAIL=cuMemHostRegister:1:CUDA_ERROR_OUT_OF_MEMORY */
static int register_out_of_memory(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 2);
	uint64_t dp = 7;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), -ENOMEM);
	T_ERR_HAS("CUDA_ERROR_OUT_OF_MEMORY");
	T_EQ(dp, 7);
	T_EQ(stub.log_count("cuMemHostRegister"), 1);
	T_EQ(stub.registrations(), 0);
	T_EQ(stub.retains(0), 1);	/* the lifetime retain only */
	T_EQ(gpubuf_cuda_unregister(buf, 0), -ENXIO);
	/* Nothing stuck: the next attempt works. */
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	T_EQ(dp, T_DEVPTR(0, gpubuf_ptr(buf)));
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* CUSTUB_FAIL=cuMemHostGetDevicePointer:1:CUDA_ERROR_INVALID_VALUE */
static int device_pointer_failure_undoes_registration(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	struct t_call c;
	uint64_t dp;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), -EINVAL);
	T_ERR_HAS("CUDA_ERROR_INVALID_VALUE");
	T_EQ(stub.log_count("cuMemHostRegister"), 1);
	T_EQ(stub.log_count("cuMemHostUnregister"), 1);
	T_EQ(t_last("cuMemHostUnregister", &c), 0);
	T_CHECK(c.ptr == gpubuf_ptr(buf));
	T_EQ(c.result, CUDA_SUCCESS);
	T_EQ(stub.registrations(), 0);
	T_EQ(stub.retains(0), 1);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * CUSTUB_DEVICES=2
 * CUSTUB_FAIL=cuMemHostGetDevicePointer:2:CUDA_ERROR_OUT_OF_MEMORY
 */
static int device_pointer_failure_second_device(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t dp0, dp = 7;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp0), 0);
	T_EQ(gpubuf_cuda_register(buf, 1, 0, &dp), -ENOMEM);
	T_ERR_HAS("CUDA_ERROR_OUT_OF_MEMORY");
	T_EQ(dp, 7);
	/* Device 0's registration is untouched; device 1 holds nothing. */
	T_EQ(stub.registrations(), 1);
	T_EQ(stub.log_count("cuMemHostUnregister"), 0);
	T_EQ(stub.retains(0), 3);
	T_EQ(stub.retains(1), 1);	/* the lifetime retain only */
	T_EQ(gpubuf_cuda_unregister(buf, 1), -ENXIO);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	T_EQ(dp, dp0);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * CUSTUB_FAIL=cuDevicePrimaryCtxRetain:2:CUDA_ERROR_OUT_OF_MEMORY: the
 * library's lifetime retain, taken with the first retain on the device
 * (the one that makes the context current for cuMemHostRegister). Without
 * it nothing goes ahead: the kernel cache relies on it.
 */
static int lifetime_retain_failure_undoes(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t dp = 7;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), -ENOMEM);
	T_ERR_HAS("CUDA_ERROR_OUT_OF_MEMORY");
	T_EQ(dp, 7);
	T_EQ(stub.log_count("cuMemHostRegister"), 0);
	T_EQ(stub.log_count("cuDevicePrimaryCtxRetain"), 2);
	T_EQ(stub.registrations(), 0);
	T_EQ(stub.retains(0), 0);
	/* Tried again with the next call, which works. */
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	T_EQ(stub.retains(0), 3);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * CUSTUB_FAIL=cuDevicePrimaryCtxRetain:3:CUDA_ERROR_OUT_OF_MEMORY: the
 * registration's own retain (the first makes the context current for
 * cuMemHostRegister, the second is the library's lifetime retain).
 */
static int registration_retain_failure_undoes(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t dp;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), -ENOMEM);
	T_ERR_HAS("CUDA_ERROR_OUT_OF_MEMORY");
	T_EQ(stub.log_count("cuMemHostRegister"), 1);
	T_EQ(stub.log_count("cuMemHostUnregister"), 1);
	T_EQ(stub.log_count("cuDevicePrimaryCtxRetain"), 3);
	T_EQ(stub.registrations(), 0);
	T_EQ(stub.retains(0), 1);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * CUSTUB_FAIL=cuDevicePrimaryCtxRetain:4:CUDA_ERROR_OUT_OF_MEMORY: the
 * device count's retain, after the registration was made.
 */
static int count_retain_failure_undoes(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t dp;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), -ENOMEM);
	T_ERR_HAS("CUDA_ERROR_OUT_OF_MEMORY");
	T_EQ(stub.log_count("cuMemHostRegister"), 1);
	T_EQ(stub.log_count("cuMemHostUnregister"), 1);
	T_EQ(stub.registrations(), 0);
	T_EQ(stub.retains(0), 1);
	T_EQ(gpubuf_cuda_unregister(buf, 0), -ENXIO);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* CUSTUB_FAIL=cuCtxPushCurrent:1:CUDA_ERROR_INVALID_CONTEXT */
static int context_push_failure_balanced(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t dp;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), -EIO);
	T_ERR_HAS("CUDA_ERROR_INVALID_CONTEXT");
	T_EQ(stub.log_count("cuMemHostRegister"), 0);
	T_EQ(stub.retains(0), 1);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* CUSTUB_ATTR=0:HOST_REGISTER_SUPPORTED=0 */
static int no_host_register_support(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t dp = 7;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), -EOPNOTSUPP);
	T_ERR_HAS("device 0");
	T_EQ(gpubuf_cuda_register(buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp),
	     -EOPNOTSUPP);
	T_EQ(dp, 7);
	T_EQ(stub.log_count("cuMemHostRegister"), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* CUSTUB_ATTR=0:CAN_MAP_HOST_MEMORY=0 */
static int no_map_host_memory(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t dp;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), -EOPNOTSUPP);
	T_ERR_HAS("device 0");
	T_EQ(stub.log_count("cuMemHostRegister"), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * CUSTUB_DEVICES=2 CUSTUB_ATTR=1:CAN_MAP_HOST_MEMORY=0: a device that
 * cannot map host memory gets no device pointer, even to a registration
 * another device made.
 */
static int second_device_cannot_map(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t dp = 7, dp0;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp0), 0);
	T_EQ(gpubuf_cuda_register(buf, 1, 0, &dp), -EOPNOTSUPP);
	T_EQ(dp, 7);
	T_EQ(stub.retains(1), 0);
	T_EQ(stub.retains(0), 3);
	T_EQ(gpubuf_cuda_unregister(buf, 1), -ENXIO);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * CUSTUB_FAIL=cuCtxPushCurrent:3:CUDA_ERROR_INVALID_CONTEXT, the third
 * push being the one gpubuf_cu_unregister_all() makes, while someone else
 * (the application, or the kernel cache after a GEMV) retains device 0's
 * primary context, so the context and the registration in it survive.
 * The library must not lose track of a registration the driver still
 * has: after the buffer's last unref nothing of it may stay pinned, and
 * a new buffer mapped at the same address must register.
 *
 * A regression test: cuda.c used to free its bookkeeping although
 * cuMemHostUnregister never ran.
 */
static int failed_unregister_leaves_nothing_pinned(void)
{
	PFN_cuDevicePrimaryCtxRetain_v7000 retain;
	PFN_cuDevicePrimaryCtxRelease_v11000 release;
	CUdriverProcAddressQueryResult st;
	struct gpubuf_ctx *ctx;
	struct gpubuf *buf;
	CUcontext mine;
	uint64_t dp;
	void *p;
	int err;

	ctx = t_open();
	buf = t_buf(ctx, 2);
	T_STUB();
	T_EQ(stub.get_proc("cuDevicePrimaryCtxRetain", (void **)&retain, 7000,
			   0, &st), CUDA_SUCCESS);
	T_EQ(stub.get_proc("cuDevicePrimaryCtxRelease", (void **)&release,
			   11000, 0, &st), CUDA_SUCCESS);
	T_EQ(retain(&mine, 0), CUDA_SUCCESS);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	err = gpubuf_cuda_unregister(buf, 0);
	printf("# failed unregister: %d (%s)\n", err, gpubuf_last_error());
	p = gpubuf_ptr(buf);
	gpubuf_unref(buf);
	T_EQ(stub.registrations(), 0);
	buf = t_buf(ctx, 2);
	if (gpubuf_ptr(buf) == p)
		T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	gpubuf_unref(buf);
	T_EQ(release(0), CUDA_SUCCESS);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* ---- the tests, each run in a fresh process ----------------------------- */

/* name, environment ("K=V K=V") */
#define T_CASES(X)							\
	X(loader_resolves_every_entry_once, "CUSTUB_DEVICES=3")		\
	X(no_device_enodev, "CUSTUB_DEVICES=0")				\
	X(init_failure_every_call_enodev,				\
	  "CUSTUB_INIT=CUDA_ERROR_NO_DEVICE")				\
	X(missing_entry_point_named,					\
	  "CUSTUB_MISSING=cuMemHostGetDevicePointer")			\
	X(register_out_of_memory,					\
	  "CUSTUB_FAIL=cuMemHostRegister:1:CUDA_ERROR_OUT_OF_MEMORY")	\
	X(device_pointer_failure_undoes_registration,			\
	  "CUSTUB_FAIL=cuMemHostGetDevicePointer:1:CUDA_ERROR_INVALID_VALUE") \
	X(device_pointer_failure_second_device, "CUSTUB_DEVICES=2 "	\
	  "CUSTUB_FAIL=cuMemHostGetDevicePointer:2:CUDA_ERROR_OUT_OF_MEMORY") \
	X(lifetime_retain_failure_undoes,				\
	  "CUSTUB_FAIL=cuDevicePrimaryCtxRetain:2:CUDA_ERROR_OUT_OF_MEMORY") \
	X(registration_retain_failure_undoes,				\
	  "CUSTUB_FAIL=cuDevicePrimaryCtxRetain:3:CUDA_ERROR_OUT_OF_MEMORY") \
	X(count_retain_failure_undoes,					\
	  "CUSTUB_FAIL=cuDevicePrimaryCtxRetain:4:CUDA_ERROR_OUT_OF_MEMORY") \
	X(context_push_failure_balanced,				\
	  "CUSTUB_FAIL=cuCtxPushCurrent:1:CUDA_ERROR_INVALID_CONTEXT")	\
	X(no_host_register_support,					\
	  "CUSTUB_ATTR=0:HOST_REGISTER_SUPPORTED=0")			\
	X(no_map_host_memory, "CUSTUB_ATTR=0:CAN_MAP_HOST_MEMORY=0")	\
	X(second_device_cannot_map,					\
	  "CUSTUB_DEVICES=2 CUSTUB_ATTR=1:CAN_MAP_HOST_MEMORY=0")	\
	X(failed_unregister_leaves_nothing_pinned,			\
	  "CUSTUB_FAIL=cuCtxPushCurrent:3:CUDA_ERROR_INVALID_CONTEXT")

T_STUB_MAIN(T_CASES)
