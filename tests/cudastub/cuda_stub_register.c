// SPDX-License-Identifier: MIT
/*
 * Description: libgpubuf's CUDA registration bookkeeping against a
 * stand-in driver (stub_*.c, through LD_LIBRARY_PATH; cuda_stub_test.h
 * runs each test in a fresh process): which driver calls registration,
 * unregistration and the last unref make, with which arguments and in
 * which context; counts per device on one registration; bad arguments
 * refused without a driver call; and retains and registrations ending
 * balanced, also with threads racing. Nothing here touches a GPU.
 */
#include <limits.h>
#include <pthread.h>
#include <sched.h>

#include "cuda_stub_test.h"

/* ---- registration ------------------------------------------------------- */

static int register_once_in_primary_context(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 3);
	void *p = gpubuf_ptr(buf);
	unsigned int rflags = 0;
	struct t_call c;
	uint64_t dp = 0;
	size_t rsize = 0;
	int rdev = -1;

	T_STUB();
	stub.reset_log();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	T_EQ(gpubuf_last_error()[0], '\0');
	T_EQ(dp, T_DEVPTR(0, p));
	T_EQ(stub.log_count("cuMemHostRegister"), 1);
	T_EQ(t_last("cuMemHostRegister", &c), 0);
	T_CHECK(c.ptr == p);
	T_EQ(c.size, gpubuf_size(buf));
	T_EQ(c.flags, T_PD);
	T_EQ(c.device, 0);	/* device 0's primary context was current */
	T_EQ(c.result, CUDA_SUCCESS);
	T_EQ(stub.registration(p, &rflags, &rsize, &rdev), 0);
	T_EQ(rflags, T_PD);
	T_EQ(rsize, gpubuf_size(buf));
	T_EQ(rdev, 0);
	T_EQ(stub.log_count("cuMemHostGetDevicePointer"), 1);
	T_EQ(t_last("cuMemHostGetDevicePointer", &c), 0);
	T_EQ(c.device, 0);
	T_EQ(stub.registered_bytes(), gpubuf_size(buf));
	/* The lifetime retain, the device count's and the registration's. */
	T_EQ(stub.retains(0), 3);
	T_EQ(stub.ctx_depth(), 0);

	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(stub.log_count("cuMemHostUnregister"), 1);
	T_EQ(t_last("cuMemHostUnregister", &c), 0);
	T_CHECK(c.ptr == p);
	T_EQ(c.device, 0);
	T_EQ(c.result, CUDA_SUCCESS);
	gpubuf_unref(buf);
	T_EQ(stub.log_count("cuMemHostUnregister"), 1);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int second_register_same_pointer_no_driver_call(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 2);
	uint64_t dp1 = 0, dp2 = 0, dp3 = 0;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp1), 0);
	stub.reset_log();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp2), 0);
	T_EQ(dp2, dp1);
	/* A writable registration serves a read-only request as it is. */
	T_EQ(gpubuf_cuda_register(buf, 0, GPUBUF_CUDA_REGISTER_READ_ONLY, &dp3),
	     0);
	T_EQ(dp3, dp1);
	T_EQ(stub.log_count("cuMemHostRegister"), 0);
	T_EQ(stub.log_count("cuMemHostGetDevicePointer"), 0);
	T_EQ(stub.log_count("cuDevicePrimaryCtxRetain"), 0);
	T_EQ(stub.retains(0), 3);
	for (int i = 0; i < 3; i++)
		T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int unregister_counts_down(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t dp;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	stub.reset_log();
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(stub.log_count("cuMemHostUnregister"), 0);
	T_EQ(stub.registrations(), 1);
	T_EQ(stub.retains(0), 3);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(stub.log_count("cuMemHostUnregister"), 1);
	T_EQ(stub.registrations(), 0);
	T_EQ(stub.retains(0), 1);	/* the lifetime retain stays */
	/* One more is one too many. */
	T_EQ(gpubuf_cuda_unregister(buf, 0), -ENXIO);
	T_ERR_HAS("not registered");
	T_EQ(stub.log_count("cuMemHostUnregister"), 1);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int unregister_unregistered_enxio(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *a = t_buf(ctx, 1), *b = t_buf(ctx, 1);
	uint64_t dp;

	T_STUB();
	stub.reset_log();
	T_EQ(gpubuf_cuda_unregister(a, 0), -ENXIO);
	T_ERR_HAS("not registered");
	T_EQ(stub.log_count("*"), 0);
	/* Another buffer's registration does not count for this one. */
	T_EQ(gpubuf_cuda_register(b, 0, 0, &dp), 0);
	T_EQ(gpubuf_cuda_unregister(a, 0), -ENXIO);
	T_ERR_HAS("not registered");
	T_EQ(stub.registrations(), 1);
	T_EQ(gpubuf_cuda_unregister(b, 0), 0);
	gpubuf_unref(a);
	gpubuf_unref(b);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int last_unref_unregisters(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 4);
	void *p = gpubuf_ptr(buf);
	struct t_call c;
	uint64_t dp;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	gpubuf_ref(buf);
	stub.reset_log();
	gpubuf_unref(buf);
	T_EQ(stub.log_count("cuMemHostUnregister"), 0);
	T_EQ(stub.registrations(), 1);
	/*
	 * The last one unregisters before it unmaps: the stand-in counts an
	 * unregistration of an unmapped range as misuse.
	 */
	gpubuf_unref(buf);
	T_EQ(stub.log_count("cuMemHostUnregister"), 1);
	T_EQ(t_last("cuMemHostUnregister", &c), 0);
	T_CHECK(c.ptr == p);
	T_EQ(c.result, CUDA_SUCCESS);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* CUSTUB_DEVICES=2 */
static int last_unref_registered_twice_two_devices(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 2);
	void *p = gpubuf_ptr(buf);
	struct t_call c;
	uint64_t dp;

	T_STUB();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	T_EQ(gpubuf_cuda_register(buf, 1, 0, &dp), 0);
	T_EQ(stub.retains(0), 3);
	T_EQ(stub.retains(1), 2);
	stub.reset_log();
	gpubuf_unref(buf);
	T_EQ(stub.log_count("cuMemHostUnregister"), 1);
	T_EQ(t_last("cuMemHostUnregister", &c), 0);
	T_CHECK(c.ptr == p);
	T_EQ(c.device, 0);	/* in the registering device's context */
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* CUSTUB_DEVICES=2 */
static int retains_follow_counts_and_registration(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *a = t_buf(ctx, 1), *b = t_buf(ctx, 2);
	unsigned int rflags;
	size_t rsize;
	uint64_t dp;
	int rdev = -1;

	T_STUB();
	/* a registers in device 1's context: one retain more there. */
	T_EQ(gpubuf_cuda_register(a, 1, 0, &dp), 0);
	T_EQ(stub.registration(gpubuf_ptr(a), &rflags, &rsize, &rdev), 0);
	T_EQ(rdev, 1);
	T_EQ(stub.retains(1), 3);
	T_EQ(stub.retains(0), 0);
	T_EQ(gpubuf_cuda_register(a, 0, 0, &dp), 0);
	T_EQ(dp, T_DEVPTR(0, gpubuf_ptr(a)));
	T_EQ(stub.retains(0), 2);
	T_EQ(gpubuf_cuda_register(b, 0, 0, &dp), 0);
	T_EQ(stub.retains(0), 4);
	T_EQ(stub.retains(1), 3);

	stub.reset_log();
	/* Device 1's count goes; the registration and its retain stay. */
	T_EQ(gpubuf_cuda_unregister(a, 1), 0);
	T_EQ(stub.log_count("cuMemHostUnregister"), 0);
	T_EQ(stub.retains(1), 2);
	T_EQ(stub.registrations(), 2);
	/* a's last count: undone in device 1's context, its retain dropped. */
	T_EQ(gpubuf_cuda_unregister(a, 0), 0);
	T_EQ(stub.log_count("cuMemHostUnregister"), 1);
	T_EQ(stub.retains(1), 1);
	T_EQ(stub.retains(0), 3);
	T_EQ(stub.registrations(), 1);
	gpubuf_unref(a);
	gpubuf_unref(b);
	T_EQ(stub.log_count("cuMemHostUnregister"), 2);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int device_out_of_range_enodev(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t dp = 7;

	T_STUB();
	stub.reset_log();
	T_EQ(gpubuf_cuda_register(buf, 1, 0, &dp), -ENODEV);
	T_ERR_HAS("no CUDA device 1");
	T_EQ(gpubuf_cuda_register(buf, -1, 0, &dp), -ENODEV);
	T_EQ(gpubuf_cuda_register(buf, INT_MAX, 0, &dp), -ENODEV);
	T_EQ(dp, 7);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	/* No count on a device that does not exist. */
	T_EQ(gpubuf_cuda_unregister(buf, 1), -ENXIO);
	T_EQ(gpubuf_cuda_unregister(buf, -1), -ENXIO);
	T_EQ(gpubuf_cuda_unregister(buf, INT_MAX), -ENXIO);
	T_EQ(stub.log_count("cuMemHostRegister"), 1);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int invalid_args_einval_no_driver_call(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	struct gpubuf_cuda_matrix cm;
	struct gpubuf_matrix m;
	uint64_t dp = 7;

	T_STUB();
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_F32, 2, 2, 2,
				GPUBUF_ROW_MAJOR, &m), 0);
	stub.reset_log();
	T_EQ(gpubuf_cuda_register(NULL, 0, 0, &dp), -EINVAL);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, NULL), -EINVAL);
	T_EQ(gpubuf_cuda_register(buf, 0, ~GPUBUF_CUDA_REGISTER_VALID_FLAGS,
				  &dp), -EINVAL);
	T_EQ(gpubuf_cuda_register(buf, 0, 1u << 31, &dp), -EINVAL);
	T_EQ(dp, 7);
	T_EQ(gpubuf_cuda_unregister(NULL, 0), -EINVAL);
	T_EQ(gpubuf_cuda_device_count(NULL), -EINVAL);
	T_EQ(gpubuf_cuda_matrix_view(NULL, 0, &cm), -EINVAL);
	T_EQ(gpubuf_cuda_matrix_view(&m, 0, NULL), -EINVAL);
	T_EQ(stub.log_count("*"), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* CUSTUB_DEVICES=2 */
static int two_devices_one_registration(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 3);
	void *p = gpubuf_ptr(buf);
	uint64_t dp0 = 0, dp1 = 0;
	struct t_call c;
	int n;

	T_STUB();
	T_EQ(gpubuf_cuda_device_count(&n), 0);
	T_EQ(n, 2);
	stub.reset_log();
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp0), 0);
	T_EQ(gpubuf_cuda_register(buf, 1, 0, &dp1), 0);
	T_EQ(dp0, T_DEVPTR(0, p));
	T_EQ(dp1, T_DEVPTR(1, p));
	T_CHECK(dp0 != dp1);
	T_EQ(stub.log_count("cuMemHostRegister"), 1);
	T_EQ(stub.log_count("cuMemHostGetDevicePointer"), 2);
	T_EQ(t_last("cuMemHostGetDevicePointer", &c), 0);
	T_EQ(c.device, 1);	/* asked in device 1's context */
	T_CHECK(c.ptr == p);
	T_EQ(stub.retains(0), 3);
	T_EQ(stub.retains(1), 2);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(stub.log_count("cuMemHostUnregister"), 0);
	T_EQ(gpubuf_cuda_unregister(buf, 1), 0);
	T_EQ(stub.log_count("cuMemHostUnregister"), 1);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * The library pushes and pops around its calls: a context the caller made
 * current is current again afterwards.
 */
static int caller_context_stays_current(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	PFN_cuDevicePrimaryCtxRetain_v7000 retain;
	PFN_cuDevicePrimaryCtxRelease_v11000 release;
	PFN_cuCtxPushCurrent_v4000 push;
	PFN_cuCtxPopCurrent_v4000 pop;
	CUdriverProcAddressQueryResult st;
	CUcontext mine, top = NULL;
	uint64_t dp;

	T_STUB();
	T_EQ(stub.get_proc("cuDevicePrimaryCtxRetain", (void **)&retain, 7000,
			   0, &st), CUDA_SUCCESS);
	T_EQ(stub.get_proc("cuDevicePrimaryCtxRelease", (void **)&release,
			   11000, 0, &st), CUDA_SUCCESS);
	T_EQ(stub.get_proc("cuCtxPushCurrent", (void **)&push, 4000, 0, &st),
	     CUDA_SUCCESS);
	T_EQ(stub.get_proc("cuCtxPopCurrent", (void **)&pop, 4000, 0, &st),
	     CUDA_SUCCESS);
	T_EQ(retain(&mine, 0), CUDA_SUCCESS);
	T_EQ(push(mine), CUDA_SUCCESS);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	T_EQ(stub.ctx_depth(), 1);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(stub.ctx_depth(), 1);
	T_EQ(stub.retains(0), 2);
	T_EQ(pop(&top), CUDA_SUCCESS);
	T_CHECK(top == mine);
	T_EQ(release(0), CUDA_SUCCESS);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * Issue 23, defect 7: the last unregister used to release the primary
 * context to nothing, so the driver destroyed it and the next register
 * made it again (slow on a large GPU). The library now keeps one retain
 * per device it used, until gpubuf_cuda_device_release().
 */
/* CUSTUB_DEVICES=2 */
static int context_kept_between_registrations(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t dp;

	T_STUB();
	for (int i = 0; i < 3; i++) {
		T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
		T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	}
	T_EQ(stub.ctx_creations(0), 1);
	T_EQ(stub.retains(0), 1);
	T_EQ(stub.ctx_creations(1), 0);	/* an unused device is not touched */
	T_EQ(stub.retains(1), 0);

	/* Given back: destroyed now, made again by the next registration. */
	T_EQ(gpubuf_cuda_device_release(0), 0);
	T_EQ(stub.retains(0), 0);
	T_EQ(gpubuf_cuda_device_release(0), 0);	/* nothing held: no call */
	T_EQ(gpubuf_cuda_device_release(1), 0);
	T_EQ(stub.retains(1), 0);
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	T_EQ(stub.ctx_creations(0), 2);
	T_EQ(stub.retains(0), 3);

	/* A registration keeps its own retains: releasing does not end it. */
	T_EQ(gpubuf_cuda_device_release(0), 0);
	T_EQ(stub.retains(0), 2);
	T_EQ(stub.registrations(), 1);
	/* Any later call on the device takes the lifetime retain again. */
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	T_EQ(stub.retains(0), 1);
	T_EQ(stub.ctx_creations(0), 2);

	T_EQ(gpubuf_cuda_device_release(-1), -ENODEV);
	T_EQ(gpubuf_cuda_device_release(2), -ENODEV);
	T_ERR_HAS("no CUDA device 2");
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* ---- threads ------------------------------------------------------------ */

struct t_thread {
	pthread_t id;
	struct gpubuf *buf;
	int device;
	int iters;
	int bad;	/* failed calls, wrong pointers, contexts left */
};

static void *t_hammer(void *arg)
{
	struct t_thread *t = arg;
	uint64_t want = T_DEVPTR(t->device, gpubuf_ptr(t->buf));

	for (int i = 0; i < t->iters; i++) {
		uint64_t dp = 0;

		if (gpubuf_cuda_register(t->buf, t->device, 0, &dp) ||
		    dp != want)
			t->bad++;
		if (i & 1)
			sched_yield();
		if (gpubuf_cuda_unregister(t->buf, t->device))
			t->bad++;
	}
	t->bad += stub.ctx_depth() != 0;
	return NULL;
}

static int t_hammer_all(struct gpubuf *buf, int nthreads, int iters)
{
	struct t_thread t[8];

	for (int i = 0; i < nthreads; i++) {
		t[i] = (struct t_thread){ .buf = buf, .device = i % 2,
					  .iters = iters };
		T_EQ(pthread_create(&t[i].id, NULL, t_hammer, &t[i]), 0);
	}
	for (int i = 0; i < nthreads; i++) {
		T_EQ(pthread_join(t[i].id, NULL), 0);
		T_EQ(t[i].bad, 0);
	}
	return T_PASS;
}

/* CUSTUB_DEVICES=2 */
static int concurrent_register_unregister_balanced(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 4);
	uint64_t dp;

	T_STUB();
	/* Held throughout: one registration for all of them. */
	T_EQ(gpubuf_cuda_register(buf, 0, 0, &dp), 0);
	stub.reset_log();
	T_EQ(t_hammer_all(buf, 8, 300), T_PASS);
	T_EQ(stub.log_count("cuMemHostRegister"), 0);
	T_EQ(stub.registrations(), 1);
	T_EQ(stub.retains(0), 3);
	T_EQ(stub.retains(1), 1);	/* the threads used device 1 too */
	T_EQ(gpubuf_cuda_unregister(buf, 0), 0);
	/* Not held: registrations come and go, and must pair up. */
	stub.reset_log();
	T_EQ(t_hammer_all(buf, 8, 300), T_PASS);
	T_EQ(stub.log_count("cuMemHostRegister"),
	     stub.log_count("cuMemHostUnregister"));
	T_EQ(stub.log_count("cuDevicePrimaryCtxRetain"),
	     stub.log_count("cuDevicePrimaryCtxRelease"));
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* ---- the tests, each run in a fresh process ----------------------------- */

/* name, environment ("K=V K=V") */
#define T_CASES(X)							\
	X(register_once_in_primary_context, "")				\
	X(second_register_same_pointer_no_driver_call, "")		\
	X(unregister_counts_down, "")					\
	X(unregister_unregistered_enxio, "")				\
	X(last_unref_unregisters, "")					\
	X(last_unref_registered_twice_two_devices, "CUSTUB_DEVICES=2")	\
	X(retains_follow_counts_and_registration, "CUSTUB_DEVICES=2")	\
	X(device_out_of_range_enodev, "")				\
	X(invalid_args_einval_no_driver_call, "")			\
	X(two_devices_one_registration, "CUSTUB_DEVICES=2")		\
	X(caller_context_stays_current, "")				\
	X(context_kept_between_registrations, "CUSTUB_DEVICES=2")	\
	X(concurrent_register_unregister_balanced, "CUSTUB_DEVICES=2")

T_STUB_MAIN(T_CASES)
