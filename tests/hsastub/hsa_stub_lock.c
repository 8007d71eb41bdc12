// SPDX-License-Identifier: MIT
/*
 * Description: libgpubuf's HSA lock bookkeeping against a stand-in
 * runtime (stub.c, through LD_LIBRARY_PATH or RUNPATH; hsa_stub_test.h
 * runs each test in a fresh process): which runtime calls lock, unlock
 * and the last unref make and with which arguments; counts, agent sets,
 * bad arguments refused without a runtime call; runtime failures as
 * errno with their text; threads racing; fork. Nothing touches a GPU.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/ioctl.h>

#include "hsa_stub_test.h"
#include "pfnmap_import.h"

struct t_lock {
	const char *fn;
	const void *ptr;
	size_t size;
	uint64_t agents[10];
	int n;
	uint64_t pool;
};

static int t_last_lock(struct t_lock *l)
{
	memset(l, 0, sizeof(*l));
	l->fn = stub.last_lock(&l->ptr, &l->size, l->agents, &l->n, &l->pool);
	return l->fn ? 0 : -1;
}

/* ---- locking ------------------------------------------------------------- */

static int lock_all_gpus_once(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 3);
	void *ap = NULL;
	struct t_lock l;

	T_STUB();
	stub.reset_log();
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), 0);
	T_EQ(gpubuf_last_error()[0], '\0');
	T_CHECK(ap == T_AGENT_PTR(gpubuf_ptr(buf)));
	T_CHECK(ap != gpubuf_ptr(buf));
	T_EQ(stub.calls("hsa_amd_memory_lock_to_pool"), 1);
	T_EQ(stub.calls("hsa_amd_memory_lock"), 0);
	T_EQ(t_last_lock(&l), 0);
	T_CHECK(!strcmp(l.fn, "hsa_amd_memory_lock_to_pool"));
	T_CHECK(l.ptr == gpubuf_ptr(buf));
	T_EQ(l.size, gpubuf_size(buf));
	/* NULL/0 is every GPU agent, named one by one: not the CPUs. */
	T_EQ(l.n, 2);
	T_EQ(l.agents[0], stub.gpu(0));
	T_EQ(l.agents[1], stub.gpu(1));
	T_EQ(l.pool, stub.fine_pool());
	T_CHECK(stub.is_locked(gpubuf_ptr(buf)));
	T_EQ(gpubuf_hsa_unlock(buf), 0);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 1);
	T_CHECK(stub.last_unlock() == gpubuf_ptr(buf));
	gpubuf_unref(buf);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 1);
	T_EQ(stub.calls("hsa_init"), 0);	/* once, at load */
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int lock_counts_and_unlocks_at_last(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	void *a1, *a2, *a3;

	T_STUB();
	stub.reset_log();
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &a1), 0);
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &a2), 0);
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &a3), 0);
	T_CHECK(a1 == a2 && a2 == a3);
	T_EQ(stub.calls("hsa_amd_memory_lock_to_pool"), 1);
	T_EQ(gpubuf_hsa_unlock(buf), 0);
	T_EQ(gpubuf_hsa_unlock(buf), 0);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 0);
	T_CHECK(stub.is_locked(gpubuf_ptr(buf)));
	T_EQ(gpubuf_hsa_unlock(buf), 0);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 1);
	/* One more is one too many, and asks the runtime nothing. */
	T_EQ(gpubuf_hsa_unlock(buf), -ENXIO);
	T_ERR_HAS("not locked");
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 1);
	/* Locking again after a full unlock locks again. */
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &a1), 0);
	T_EQ(stub.calls("hsa_amd_memory_lock_to_pool"), 2);
	T_EQ(gpubuf_hsa_unlock(buf), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int subset_lock_then_other_agents_are_ebusy(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 2);
	uint64_t g0 = 0, g1, two[3];
	void *ap, *ap2 = (void *)0x1;
	struct t_lock l;

	T_STUB();
	g0 = stub.gpu(0);
	g1 = stub.gpu(1);
	stub.reset_log();
	T_EQ(gpubuf_hsa_lock(buf, &g1, 1, &ap), 0);
	T_EQ(t_last_lock(&l), 0);
	T_EQ(l.n, 1);
	T_EQ(l.agents[0], g1);
	T_EQ(gpubuf_hsa_lock(buf, &g1, 1, &ap2), 0);
	T_CHECK(ap2 == ap);
	ap2 = (void *)0x1;
	T_EQ(gpubuf_hsa_lock(buf, &g0, 1, &ap2), -EBUSY);
	T_ERR_HAS("locked for other HSA agents");
	T_CHECK(ap2 == (void *)0x1);
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap2), -EBUSY);
	two[0] = g1, two[1] = g0;
	T_EQ(gpubuf_hsa_lock(buf, two, 2, &ap2), -EBUSY);
	T_EQ(stub.calls("hsa_amd_memory_lock_to_pool"), 1);
	/* The refusals counted nothing: two unlocks undo it. */
	T_EQ(gpubuf_hsa_unlock(buf), 0);
	T_CHECK(stub.is_locked(gpubuf_ptr(buf)));
	T_EQ(gpubuf_hsa_unlock(buf), 0);
	T_EQ(stub.locks(), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int all_gpus_lock_serves_subsets_and_duplicates(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 2);
	uint64_t set[3];
	void *ap, *ap2;

	T_STUB();
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), 0);
	stub.reset_log();
	set[0] = stub.gpu(1), set[1] = stub.gpu(0), set[2] = stub.gpu(1);
	T_EQ(gpubuf_hsa_lock(buf, set, 3, &ap2), 0);
	T_CHECK(ap2 == ap);
	T_EQ(gpubuf_hsa_lock(buf, set + 1, 1, &ap2), 0);
	T_CHECK(ap2 == ap);
	/* agents is ignored when n_agents is 0. */
	T_EQ(gpubuf_hsa_lock(buf, set, 0, &ap2), 0);
	T_EQ(stub.calls("hsa_amd_memory_lock_to_pool"), 0);
	for (int i = 0; i < 3; i++)
		T_EQ(gpubuf_hsa_unlock(buf), 0);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 0);
	/* The last count goes with the last unref. */
	gpubuf_unref(buf);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 1);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* ---- refusals ------------------------------------------------------------ */

static int bad_arguments_are_einval_without_runtime_calls(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t g;
	void *ap = (void *)0x1;
	int n = -1;

	T_STUB();
	g = stub.gpu(0);
	stub.reset_log();
	T_EQ(gpubuf_hsa_lock(NULL, NULL, 0, &ap), -EINVAL);
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, NULL), -EINVAL);
	T_EQ(gpubuf_hsa_lock(buf, &g, -1, &ap), -EINVAL);
	T_EQ(gpubuf_hsa_lock(buf, NULL, 1, &ap), -EINVAL);
	T_CHECK(ap == (void *)0x1);
	T_EQ(gpubuf_hsa_unlock(NULL), -EINVAL);
	T_EQ(gpubuf_hsa_agents(NULL, 0, NULL), -EINVAL);
	T_EQ(gpubuf_hsa_agents(NULL, 1, &n), -EINVAL);
	T_EQ(gpubuf_hsa_agents(&g, -1, &n), -EINVAL);
	T_EQ(n, -1);
	T_EQ(stub.calls("hsa_agent_get_info"), 0);
	T_EQ(stub.calls("hsa_amd_memory_lock_to_pool"), 0);
	T_EQ(stub.calls("hsa_amd_memory_lock"), 0);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int bad_agent_handle_is_enodev(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	uint64_t bad[2];
	void *ap = (void *)0x1;

	T_STUB();
	stub.reset_log();
	bad[0] = stub.gpu(0), bad[1] = 0xdead;
	T_EQ(gpubuf_hsa_lock(buf, bad, 2, &ap), -ENODEV);
	T_ERR_HAS("0xdead is not one of the 2 GPU agents");
	/* A CPU agent is an agent, but not a GPU one. */
	bad[1] = stub.cpu();
	T_EQ(gpubuf_hsa_lock(buf, bad, 2, &ap), -ENODEV);
	T_EQ(gpubuf_hsa_lock(buf, bad + 1, 1, &ap), -ENODEV);
	/* GPU agent 2 of 2 does not exist. */
	bad[0] = stub.gpu(2);
	T_EQ(gpubuf_hsa_lock(buf, bad, 1, &ap), -ENODEV);
	T_CHECK(ap == (void *)0x1);
	T_EQ(stub.calls("hsa_amd_memory_lock_to_pool"), 0);
	T_EQ(gpubuf_hsa_unlock(buf), -ENXIO);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int no_gpu_agent_is_enodev(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	void *ap = (void *)0x1;
	int n = -1;

	T_EQ(gpubuf_hsa_agents(NULL, 0, &n), -ENODEV);
	T_ERR_HAS("no HSA GPU agent (2 agents, none a GPU)");
	T_EQ(n, -1);
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), -ENODEV);
	T_ERR_HAS("no HSA GPU agent");
	T_CHECK(ap == (void *)0x1);
	T_STUB();
	T_EQ(stub.calls("hsa_amd_memory_lock_to_pool"), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int init_failure_is_enodev_with_status(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	void *ap = (void *)0x1;
	int n;

	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), -ENODEV);
	T_ERR_HAS("hsa_init (0x1008)");
	T_ERR_HAS("HSA_STATUS_ERROR_OUT_OF_RESOURCES");
	/* Loaded once: the same answer later, without a second hsa_init. */
	T_EQ(gpubuf_hsa_agents(NULL, 0, &n), -ENODEV);
	T_ERR_HAS("hsa_init");
	T_STUB();
	T_EQ(stub.calls("hsa_init"), 1);
	T_EQ(stub.calls("hsa_iterate_agents"), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int lock_failure_maps_errno_and_leaves_nothing(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1);
	void *ap = (void *)0x1;

	T_STUB();
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), -ENOMEM);
	T_ERR_HAS("hsa_amd_memory_lock_to_pool (0x1008): HSA_STATUS_ERROR_OUT_OF_RESOURCES");
	T_CHECK(ap == (void *)0x1);
	T_EQ(gpubuf_hsa_unlock(buf), -ENXIO);
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), -EINVAL);
	T_ERR_HAS("HSA_STATUS_ERROR_INVALID_AGENT");
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), -EIO);
	T_ERR_HAS("(0x1000): HSA_STATUS_ERROR:");
	/* The fourth call is not injected: it locks. */
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), 0);
	T_CHECK(ap == T_AGENT_PTR(gpubuf_ptr(buf)));
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * HSASTUB_FAIL=hsa_amd_memory_unlock:*:HSA_STATUS_ERROR_NOT_INITIALIZED:
 * the only refusal ROCr's hsa_amd_memory_unlock can give for a lock it
 * made (ROCR-Runtime src/core/runtime/hsa_ext_amd.cpp: IS_OPEN fails once
 * the runtime was shut down; MemoryRegion::Unlock in amd_memory_region.cpp
 * returns success whatever KFD answers), and a retry can only fail the
 * same way. The last unlock reports it and forgets the lock: the next
 * unlock is -ENXIO without a runtime call, and the last unref of a
 * locked buffer does the same (ASan checks the bookkeeping is freed).
 */
static int unlock_failure_forgets_the_lock(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1), *other = t_buf(ctx, 1);
	void *ap;

	T_STUB();
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), 0);
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), 0);
	T_EQ(gpubuf_hsa_unlock(buf), 0);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 0);
	T_EQ(gpubuf_hsa_unlock(buf), -ENODEV);
	T_ERR_HAS("hsa_amd_memory_unlock (0x100b)");
	/* Nothing left to retry: the library holds no lock any more. */
	T_EQ(gpubuf_hsa_unlock(buf), -ENXIO);
	T_ERR_HAS("not locked");
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 1);
	T_EQ(gpubuf_hsa_lock(other, NULL, 0, &ap), 0);
	gpubuf_unref(other);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 2);
	gpubuf_unref(buf);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 2);
	/* The stand-in, which refused, still has both. */
	T_EQ(stub.locks(), 2);
	T_EQ(stub.violations(NULL, 0), 0);
	gpubuf_close(ctx);
	return T_PASS;
}

static int without_fine_pool_uses_memory_lock(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 4);
	uint64_t g;
	struct t_lock l;
	void *ap;

	T_STUB();
	g = stub.gpu(0);
	stub.reset_log();
	T_EQ(gpubuf_hsa_lock(buf, &g, 1, &ap), 0);
	T_EQ(stub.calls("hsa_amd_memory_lock_to_pool"), 0);
	T_EQ(stub.calls("hsa_amd_memory_lock"), 1);
	T_EQ(t_last_lock(&l), 0);
	T_CHECK(!strcmp(l.fn, "hsa_amd_memory_lock"));
	T_EQ(l.n, 1);
	T_EQ(l.agents[0], g);
	T_EQ(l.size, gpubuf_size(buf));
	gpubuf_unref(buf);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 1);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

static int agents_lists_gpus_in_order(void)
{
	uint64_t a[4] = { 0, 0, 0, 7 };
	int n = -1;

	T_STUB();
	T_EQ(gpubuf_hsa_agents(NULL, 0, &n), 0);
	T_EQ(n, 3);
	n = -1;
	T_EQ(gpubuf_hsa_agents(a, 1, &n), 0);
	T_EQ(n, 3);
	T_EQ(a[0], stub.gpu(0));
	T_EQ(a[1], 0);
	T_EQ(gpubuf_hsa_agents(a, 4, &n), 0);
	for (int i = 0; i < 3; i++)
		T_EQ(a[i], stub.gpu(i));
	T_EQ(a[3], 7);
	T_CLEAN();
	return T_PASS;
}

/* A read-only dma-buf from the module maps PROT_READ: HSA cannot lock it. */
static int readonly_buffer_is_erofs(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_alloc a = { 0 };
	struct gpubuf *buf;
	void *ap = (void *)0x1;
	int dev;

	T_STUB();
	dev = open(GPUBUF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	T_CHECK(dev >= 0);
	a.size = 4096;
	a.fd_flags = O_RDONLY | O_CLOEXEC;
	a.numa_node = GPUBUF_NUMA_ANY;
	T_EQ(ioctl(dev, GPUBUF_IOC_ALLOC, &a), 0);
	close(dev);
	T_EQ(gpubuf_import(ctx, a.fd, &buf), 0);
	close(a.fd);
	T_EQ(gpubuf_is_readonly(buf), 1);
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), -EROFS);
	T_ERR_HAS("read-only");
	T_CHECK(ap == (void *)0x1);
	T_EQ(stub.calls("hsa_amd_memory_lock_to_pool"), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/*
 * Issue 23, defect 4: KFD's userptr, under hsa_amd_memory_lock, takes the
 * pages with hmm_range_fault(), which refuses VM_PFNMAP/VM_IO vmas: an
 * import from an exporter that maps with remap_pfn_range is refused here,
 * saying why, before the runtime is asked.
 */
static int pfnmap_import_refused(void)
{
	struct gpubuf_ctx *ctx = NULL;
	struct gpubuf *buf = NULL;
	void *ap = (void *)0x1;
	int err = t_pfnmap_import(16 * 4096, &ctx, &buf);

	if (err)
		return err;
	T_STUB();
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), -EOPNOTSUPP);
	T_ERR_HAS("VM_PFNMAP");
	T_ERR_HAS("hsa_amd_memory_lock");
	T_CHECK(ap == (void *)0x1);
	T_EQ(stub.calls("hsa_amd_memory_lock_to_pool"), 0);
	T_EQ(stub.calls("hsa_amd_memory_lock"), 0);
	T_EQ(gpubuf_hsa_unlock(buf), -ENXIO);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* A pool never hands out a buffer that is still locked. */
static int pool_drops_locked_buffers(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_pool_opts po = GPUBUF_POOL_OPTS_INIT;
	struct gpubuf_pool_stats st;
	struct gpubuf_pool *pool;
	struct gpubuf *buf;
	uint64_t g;
	void *ap;

	T_STUB();
	g = stub.gpu(1);
	T_EQ(gpubuf_pool_create(ctx, &po, &pool), 0);
	T_EQ(gpubuf_pool_get(pool, 1 << 20, &buf), 0);
	T_EQ(gpubuf_hsa_lock(buf, &g, 1, &ap), 0);
	stub.reset_log();
	T_EQ(gpubuf_pool_put(pool, buf), 0);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 1);
	gpubuf_pool_stats(pool, &st);
	T_EQ(st.drops, 1);
	T_EQ(st.cached_buffers, 0);
	/* The next buffer of that class locks for every agent, from scratch. */
	T_EQ(gpubuf_pool_get(pool, 1 << 20, &buf), 0);
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), 0);
	T_EQ(stub.calls("hsa_amd_memory_lock_to_pool"), 1);
	T_EQ(gpubuf_hsa_unlock(buf), 0);
	T_EQ(gpubuf_pool_put(pool, buf), 0);
	gpubuf_pool_stats(pool, &st);
	T_EQ(st.cached_buffers, 1);
	gpubuf_pool_destroy(pool);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* ---- threads and fork ---------------------------------------------------- */

struct t_thread {
	struct gpubuf *buf;
	uint64_t agent;		/* 0: NULL/0 */
	int failures;
};

static void *t_locker(void *arg)
{
	struct t_thread *t = arg;
	void *ap;

	for (int i = 0; i < 300; i++) {
		if (gpubuf_hsa_lock(t->buf, t->agent ? &t->agent : NULL,
				    t->agent ? 1 : 0, &ap) ||
		    ap != T_AGENT_PTR(gpubuf_ptr(t->buf)))
			t->failures++;
		if (i % 7 == 0)
			sched_yield();
		if (gpubuf_hsa_unlock(t->buf))
			t->failures++;
	}
	return NULL;
}

static int threads_lock_and_unlock_concurrently(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 8);
	struct t_thread t[8];
	pthread_t tid[8];
	void *ap;

	T_STUB();
	/* One lock held throughout, so every thread's set is a subset. */
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), 0);
	stub.reset_log();
	for (int i = 0; i < 8; i++) {
		t[i] = (struct t_thread){ buf, i % 3 ? stub.gpu(i % 2) : 0, 0 };
		T_EQ(pthread_create(&tid[i], NULL, t_locker, &t[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		T_EQ(pthread_join(tid[i], NULL), 0);
		T_EQ(t[i].failures, 0);
	}
	T_EQ(stub.calls("hsa_amd_memory_lock_to_pool"), 0);
	T_EQ(stub.calls("hsa_amd_memory_unlock"), 0);
	T_EQ(gpubuf_hsa_unlock(buf), 0);
	T_EQ(stub.locks(), 0);
	stub.reset_log();
	/* Now from nothing: locks and unlocks come and go, balanced. */
	for (int i = 0; i < 8; i++) {
		t[i] = (struct t_thread){ buf, 0, 0 };
		T_EQ(pthread_create(&tid[i], NULL, t_locker, &t[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		T_EQ(pthread_join(tid[i], NULL), 0);
		T_EQ(t[i].failures, 0);
	}
	T_CHECK(stub.calls("hsa_amd_memory_lock_to_pool") >= 1);
	T_EQ(stub.calls("hsa_amd_memory_lock_to_pool"),
	     stub.calls("hsa_amd_memory_unlock"));
	printf("# %d runtime locks for 2400 gpubuf_hsa_lock calls\n",
	       stub.calls("hsa_amd_memory_lock_to_pool"));
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

/* The child of fork() may not use the parent's runtime, nor undo its lock. */
static int fork_child_gets_enodev(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = t_buf(ctx, 1), *other = t_buf(ctx, 1);
	int status, calls;
	void *ap;
	pid_t pid;

	T_STUB();
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), 0);
	T_EQ(gpubuf_hsa_lock(buf, NULL, 0, &ap), 0);
	calls = stub.calls("hsa_amd_memory_unlock");
	fflush(stdout);
	pid = fork();
	T_CHECK(pid >= 0);
	if (pid == 0) {
		int bad = 0;

		bad |= gpubuf_hsa_lock(other, NULL, 0, &ap) != -ENODEV;
		bad |= !strstr(gpubuf_last_error(), "fork()");
		bad |= gpubuf_hsa_unlock(buf) != -ENODEV;
		bad |= gpubuf_hsa_agents(NULL, 0, &status) != -ENODEV;
		/* Unref forgets the parent's lock without a runtime call. */
		gpubuf_unref(buf);
		bad |= stub.calls("hsa_amd_memory_unlock") != calls;
		_exit(bad);
	}
	T_EQ(waitpid(pid, &status, 0), pid);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* The parent's lock and count are as they were. */
	T_CHECK(stub.is_locked(gpubuf_ptr(buf)));
	T_EQ(gpubuf_hsa_unlock(buf), 0);
	T_EQ(gpubuf_hsa_unlock(buf), 0);
	T_EQ(stub.locks(), 0);
	gpubuf_unref(buf);
	gpubuf_unref(other);
	gpubuf_close(ctx);
	T_CLEAN();
	return T_PASS;
}

#define T_CASES(X)							\
	X(lock_all_gpus_once, "", T_ANY)				\
	X(lock_counts_and_unlocks_at_last, "", T_ANY)			\
	X(subset_lock_then_other_agents_are_ebusy, "", T_ANY)		\
	X(all_gpus_lock_serves_subsets_and_duplicates, "", T_ANY)	\
	X(bad_arguments_are_einval_without_runtime_calls, "", T_ANY)	\
	X(bad_agent_handle_is_enodev, "", T_ANY)			\
	X(no_gpu_agent_is_enodev, "HSASTUB_GPUS=0", T_ANY)		\
	X(init_failure_is_enodev_with_status,				\
	  "HSASTUB_INIT=HSA_STATUS_ERROR_OUT_OF_RESOURCES", T_ANY)	\
	X(lock_failure_maps_errno_and_leaves_nothing,			\
	  "HSASTUB_FAIL=hsa_amd_memory_lock_to_pool:1:HSA_STATUS_ERROR_OUT_OF_RESOURCES," \
	  "hsa_amd_memory_lock_to_pool:2:HSA_STATUS_ERROR_INVALID_AGENT," \
	  "hsa_amd_memory_lock_to_pool:3:HSA_STATUS_ERROR", T_ANY)	\
	X(unlock_failure_forgets_the_lock,				\
	  "HSASTUB_FAIL=hsa_amd_memory_unlock:*:HSA_STATUS_ERROR_NOT_INITIALIZED", \
	  T_ANY)							\
	X(without_fine_pool_uses_memory_lock, "HSASTUB_NO_FINE_POOL=1", T_ANY) \
	X(agents_lists_gpus_in_order, "HSASTUB_GPUS=3", T_ANY)		\
	X(readonly_buffer_is_erofs, "", T_MODULE)			\
	X(pfnmap_import_refused, "", T_MODULE)				\
	X(pool_drops_locked_buffers, "", T_ANY)				\
	X(threads_lock_and_unlock_concurrently, "", T_ANY)		\
	X(fork_child_gets_enodev, "", T_ANY)

T_STUB_MAIN(T_CASES)
