// SPDX-License-Identifier: MIT
/*
 * Description: gpubuf_hsa_gemv/gemm's AQL dispatch against the stand-in
 * runtime (stub_dispatch.c, stub_queue.c; hsa_stub_test.h runs each test
 * in a fresh process): the code object whose processor is the agent's,
 * loaded once per agent across threads; every packet field (header type,
 * barrier, system-scope fences, dimensions, work-group and grid sizes in
 * work-items, kernel object, segment sizes, kernarg bytes equal to the
 * operands' agent pointers, strides and dimensions); a synchronous wait
 * on a signal of the library's own versus the caller's signal; an ISA
 * without a code object; every runtime failure unwound with nothing left
 * behind. The stand-in runs no kernel: nothing here touches a GPU.
 */
#include <pthread.h>

#include "hsa_stub_dispatch.h"

/* The Makefile builds this only with code objects to dispatch. */
#ifndef GPUBUF_HAVE_HSA_KERNELS
#error "hsa_stub_dispatch needs a libgpubuf built with hipcc (HSA kernels)"
#endif

/* ---- packets ------------------------------------------------------------- */

/*
 * Synchronous GEMV, row-major on gfx90a (64-lane wavefronts): a wavefront
 * per row, 4 rows per group, so ceil(100 / 4) groups of 256 work-items.
 */
static int gemv_packet_fields(void)
{
	static const size_t shape[3][2] = { { 100, 70 }, { 70, 1 }, { 100, 1 } };
	struct gpubuf_ctx *ctx = t_open();
	hsa_kernel_dispatch_packet_t p;
	uint64_t ka[16], agent;
	struct t_ops o;

	T_DSTUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, shape, &o),
	     T_PASS);
	stub.reset_log();
	T_EQ(gpubuf_hsa_gemv(2.0, &o.d[0], &o.d[1], 0.5, &o.d[2], 0), 0);
	T_EQ(gpubuf_last_error()[0], '\0');
	T_EQ(dstub.dispatched(), 1);
	T_EQ(dstub.packet(0, &p, ka, &agent), 0);
	T_EQ(agent, stub.gpu(0));
	T_EQ(t_header_ok(&p, 1), T_PASS);
	T_EQ(p.grid_size_x, (100 + 3) / 4 * 256);
	T_EQ(p.grid_size_y, 1);
	T_EQ(p.kernel_object, dstub.kernel_object(stub.gpu(0),
						  "gpubuf_gemv_f32.kd"));
	T_CHECK(p.kernel_object != 0);
	T_EQ(p.group_segment_size, 1024);
	T_CHECK(dstub.is_kernarg(p.kernarg_address, stub.gpu(0)));
	T_EQ((uintptr_t)p.kernarg_address % 16, 0);
	/* m k alpha a rs cs x incx beta y incy */
	T_EQ(ka[0], 100);
	T_EQ(ka[1], 70);
	T_EQ(ka[2], t_bits(2.0));
	T_EQ(ka[3], o.d[0].agent_ptr);
	T_EQ(ka[4], 70);
	T_EQ(ka[5], 1);
	T_EQ(ka[6], o.d[1].agent_ptr);
	T_EQ(ka[7], 1);
	T_EQ(ka[8], t_bits(0.5));
	T_EQ(ka[9], o.d[2].agent_ptr);
	T_EQ(ka[10], 1);
	/* A signal of its own, waited for and destroyed. */
	T_EQ(stub.calls("hsa_signal_create"), 1);
	T_CHECK(stub.calls("hsa_signal_wait_scacquire") >= 1);
	T_EQ(stub.calls("hsa_signal_destroy"), 1);
	T_EQ(stub.calls("hsa_code_object_reader_create_from_memory"), 1);
	T_LEFT(1);

	/* Loaded once: the second call only dispatches. */
	T_EQ(gpubuf_hsa_gemv(1.0, &o.d[0], &o.d[1], 0.0, &o.d[2], 0), 0);
	T_EQ(dstub.dispatched(), 2);
	T_EQ(stub.calls("hsa_code_object_reader_create_from_memory"), 1);
	T_EQ(stub.calls("hsa_queue_create"), 1);
	T_LEFT(1);
	gpubuf_unref(o.buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* GEMM on agent 1: 64x64 tiles, row tiles on x, column tiles on y. */
static int gemm_packet_two_dimensions(void)
{
	static const size_t shape[3][2] = {
		{ 100, 70 }, { 70, 130 }, { 100, 130 } };
	struct gpubuf_ctx *ctx = t_open();
	hsa_kernel_dispatch_packet_t p;
	uint64_t ka[16], agent;
	struct t_ops o;

	T_DSTUB();
	T_EQ(t_ops_make(ctx, 1, GPUBUF_DTYPE_F64, GPUBUF_COL_MAJOR, shape, &o),
	     T_PASS);
	T_EQ(gpubuf_hsa_gemm(1.5, &o.d[0], &o.d[1], -1.0, &o.d[2], 0), 0);
	T_EQ(dstub.packet(-1, &p, ka, &agent), 0);
	T_EQ(agent, stub.gpu(1));
	T_EQ(t_header_ok(&p, 2), T_PASS);
	T_EQ(p.grid_size_x, 2 * 256);
	T_EQ(p.grid_size_y, 3);
	T_EQ(p.kernel_object, dstub.kernel_object(stub.gpu(1),
						  "gpubuf_gemm_f64.kd"));
	T_EQ(p.group_segment_size, 16640);
	T_CHECK(dstub.is_kernarg(p.kernarg_address, stub.gpu(1)));
	/* m n k alpha a ars acs b brs bcs beta c crs ccs */
	T_EQ(ka[0], 100);
	T_EQ(ka[1], 130);
	T_EQ(ka[2], 70);
	T_EQ(ka[3], t_bits(1.5));
	T_EQ(ka[4], o.d[0].agent_ptr);
	T_EQ(ka[5], 1);
	T_EQ(ka[6], 100);
	T_EQ(ka[7], o.d[1].agent_ptr);
	T_EQ(ka[8], 1);
	T_EQ(ka[9], 70);
	T_EQ(ka[10], t_bits(-1.0));
	T_EQ(ka[11], o.d[2].agent_ptr);
	T_EQ(ka[12], 1);
	T_EQ(ka[13], 100);
	/* Agent 0 was never used: nothing loaded for it. */
	T_EQ(dstub.kernel_object(stub.gpu(0), "gpubuf_gemm_f64.kd"), 0);
	T_LEFT(1);
	gpubuf_unref(o.buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * HSASTUB_ISA=...gfx1030 (32-lane wavefronts): the gfx1030 object is the
 * one loaded (the stand-in refuses another processor's), and a
 * column-major GEMV takes a wavefront of rows per group: ceil(100 / 32).
 */
static int gfx1030_object_and_wave32_grid(void)
{
	static const size_t shape[3][2] = { { 100, 70 }, { 70, 1 }, { 100, 1 } };
	struct gpubuf_ctx *ctx = t_open();
	hsa_kernel_dispatch_packet_t p;
	uint64_t ka[16], agent;
	struct t_ops o;

	T_DSTUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F64, GPUBUF_COL_MAJOR, shape, &o),
	     T_PASS);
	T_EQ(gpubuf_hsa_gemv(1.0, &o.d[0], &o.d[1], 0.0, &o.d[2], 0), 0);
	T_EQ(dstub.packet(-1, &p, ka, &agent), 0);
	T_EQ(t_header_ok(&p, 1), T_PASS);
	T_EQ(p.grid_size_x, (100 + 31) / 32 * 256);
	T_EQ(p.group_segment_size, 2048);
	T_EQ(ka[4], 1);		/* column-major: rows adjacent */
	T_EQ(ka[5], 100);
	T_LEFT(1);
	gpubuf_unref(o.buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* HSASTUB_GRID_MAX=4096: at most 16 groups of 256, the kernels grid-stride. */
static int grid_clamped_to_agent_maximum(void)
{
	static const size_t shape[3][2] = {
		{ 1000, 8 }, { 8, 1000 }, { 1000, 1000 } };
	struct gpubuf_ctx *ctx = t_open();
	hsa_kernel_dispatch_packet_t p;
	uint64_t ka[16], agent;
	struct t_ops o;

	T_DSTUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, shape, &o),
	     T_PASS);
	T_EQ(gpubuf_hsa_gemm(1.0, &o.d[0], &o.d[1], 0.0, &o.d[2], 0), 0);
	T_EQ(dstub.packet(-1, &p, ka, &agent), 0);
	T_EQ(p.grid_size_x, 16 * 256);
	T_EQ(p.grid_size_y, 1);
	T_CHECK((uint64_t)p.grid_size_x * p.grid_size_y <= 4096);
	T_EQ(ka[0], 1000);	/* the whole problem still */
	gpubuf_unref(o.buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * HSASTUB_QUEUE_HOLD=1: with the caller's signal the call returns once
 * the packets are handed over and waits for nothing: the kernel completes
 * the caller's signal, and a barrier-AND packet behind it (barrier bit,
 * no dependencies) completes a signal of the library's own, which tells
 * the kernarg slot's next user that the kernel is done.
 */
static int caller_signal_not_waited(void)
{
	static const size_t shape[3][2] = { { 8, 8 }, { 8, 1 }, { 8, 1 } };
	struct gpubuf_ctx *ctx = t_open();
	hsa_kernel_dispatch_packet_t p;
	hsa_barrier_and_packet_t bar;
	uint64_t ka[16], agent;
	hsa_signal_t sig;
	struct t_ops o;

	T_DSTUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, shape, &o),
	     T_PASS);
	T_EQ(dstub.signal_create(2, 0, NULL, &sig), HSA_STATUS_SUCCESS);
	stub.reset_log();
	T_EQ(gpubuf_hsa_gemv(1.0, &o.d[0], &o.d[1], 0.0, &o.d[2], sig.handle), 0);
	T_EQ(gpubuf_hsa_gemm(1.0, &o.d[0], &o.d[0], 0.0, &o.d[0], sig.handle),
	     -EINVAL);
	T_EQ(stub.calls("hsa_signal_wait_scacquire"), 0);
	T_EQ(stub.calls("hsa_signal_destroy"), 0);
	T_EQ(dstub.dispatched(), 0);
	T_EQ(dstub.signal_value(sig.handle), 2);
	T_EQ(gpubuf_hsa_gemv(1.0, &o.d[0], &o.d[1], 0.0, &o.d[2], sig.handle), 0);
	T_EQ(stub.calls("hsa_signal_create"), 2);
	T_EQ(dstub.signal_value(sig.handle), 2);
	dstub.complete();
	T_EQ(dstub.dispatched(), 4);
	T_EQ(dstub.signal_value(sig.handle), 0);
	for (int i = 0; i < 4; i += 2) {
		T_EQ(dstub.packet(i, &p, ka, &agent), 0);
		T_EQ(t_header_ok(&p, 1), T_PASS);
		T_EQ(p.completion_signal.handle, sig.handle);
		T_EQ(dstub.packet(i + 1, (hsa_kernel_dispatch_packet_t *)&bar, ka,
				  &agent), 0);
		T_EQ((bar.header >> HSA_PACKET_HEADER_TYPE) & 0xff,
		     HSA_PACKET_TYPE_BARRIER_AND);
		T_EQ((bar.header >> HSA_PACKET_HEADER_BARRIER) & 1, 1);
		T_EQ((bar.header >> HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE) & 3,
		     HSA_FENCE_SCOPE_SYSTEM);
		for (int d = 0; d < 5; d++)
			T_EQ(bar.dep_signal[d].handle, 0);
		T_CHECK(bar.completion_signal.handle != sig.handle);
		T_EQ(dstub.signal_value(bar.completion_signal.handle), 0);
	}
	T_EQ(dstub.signal_destroy(sig), HSA_STATUS_SUCCESS);
	/* The library's two signals wait in their kernarg slots. */
	T_EQ(dstub.live("signal"), 2);
	gpubuf_unref(o.buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * 300 dispatches on the caller's signal, then synchronous ones: the
 * 128-slot kernarg ring wraps, each slot's previous kernel is waited for
 * and its signal destroyed exactly once, so at most one library signal
 * per slot is ever alive, and the caller's signal counts every kernel.
 */
static int async_slots_recycled(void)
{
	static const size_t shape[3][2] = { { 8, 8 }, { 8, 1 }, { 8, 1 } };
	struct gpubuf_ctx *ctx = t_open();
	hsa_kernel_dispatch_packet_t p;
	uint64_t ka[16], agent;
	hsa_signal_t sig;
	struct t_ops o;

	T_DSTUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F64, GPUBUF_ROW_MAJOR, shape, &o),
	     T_PASS);
	T_EQ(dstub.signal_create(300, 0, NULL, &sig), HSA_STATUS_SUCCESS);
	for (int i = 0; i < 300; i++) {
		T_EQ(gpubuf_hsa_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2],
				     sig.handle), 0);
		T_CHECK(dstub.live("signal") <= 128 + 1);
	}
	T_EQ(dstub.signal_value(sig.handle), 0);
	/* 600 packets: slot of id = id mod 128, the kernels' ids even. */
	T_EQ(dstub.live("signal"), 64 + 1);
	T_EQ(stub.calls("hsa_signal_destroy"), 300 - 64);
	for (int i = 0; i < 200; i++)
		T_EQ(gpubuf_hsa_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], 0), 0);
	T_EQ(dstub.packet(-1, &p, ka, &agent), 0);
	T_EQ(ka[3], o.d[0].agent_ptr);
	T_EQ(dstub.signal_destroy(sig), HSA_STATUS_SUCCESS);
	/* Every slot's signal was taken over and destroyed by a sync call. */
	T_EQ(dstub.live("signal"), 0);
	gpubuf_unref(o.buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* ---- threads --------------------------------------------------------------- */

#define T_THREADS	8
#define T_ROUNDS	40

struct t_worker {
	struct t_ops *o;
	int err;
};

static void *t_work(void *arg)
{
	struct t_worker *w = arg;

	for (int i = 0; i < T_ROUNDS && !w->err; i++)
		w->err = gpubuf_hsa_gemv(1.0, &w->o->d[0], &w->o->d[1], 0.0,
					 &w->o->d[2], 0);
	return NULL;
}

/*
 * 8 threads, 4 per agent, 320 synchronous dispatches in all: each agent
 * loads once, the 64-packet queues and their kernarg rings wrap several
 * times, and every packet carries its own thread's operands.
 */
static int threads_share_one_load_per_agent(void)
{
	static const size_t shape[3][2] = { { 16, 8 }, { 8, 1 }, { 16, 1 } };
	struct gpubuf_ctx *ctx = t_open();
	struct t_ops o[T_THREADS];
	struct t_worker w[T_THREADS];
	pthread_t th[T_THREADS];

	T_DSTUB();
	for (int i = 0; i < T_THREADS; i++) {
		T_EQ(t_ops_make(ctx, i % 2, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR,
				shape, &o[i]), T_PASS);
		w[i] = (struct t_worker){ &o[i], 0 };
	}
	stub.reset_log();
	for (int i = 0; i < T_THREADS; i++)
		T_EQ(pthread_create(&th[i], NULL, t_work, &w[i]), 0);
	for (int i = 0; i < T_THREADS; i++) {
		T_EQ(pthread_join(th[i], NULL), 0);
		T_EQ(w[i].err, 0);
	}
	T_EQ(dstub.dispatched(), T_THREADS * T_ROUNDS);
	T_EQ(stub.calls("hsa_executable_load_agent_code_object"), 2);
	T_EQ(stub.calls("hsa_queue_create"), 2);
	/* The last 256 packets: a's pointer belongs to the packet's agent. */
	for (long i = T_THREADS * T_ROUNDS - 256; i < T_THREADS * T_ROUNDS; i++) {
		hsa_kernel_dispatch_packet_t p;
		uint64_t ka[16], agent;
		int owner = -1;

		T_EQ(dstub.packet(i, &p, ka, &agent), 0);
		for (int t = 0; t < T_THREADS; t++)
			if (ka[3] == o[t].d[0].agent_ptr &&
			    ka[6] == o[t].d[1].agent_ptr &&
			    ka[9] == o[t].d[2].agent_ptr)
				owner = t;
		T_CHECK(owner >= 0);
		T_EQ(agent, stub.gpu(owner % 2));
		T_EQ(ka[0], 16);
	}
	T_LEFT(2);
	for (int i = 0; i < T_THREADS; i++)
		gpubuf_unref(o[i].buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* ---- refusals and failures ---------------------------------------------- */

/*
 * HSASTUB_ISA=...gfx942: no embedded object for it; -ENOEXEC naming both
 * sides, nothing loaded or dispatched, and the same answer again.
 */
static int isa_without_code_object_is_enoexec(void)
{
	static const size_t shape[3][2] = { { 8, 8 }, { 8, 1 }, { 8, 1 } };
	struct gpubuf_ctx *ctx = t_open();
	struct t_ops o;

	T_DSTUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, shape, &o),
	     T_PASS);
	for (int i = 0; i < 2; i++) {
		T_EQ(gpubuf_hsa_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], 0),
		     -ENOEXEC);
		T_ERR_HAS("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-");
		T_ERR_HAS("gfx908/gfx90a/gfx1030");
	}
	T_EQ(stub.calls("hsa_code_object_reader_create_from_memory"), 0);
	T_EQ(dstub.dispatched(), 0);
	T_LEFT(0);
	gpubuf_unref(o.buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * One failing runtime call per process (HSASTUB_FAIL=fn:1:S): the errno
 * in T_WANT comes back with the call named, everything made so far is
 * undone (T_KEPT agents' state survives: a failure after the load), no
 * packet is handed over, and the next call, which the fault spares,
 * dispatches.
 */
static int runtime_failure_unwinds(void)
{
	static const size_t shape[3][2] = { { 8, 8 }, { 8, 1 }, { 8, 1 } };
	struct gpubuf_ctx *ctx = t_open();
	const char *fail = getenv("T_FN"), *want = getenv("T_WANT");
	const char *kept = getenv("T_KEPT");
	struct t_ops o;

	T_CHECK(fail && want);
	T_DSTUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, shape, &o),
	     T_PASS);
	T_EQ(gpubuf_hsa_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], 0), atoi(want));
	T_ERR_HAS(fail);
	T_EQ(dstub.dispatched(), 0);
	T_LEFT(kept ? atoi(kept) : 0);
	T_EQ(gpubuf_hsa_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], 0), 0);
	T_EQ(dstub.dispatched(), 1);
	T_LEFT(1);
	gpubuf_unref(o.buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* HSASTUB_NO_FINE_POOL=1: no kernarg pool, -ENODEV, the executable undone. */
static int no_kernarg_pool_is_enodev(void)
{
	static const size_t shape[3][2] = { { 8, 8 }, { 8, 8 }, { 8, 8 } };
	struct gpubuf_ctx *ctx = t_open();
	struct t_ops o;

	T_DSTUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, shape, &o),
	     T_PASS);
	T_EQ(gpubuf_hsa_gemm(1, &o.d[0], &o.d[1], 0, &o.d[2], 0), -ENODEV);
	T_ERR_HAS("no kernarg memory pool");
	T_EQ(stub.calls("hsa_executable_destroy"), 1);
	T_LEFT(0);
	gpubuf_unref(o.buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * Bad operands ask the runtime nothing; an agent index past the last GPU
 * agent is -ENODEV; so is any call in a child after fork().
 */
static int bad_operands_agents_and_fork(void)
{
	static const size_t shape[3][2] = { { 8, 8 }, { 8, 1 }, { 8, 1 } };
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_hsa_matrix a, x, y;
	struct gpubuf_matrix m;
	struct t_ops o;
	int status;
	pid_t pid;

	T_DSTUB();
	T_EQ(t_ops_make(ctx, 0, GPUBUF_DTYPE_F32, GPUBUF_ROW_MAJOR, shape, &o),
	     T_PASS);
	a = o.d[0], x = o.d[1], y = o.d[2];
	stub.reset_log();
	y.agent_ptr = a.agent_ptr;
	T_EQ(gpubuf_hsa_gemv(1, &a, &x, 0, &y, 0), -EINVAL);
	T_ERR_HAS("gpubuf_hsa_gemv: the output overlaps an input");
	y = o.d[2];
	y.flags = GPUBUF_HSA_MATRIX_READ_ONLY;
	T_EQ(gpubuf_hsa_gemv(1, &a, &x, 0, &y, 0), -EROFS);
	T_EQ(stub.calls("hsa_agent_iterate_isas"), 0);
	T_EQ(stub.calls("hsa_queue_add_write_index_scacq_screl"), 0);
	y = o.d[2];
	a.agent = x.agent = y.agent = 2;
	T_EQ(gpubuf_hsa_gemv(1, &a, &x, 0, &y, 0), -ENODEV);
	T_ERR_HAS("no HSA GPU agent 2 (2 present)");
	/* A view needs a lock for that agent. */
	T_EQ(gpubuf_matrix_view(o.buf, 0, GPUBUF_DTYPE_F32, 8, 8, 8,
				GPUBUF_ROW_MAJOR, &m), 0);
	T_EQ(gpubuf_hsa_matrix_view(&m, 2, &a), -ENXIO);
	T_EQ(gpubuf_hsa_matrix_view(&m, -1, &a), -ENXIO);
	T_EQ(gpubuf_hsa_matrix_view(NULL, 0, &a), -EINVAL);
	T_EQ(gpubuf_hsa_matrix_view(&m, 0, NULL), -EINVAL);
	fflush(stdout);
	pid = fork();
	T_CHECK(pid >= 0);
	if (pid == 0)
		_exit(gpubuf_hsa_gemv(1, &o.d[0], &o.d[1], 0, &o.d[2], 0) ==
		      -ENODEV ? 0 : 1);
	T_EQ(waitpid(pid, &status, 0), pid);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	T_EQ(dstub.dispatched(), 0);
	gpubuf_unref(o.buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* ---- the tests, each run in a fresh process ------------------------------ */

static int fail_isas(void) { return runtime_failure_unwinds(); }
static int fail_reader(void) { return runtime_failure_unwinds(); }
static int fail_exec(void) { return runtime_failure_unwinds(); }
static int fail_load(void) { return runtime_failure_unwinds(); }
static int fail_freeze(void) { return runtime_failure_unwinds(); }
static int fail_symbol(void) { return runtime_failure_unwinds(); }
static int fail_symbol_info(void) { return runtime_failure_unwinds(); }
static int fail_queue(void) { return runtime_failure_unwinds(); }
static int fail_kernarg(void) { return runtime_failure_unwinds(); }
static int fail_allow(void) { return runtime_failure_unwinds(); }
static int fail_signal(void) { return runtime_failure_unwinds(); }

/* fn's nth call fails with HSA_STATUS_ERROR##st: want, kept agents left. */
#define T_FAULT(fn, n, st, want, kept)					\
	"HSASTUB_FAIL=" #fn ":" #n ":HSA_STATUS_ERROR" #st " T_FN=" #fn	\
	" T_WANT=" #want " T_KEPT=" #kept

#define T_CASES(X)							\
	X(gemv_packet_fields, "", T_ANY)				\
	X(gemm_packet_two_dimensions, "", T_ANY)			\
	X(gfx1030_object_and_wave32_grid,				\
	  "HSASTUB_ISA=amdgcn-amd-amdhsa--gfx1030", T_ANY)		\
	X(grid_clamped_to_agent_maximum, "HSASTUB_GRID_MAX=4096", T_ANY) \
	X(caller_signal_not_waited, "HSASTUB_QUEUE_HOLD=1", T_ANY)	\
	X(async_slots_recycled, "", T_ANY)				\
	X(threads_share_one_load_per_agent, "", T_ANY)			\
	X(isa_without_code_object_is_enoexec,				\
	  "HSASTUB_ISA=amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", T_ANY) \
	X(no_kernarg_pool_is_enodev, "HSASTUB_NO_FINE_POOL=1", T_ANY)	\
	X(bad_operands_agents_and_fork, "", T_ANY)			\
	X(fail_isas, T_FAULT(hsa_agent_iterate_isas, 1,			\
			     _OUT_OF_RESOURCES, -12, 0), T_ANY)		\
	X(fail_reader, T_FAULT(hsa_code_object_reader_create_from_memory, \
			       1, _OUT_OF_RESOURCES, -12, 0), T_ANY)	\
	X(fail_exec, T_FAULT(hsa_executable_create_alt, 1,		\
			     _OUT_OF_RESOURCES, -12, 0), T_ANY)		\
	X(fail_load, T_FAULT(hsa_executable_load_agent_code_object, 1,	\
			     _INVALID_CODE_OBJECT, -8, 0), T_ANY)	\
	X(fail_freeze, T_FAULT(hsa_executable_freeze, 1, , -5, 0), T_ANY) \
	X(fail_symbol, T_FAULT(hsa_executable_get_symbol_by_name, 3,	\
			       _INVALID_SYMBOL_NAME, -5, 0), T_ANY)	\
	X(fail_symbol_info, T_FAULT(hsa_executable_symbol_get_info, 7,	\
				    _INVALID_ARGUMENT, -22, 0), T_ANY)	\
	X(fail_queue, T_FAULT(hsa_queue_create, 1,			\
			      _INVALID_QUEUE_CREATION, -5, 0), T_ANY)	\
	X(fail_kernarg, T_FAULT(hsa_amd_memory_pool_allocate, 1,	\
				_OUT_OF_RESOURCES, -12, 0), T_ANY)	\
	X(fail_allow, T_FAULT(hsa_amd_agents_allow_access, 1,		\
			      _INVALID_AGENT, -22, 0), T_ANY)		\
	X(fail_signal, T_FAULT(hsa_signal_create, 1,			\
			       _OUT_OF_RESOURCES, -12, 1), T_ANY)

T_STUB_MAIN(T_CASES)
