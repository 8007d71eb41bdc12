// SPDX-License-Identifier: MIT
/*
 * Description: an HSA queue error during gpubuf_hsa_gemv/gemm (issue 23,
 * defect 5). ROCr handles one as ROCR-Runtime's
 * src/core/runtime/amd_aql_queue.cpp, AqlQueue::DynamicScratchHandler,
 * does: it suspends the queue and calls the error callback given to
 * hsa_queue_create, if any; the faulting packet's completion signal
 * never drops, and nothing later on that queue runs. The stand-in does
 * the same (hsastub_fault_next(), stub_queue.c). Here: a synchronous
 * dispatch whose kernel faults returns -EIO naming the status instead
 * of waiting for ever; the failure of an asynchronous one is the next
 * call's -EIO, at once and without touching the queue; every dispatch
 * waiting on the queue when it fails gets -EIO; then the next dispatch
 * destroys the dead queue (its kernarg ring and signals too) and makes
 * a new one (or says why not, and the next call tries again), and the
 * other agent never notices.
 *
 * A library without the callback waits for ever on the stand-in as on
 * ROCr: every dispatch that could wait runs on a thread of its own, and
 * a test still waiting T_BOUND_S seconds after the error fails there
 * and then (exits its process: hsa_stub_test.h runs each test in one).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "hsa_stub_dispatch.h"

#ifndef GPUBUF_HAVE_HSA_KERNELS
#error "hsa_stub_fault needs a libgpubuf built with hipcc (HSA kernels)"
#endif

/*
 * The library notices a queue error within one wait round (20 ms); the
 * bound leaves room for a slow guest (QEMU TCG) and sanitizers.
 */
#define T_BOUND_S	10

static const size_t t_shape[3][2] = { { 8, 8 }, { 8, 1 }, { 8, 1 } };

/* One gpubuf_hsa_gemv on a thread of its own. */
struct t_call {
	struct t_ops *o;
	uint64_t signal;
	int err;
	char msg[256];		/* its gpubuf_last_error(): per thread */
	_Atomic int done;
	pthread_t th;
};

static void *t_gemv(void *arg)
{
	struct t_call *c = arg;

	c->err = gpubuf_hsa_gemv(1.0, &c->o->d[0], &c->o->d[1], 0.0,
				 &c->o->d[2], c->signal);
	snprintf(c->msg, sizeof(c->msg), "%s", gpubuf_last_error());
	atomic_store(&c->done, 1);
	return NULL;
}

static void t_nap_ms(long ms)
{
	nanosleep(&(struct timespec){ ms / 1000, ms % 1000 * 1000000 }, NULL);
}

/*
 * Join n calls, or give up after T_BOUND_S: a call still waiting cannot
 * be unwound, so the test fails by ending its process.
 */
static int t_join(struct t_call *c, int n)
{
	for (long ms = 0;; ms += 10) {
		int left = 0;

		for (int i = 0; i < n; i++)
			left += !atomic_load(&c[i].done);
		if (!left)
			break;
		if (ms >= T_BOUND_S * 1000L) {
			printf("# %d gpubuf_hsa_gemv call(s) still wait %d s after the queue error: they hang\n",
			       left, T_BOUND_S);
			fflush(stdout);
			_exit(1);
		}
		t_nap_ms(10);
	}
	for (int i = 0; i < n; i++)
		T_EQ(pthread_join(c[i].th, NULL), 0);
	return T_PASS;
}

static int t_start(struct t_call *c)
{
	T_EQ(pthread_create(&c->th, NULL, t_gemv, c), 0);
	return T_PASS;
}

/* The callback has run (on the stand-in's thread) n times in all. */
static int t_reported(unsigned long n)
{
	for (long ms = 0; dstub.faults_reported() < n; ms += 10) {
		T_CHECK(ms < T_BOUND_S * 1000L);
		t_nap_ms(10);
	}
	return T_PASS;
}

#define T_MSG_HAS(c, s)							\
	do {								\
		if (!strstr((c)->msg, (s))) {				\
			printf("# %s:%d: \"%s\" lacks \"%s\"\n", __FILE__, \
			       __LINE__, (c)->msg, (s));		\
			return T_FAIL;					\
		}							\
	} while (0)

/*
 * The regression test: the kernel of a synchronous GEMV faults (an
 * aperture violation); the call returns -EIO naming the queue and the
 * runtime's status instead of waiting for ever, and nothing is left of
 * it but the dead queue, which the next dispatch replaces.
 */
static int sync_dispatch_on_failed_queue_is_eio(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct t_call c = { 0 };
	struct t_ops o;

	T_DSTUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, t_shape,
			&o), T_PASS);
	dstub.fault_next(stub.gpu(0),
			 (hsa_status_t)HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION);
	c.o = &o;
	T_EQ(t_start(&c), T_PASS);
	T_EQ(t_join(&c, 1), T_PASS);
	T_EQ(c.err, -EIO);
	T_MSG_HAS(&c, "HSA queue of GPU agent 0 failed (0x29)");
	T_MSG_HAS(&c, "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: aperture (stand-in)");
	T_MSG_HAS(&c, "the next dispatch makes a new queue");
	T_EQ(dstub.faults_reported(), 1);
	T_EQ(dstub.dispatched(), 0);
	/* The next dispatch renews the queue and runs. */
	stub.reset_log();
	T_EQ(gpubuf_hsa_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], 0), 0);
	T_EQ(stub.calls("hsa_queue_destroy"), 1);
	T_EQ(stub.calls("hsa_queue_create"), 1);
	T_EQ(dstub.dispatched(), 1);
	T_LEFT(1);
	gpubuf_unref(o.buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * An asynchronous GEMV (the caller's signal) faults after the call
 * returned: the next call on that agent is -EIO at once, reserving no
 * packet and waiting for nothing; agent 1 goes on; the call after that
 * makes a new queue, and the dead one's kernarg ring and its signals
 * are gone with it (T_LEFT).
 */
static int async_failure_reported_then_queue_renewed(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct t_ops o, o1;
	hsa_signal_t sig;

	T_DSTUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, t_shape,
			&o), T_PASS);
	T_EQ(t_ops_make(ctx, 1, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, t_shape,
			&o1), T_PASS);
	T_EQ(dstub.signal_create(1, 0, NULL, &sig), HSA_STATUS_SUCCESS);
	dstub.fault_next(stub.gpu(0), HSA_STATUS_ERROR_EXCEPTION);
	T_EQ(gpubuf_hsa_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], sig.handle), 0);
	T_EQ(t_reported(1), T_PASS);
	stub.reset_log();
	T_EQ(gpubuf_hsa_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], 0), -EIO);
	T_ERR_HAS("HSA queue of GPU agent 0 failed (0x1016)");
	T_ERR_HAS("HSA_STATUS_ERROR_EXCEPTION: exception (stand-in)");
	T_EQ(stub.calls("hsa_queue_add_write_index_scacq_screl"), 0);
	T_EQ(stub.calls("hsa_signal_wait_scacquire"), 0);
	T_EQ(stub.calls("hsa_signal_create"), 0);
	/* The faulting kernel never completes the caller's signal. */
	T_EQ(dstub.signal_value(sig.handle), 1);
	T_EQ(gpubuf_hsa_gemv(1, &o1.d[0], &o1.d[1], 0, &o1.d[2], 0), 0);
	T_EQ(stub.calls("hsa_queue_destroy"), 0);
	T_EQ(gpubuf_hsa_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], 0), 0);
	T_EQ(gpubuf_last_error()[0], '\0');
	T_EQ(stub.calls("hsa_queue_destroy"), 1);
	T_EQ(stub.calls("hsa_queue_create"), 2);
	T_EQ(stub.calls("hsa_amd_memory_pool_free"), 1);
	T_EQ(dstub.dispatched(), 2);
	T_EQ(dstub.signal_destroy(sig), HSA_STATUS_SUCCESS);
	T_LEFT(2);
	gpubuf_unref(o.buf);
	gpubuf_unref(o1.buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * HSASTUB_FAIL=hsa_queue_create:2:...: the renewal after a reported
 * queue error cannot make a queue; that call says so and leaves no queue
 * and no kernarg ring, and the next call tries again.
 */
static int failed_renewal_is_retried(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct t_call c = { 0 };
	struct t_ops o;

	T_DSTUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, t_shape,
			&o), T_PASS);
	dstub.fault_next(stub.gpu(0), HSA_STATUS_ERROR_EXCEPTION);
	c.o = &o;
	T_EQ(t_start(&c), T_PASS);
	T_EQ(t_join(&c, 1), T_PASS);
	T_EQ(c.err, -EIO);
	T_EQ(gpubuf_hsa_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], 0), -ENOMEM);
	T_ERR_HAS("hsa_queue_create");
	T_EQ(dstub.live("queue"), 0);
	T_EQ(dstub.live("alloc"), 0);
	T_EQ(dstub.live("signal"), 0);
	T_EQ(gpubuf_hsa_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], 0), 0);
	T_EQ(stub.calls("hsa_queue_create"), 3);
	T_EQ(dstub.dispatched(), 1);
	T_LEFT(1);
	gpubuf_unref(o.buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

#define T_WAITERS	4

/*
 * HSASTUB_QUEUE_HOLD=1: four synchronous GEMVs wait on agent 0's queue
 * when its first packet faults: each returns -EIO, and the renewal waits
 * until all of them have left the old queue; one report, one new queue.
 */
static int every_waiter_gets_eio_then_one_renewal(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct t_call c[T_WAITERS] = { 0 };
	struct t_ops o[T_WAITERS];
	hsa_signal_t sig;

	T_DSTUB();
	for (int i = 0; i < T_WAITERS; i++) {
		T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F64, GPUBUF_ROW_MAJOR,
				t_shape, &o[i]), T_PASS);
		c[i].o = &o[i];
	}
	stub.reset_log();
	for (int i = 0; i < T_WAITERS; i++)
		T_EQ(t_start(&c[i]), T_PASS);
	/* Every packet handed over (a doorbell each), none run yet. */
	for (long ms = 0;
	     stub.calls("hsa_signal_store_screlease") < T_WAITERS; ms += 10) {
		T_CHECK(ms < T_BOUND_S * 1000L);
		t_nap_ms(10);
	}
	dstub.fault_next(stub.gpu(0), HSA_STATUS_ERROR_EXCEPTION);
	dstub.complete();
	T_EQ(t_join(c, T_WAITERS), T_PASS);
	for (int i = 0; i < T_WAITERS; i++) {
		T_EQ(c[i].err, -EIO);
		T_MSG_HAS(&c[i], "HSA queue of GPU agent 0 failed (0x1016)");
	}
	T_EQ(dstub.faults_reported(), 1);
	T_EQ(dstub.dispatched(), 0);
	/* Renewed once; its packets run when the test says (the hold). */
	T_EQ(dstub.signal_create(1, 0, NULL, &sig), HSA_STATUS_SUCCESS);
	T_EQ(gpubuf_hsa_gemv(1, &o[0].d[0], &o[0].d[1], 0, &o[0].d[2],
			     sig.handle), 0);
	T_EQ(stub.calls("hsa_queue_destroy"), 1);
	T_EQ(stub.calls("hsa_queue_create"), 2);	/* the load's, the new */
	dstub.complete();
	T_EQ(dstub.signal_value(sig.handle), 0);
	T_EQ(dstub.dispatched(), 2);
	T_EQ(dstub.signal_destroy(sig), HSA_STATUS_SUCCESS);
	/* The barrier's signal waits in its kernarg slot, as always. */
	T_EQ(dstub.live("signal"), 1);
	T_EQ(dstub.live("queue"), 1);
	T_EQ(dstub.live("alloc"), 1);
	for (int i = 0; i < T_WAITERS; i++)
		gpubuf_unref(o[i].buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

#define T_CASES(X)							\
	X(sync_dispatch_on_failed_queue_is_eio, "", T_ANY)		\
	X(async_failure_reported_then_queue_renewed, "", T_ANY)		\
	X(failed_renewal_is_retried,					\
	  "HSASTUB_FAIL=hsa_queue_create:2:HSA_STATUS_ERROR_OUT_OF_RESOURCES", \
	  T_ANY)							\
	X(every_waiter_gets_eio_then_one_renewal, "HSASTUB_QUEUE_HOLD=1", \
	  T_ANY)

T_STUB_MAIN(T_CASES)
