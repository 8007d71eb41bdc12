// SPDX-License-Identifier: MIT
/*
 * gpubuf_hsa_gemv() / gpubuf_hsa_gemm(): the embedded AMD code objects
 * (hsa_code.h) dispatched through an HSA AQL queue.
 *
 * Per GPU agent, on first use and then for the life of the process (like
 * the CUDA module cache; the runtime is never shut down): the code object
 * whose ISA matches the agent's, loaded into a frozen executable, the
 * kernels' descriptors and segment sizes, one AQL queue shared by every
 * thread, and a ring of kernarg slots in the CPU's kernarg pool. Loading
 * holds only that agent's lock; dispatches read the published state
 * without one. A failed load undoes everything it made and is tried again
 * on the next call.
 *
 * Operands are checked (kernel_args.c, the same checks as CUDA's) before
 * the runtime is touched. Never run on AMD hardware: the dispatch path is
 * checked against tests/hsastub only.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsa_code.h"
#include "hsa_runtime.h"
#include "internal.h"
#include "kernel_args.h"

#if defined(GPUBUF_HAVE_HSA) && defined(GPUBUF_HAVE_HSA_KERNELS)

#define GPUBUF_STR(x)	#x
#define GPUBUF_XSTR(x)	GPUBUF_STR(x)

/* Every kernarg segment fits (112 bytes at most), 16-byte aligned. */
#define GPUBUF_HSAK_KERNARG_SLOT	128
/* Packets in the queue, unless the agent needs more. */
#define GPUBUF_HSAK_QUEUE_SIZE		64
/* GEMV blocks beyond this only queue up behind the resident ones. */
#define GPUBUF_HSAK_GEMV_GRID_MAX	(1u << 20)

struct gpubuf_hsak_kernel {
	uint64_t object;		/* kernel descriptor address */
	uint32_t group_segment_size;
	uint32_t private_segment_size;
};

/* One agent's loaded kernels and queue; immutable once published. */
struct gpubuf_hsak_agent {
	const struct gpubuf_hsa_code *code;
	hsa_code_object_reader_t reader;	/* must outlive exec */
	hsa_executable_t exec;
	struct gpubuf_hsak_kernel k[GPUBUF_HSA_NR_KERNELS];
	hsa_queue_t *queue;
	/*
	 * 2 * queue->size kernarg slots, slot (packet id mod 2 * size). The
	 * queue is ours alone and every packet has the barrier bit: packet
	 * p + 2 * size is only reserved once the read index passed p + size,
	 * so packet p + 1 has left its launch phase, which it cannot do
	 * before p completed. A slot is thus never rewritten while a kernel
	 * may still read it, with or without a caller's signal.
	 */
	unsigned char *kernarg;
	uint32_t grid_max;		/* work-items in one grid */
};

struct gpubuf_hsak_slot {
	pthread_mutex_t lock;
	struct gpubuf_hsak_agent *_Atomic ready;	/* &a once loaded */
	struct gpubuf_hsak_agent a;
};

static struct {
	pthread_once_t once;
	struct gpubuf_hsak_slot *gpu;	/* hsa->n_gpus slots, or NULL */
} gpubuf_hsak = { .once = PTHREAD_ONCE_INIT };

/* ---- loading ------------------------------------------------------------ */

struct gpubuf_hsak_isa_scan {
	const struct gpubuf_hsa *hsa;
	const struct gpubuf_hsa_code *match;
	char first[96];			/* the agent's first ISA, for errors */
	hsa_status_t err;
};

/* "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-" serves "...--gfx90a". */
static hsa_status_t gpubuf_hsak_isa_cb(hsa_isa_t isa, void *data)
{
	struct gpubuf_hsak_isa_scan *scan = data;
	const struct gpubuf_hsa *hsa = scan->hsa;
	uint32_t len = 0;
	hsa_status_t s;
	char *name;
	size_t n;

	s = hsa->hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME_LENGTH, &len);
	if (s != HSA_STATUS_SUCCESS)
		return scan->err = s;
	/* The length may or may not count the NUL: room for one more. */
	name = calloc(1, (size_t)len + 1);
	if (!name)
		return scan->err = HSA_STATUS_ERROR_OUT_OF_RESOURCES;
	s = hsa->hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME, name);
	if (s != HSA_STATUS_SUCCESS) {
		free(name);
		return scan->err = s;
	}
	if (!scan->first[0])
		snprintf(scan->first, sizeof(scan->first), "%s", name);
	n = strcspn(name, ":");
	for (uint32_t i = 0; i < gpubuf_hsa_ncodes && !scan->match; i++)
		if (strlen(gpubuf_hsa_codes[i].isa) == n &&
		    !strncmp(gpubuf_hsa_codes[i].isa, name, n))
			scan->match = &gpubuf_hsa_codes[i];
	free(name);
	return scan->match ? HSA_STATUS_INFO_BREAK : HSA_STATUS_SUCCESS;
}

static int gpubuf_hsak_pick(const struct gpubuf_hsa *hsa, int gpu,
			    struct gpubuf_hsak_agent *a)
{
	struct gpubuf_hsak_isa_scan scan = { .hsa = hsa };
	hsa_status_t s;

	s = hsa->hsa_agent_iterate_isas(hsa->gpus[gpu], gpubuf_hsak_isa_cb,
					&scan);
	if (scan.err != HSA_STATUS_SUCCESS)
		return gpubuf_hsa_fail(hsa, scan.err, "hsa_isa_get_info_alt");
	if (s != HSA_STATUS_SUCCESS && s != HSA_STATUS_INFO_BREAK)
		return gpubuf_hsa_fail(hsa, s, "hsa_agent_iterate_isas");
	if (!scan.match) {
		gpubuf_error_set("HSA GPU agent %d has ISA %s; libgpubuf carries code objects for %s only",
				 gpu, scan.first[0] ? scan.first : "(none)",
				 GPUBUF_XSTR(GPUBUF_HSA_ARCH_LIST));
		return -ENOEXEC;
	}
	a->code = scan.match;
	return 0;
}

struct gpubuf_hsak_pool_scan {
	const struct gpubuf_hsa *hsa;
	hsa_amd_memory_pool_t pool;
};

/* The CPU's kernarg pool (HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT). */
static hsa_status_t gpubuf_hsak_pool_cb(hsa_amd_memory_pool_t pool,
					void *data)
{
	struct gpubuf_hsak_pool_scan *scan = data;
	const struct gpubuf_hsa *hsa = scan->hsa;
	hsa_amd_segment_t segment;
	uint32_t flags = 0;
	hsa_status_t s;

	s = hsa->hsa_amd_memory_pool_get_info(pool,
					      HSA_AMD_MEMORY_POOL_INFO_SEGMENT,
					      &segment);
	if (s != HSA_STATUS_SUCCESS || segment != HSA_AMD_SEGMENT_GLOBAL)
		return s;
	s = hsa->hsa_amd_memory_pool_get_info(pool,
					      HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS,
					      &flags);
	if (s != HSA_STATUS_SUCCESS)
		return s;
	if (!(flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT))
		return HSA_STATUS_SUCCESS;
	scan->pool = pool;
	return HSA_STATUS_INFO_BREAK;
}

/* Queue and kernarg ring; on failure nothing of them is left. */
static int gpubuf_hsak_queue(const struct gpubuf_hsa *hsa, int gpu,
			     struct gpubuf_hsak_agent *a)
{
	hsa_agent_t agent = hsa->gpus[gpu];
	struct gpubuf_hsak_pool_scan scan = { .hsa = hsa };
	uint32_t size = GPUBUF_HSAK_QUEUE_SIZE, min = 0;
	hsa_status_t s;
	void *p = NULL;

	s = hsa->hsa_amd_agent_iterate_memory_pools(hsa->cpu,
						    gpubuf_hsak_pool_cb, &scan);
	if (s != HSA_STATUS_SUCCESS && s != HSA_STATUS_INFO_BREAK)
		return gpubuf_hsa_fail(hsa, s, "hsa_amd_agent_iterate_memory_pools");
	if (!scan.pool.handle) {
		gpubuf_error_set("the HSA CPU agent has no kernarg memory pool");
		return -ENODEV;
	}
	s = hsa->hsa_agent_get_info(agent, HSA_AGENT_INFO_QUEUE_MIN_SIZE, &min);
	if (s != HSA_STATUS_SUCCESS)
		return gpubuf_hsa_fail(hsa, s, "hsa_agent_get_info(QUEUE_MIN_SIZE)");
	while (size < min && size < (1u << 30))
		size *= 2;
	s = hsa->hsa_queue_create(agent, size, HSA_QUEUE_TYPE_MULTI, NULL,
				  NULL, UINT32_MAX, UINT32_MAX, &a->queue);
	if (s != HSA_STATUS_SUCCESS)
		return gpubuf_hsa_fail(hsa, s, "hsa_queue_create");
	s = hsa->hsa_amd_memory_pool_allocate(scan.pool, (size_t)a->queue->size * 2 *
					      GPUBUF_HSAK_KERNARG_SLOT, 0, &p);
	if (s != HSA_STATUS_SUCCESS) {
		hsa->hsa_queue_destroy(a->queue);
		return gpubuf_hsa_fail(hsa, s, "hsa_amd_memory_pool_allocate(kernarg)");
	}
	s = hsa->hsa_amd_agents_allow_access(1, &agent, NULL, p);
	if (s != HSA_STATUS_SUCCESS) {
		hsa->hsa_amd_memory_pool_free(p);
		hsa->hsa_queue_destroy(a->queue);
		return gpubuf_hsa_fail(hsa, s, "hsa_amd_agents_allow_access(kernarg)");
	}
	a->kernarg = p;
	return 0;
}

/* Each kernel's descriptor and segment sizes, checked against hsa_code.h. */
static int gpubuf_hsak_symbols(const struct gpubuf_hsa *hsa, int gpu,
			       struct gpubuf_hsak_agent *a)
{
	hsa_agent_t agent = hsa->gpus[gpu];
	char what[96];
	hsa_status_t s;

	for (int i = 0; i < GPUBUF_HSA_NR_KERNELS; i++) {
		const char *name = gpubuf_hsa_kernels[i].symbol;
		hsa_executable_symbol_t sym;
		uint32_t kernarg = 0;

		snprintf(what, sizeof(what),
			 "hsa_executable_get_symbol_by_name(%s)", name);
		s = hsa->hsa_executable_get_symbol_by_name(a->exec, name,
							   &agent, &sym);
		if (s == HSA_STATUS_SUCCESS) {
			snprintf(what, sizeof(what),
				 "hsa_executable_symbol_get_info(%s)", name);
			s = hsa->hsa_executable_symbol_get_info(sym,
				HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
				&a->k[i].object);
		}
		if (s == HSA_STATUS_SUCCESS)
			s = hsa->hsa_executable_symbol_get_info(sym,
				HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
				&kernarg);
		if (s == HSA_STATUS_SUCCESS)
			s = hsa->hsa_executable_symbol_get_info(sym,
				HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
				&a->k[i].group_segment_size);
		if (s == HSA_STATUS_SUCCESS)
			s = hsa->hsa_executable_symbol_get_info(sym,
				HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
				&a->k[i].private_segment_size);
		if (s != HSA_STATUS_SUCCESS)
			return gpubuf_hsa_fail(hsa, s, what);
		/* Another layout would be filled wrongly: refuse, don't guess. */
		if (kernarg != gpubuf_hsa_kernels[i].kernarg_size) {
			gpubuf_error_set("%s wants %u kernarg bytes, not the %u of hsa_code.h",
					 name, kernarg,
					 gpubuf_hsa_kernels[i].kernarg_size);
			return -ENOEXEC;
		}
	}
	return 0;
}

static int gpubuf_hsak_load(const struct gpubuf_hsa *hsa, int gpu,
			    struct gpubuf_hsak_agent *a)
{
	hsa_agent_t agent = hsa->gpus[gpu];
	hsa_profile_t profile;
	const char *what;
	hsa_status_t s;
	int err;

	memset(a, 0, sizeof(*a));
	err = gpubuf_hsak_pick(hsa, gpu, a);
	if (err)
		return err;
	what = "hsa_agent_get_info(PROFILE)";
	s = hsa->hsa_agent_get_info(agent, HSA_AGENT_INFO_PROFILE, &profile);
	if (s == HSA_STATUS_SUCCESS) {
		what = "hsa_agent_get_info(GRID_MAX_SIZE)";
		s = hsa->hsa_agent_get_info(agent, HSA_AGENT_INFO_GRID_MAX_SIZE,
					    &a->grid_max);
	}
	if (s != HSA_STATUS_SUCCESS)
		return gpubuf_hsa_fail(hsa, s, what);
	s = hsa->hsa_code_object_reader_create_from_memory(a->code->data,
							   a->code->size,
							   &a->reader);
	if (s != HSA_STATUS_SUCCESS)
		return gpubuf_hsa_fail(hsa, s,
				       "hsa_code_object_reader_create_from_memory");
	s = hsa->hsa_executable_create_alt(profile,
					   HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
					   NULL, &a->exec);
	if (s != HSA_STATUS_SUCCESS) {
		err = gpubuf_hsa_fail(hsa, s, "hsa_executable_create_alt");
		goto err_reader;
	}
	what = "hsa_executable_load_agent_code_object";
	s = hsa->hsa_executable_load_agent_code_object(a->exec, agent,
						       a->reader, NULL, NULL);
	if (s == HSA_STATUS_SUCCESS) {
		what = "hsa_executable_freeze";
		s = hsa->hsa_executable_freeze(a->exec, NULL);
	}
	if (s != HSA_STATUS_SUCCESS) {
		err = gpubuf_hsa_fail(hsa, s, what);
		goto err_exec;
	}
	err = gpubuf_hsak_symbols(hsa, gpu, a);
	if (!err)
		err = gpubuf_hsak_queue(hsa, gpu, a);
	if (!err)
		return 0;
err_exec:
	hsa->hsa_executable_destroy(a->exec);
err_reader:
	hsa->hsa_code_object_reader_destroy(a->reader);
	return err;
}

static void gpubuf_hsak_slots_init(void)
{
	const struct gpubuf_hsa *hsa;
	struct gpubuf_hsak_slot *slots;

	/* Only reached after a successful gpubuf_hsa_get(). */
	if (gpubuf_hsa_get(&hsa))
		return;
	slots = calloc((size_t)hsa->n_gpus, sizeof(*slots));
	if (!slots)
		return;
	for (int i = 0; i < hsa->n_gpus; i++)
		pthread_mutex_init(&slots[i].lock, NULL);
	gpubuf_hsak.gpu = slots;
}

/* GPU agent gpu's loaded state; the pointer stays valid for the process. */
static int gpubuf_hsak_get(const struct gpubuf_hsa *hsa, int gpu,
			   const struct gpubuf_hsak_agent **out)
{
	struct gpubuf_hsak_slot *slot;
	int err = 0;

	if (gpu < 0 || gpu >= hsa->n_gpus) {
		gpubuf_error_set("no HSA GPU agent %d (%d present)", gpu,
				 hsa->n_gpus);
		return -ENODEV;
	}
	pthread_once(&gpubuf_hsak.once, gpubuf_hsak_slots_init);
	if (!gpubuf_hsak.gpu)
		return -ENOMEM;
	slot = &gpubuf_hsak.gpu[gpu];
	*out = atomic_load_explicit(&slot->ready, memory_order_acquire);
	if (*out)
		return 0;
	pthread_mutex_lock(&slot->lock);
	if (!atomic_load_explicit(&slot->ready, memory_order_relaxed)) {
		err = gpubuf_hsak_load(hsa, gpu, &slot->a);
		if (!err)
			atomic_store_explicit(&slot->ready, &slot->a,
					      memory_order_release);
	}
	pthread_mutex_unlock(&slot->lock);
	*out = &slot->a;
	return err;
}

/* ---- dispatch ----------------------------------------------------------- */

/* The header: a kernel dispatch, ordered, host memory visible both ways. */
#define GPUBUF_HSAK_HEADER						\
	((HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |	\
	 (1 << HSA_PACKET_HEADER_BARRIER) |				\
	 (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE) | \
	 (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE))

/*
 * Kernel k with args over blocks_x x blocks_y groups of 256 work-items on
 * agent gpu; signal 0 waits for completion on a signal of our own.
 */
static int gpubuf_hsak_run(int gpu, enum gpubuf_hsa_kernel k,
			   const void *args, uint64_t blocks_x,
			   uint64_t blocks_y, uint64_t signal)
{
	const struct gpubuf_hsa *hsa;
	const struct gpubuf_hsak_agent *a;
	hsa_kernel_dispatch_packet_t *pkt;
	hsa_signal_t done = { signal };
	uint64_t id, max_blocks;
	hsa_queue_t *q;
	void *kernarg;
	hsa_status_t s;
	int err;

	err = gpubuf_hsa_get(&hsa);
	if (!err)
		err = gpubuf_hsak_get(hsa, gpu, &a);
	if (err)
		return err;
	q = a->queue;
	/* Grids count work-items and may not exceed grid_max in all. */
	max_blocks = a->grid_max / GPUBUF_HSA_THREADS;
	if (!max_blocks)
		max_blocks = 1;
	if (blocks_x > max_blocks)
		blocks_x = max_blocks;
	if (blocks_y > max_blocks / blocks_x)
		blocks_y = max_blocks / blocks_x;
	if (!signal) {
		s = hsa->hsa_signal_create(1, 0, NULL, &done);
		if (s != HSA_STATUS_SUCCESS)
			return gpubuf_hsa_fail(hsa, s, "hsa_signal_create");
	}
	/* From here on nothing can fail: a reserved packet must be filled. */
	id = hsa->hsa_queue_add_write_index_scacq_screl(q, 1);
	while (id - hsa->hsa_queue_load_read_index_scacquire(q) >= q->size)
		sched_yield();
	pkt = (hsa_kernel_dispatch_packet_t *)q->base_address +
	      (id & (q->size - 1));
	kernarg = a->kernarg + (id % (2 * (uint64_t)q->size)) *
		  GPUBUF_HSAK_KERNARG_SLOT;
	memcpy(kernarg, args, gpubuf_hsa_kernels[k].kernarg_size);
	pkt->workgroup_size_x = GPUBUF_HSA_THREADS;
	pkt->workgroup_size_y = 1;
	pkt->workgroup_size_z = 1;
	pkt->reserved0 = 0;
	pkt->grid_size_x = (uint32_t)(blocks_x * GPUBUF_HSA_THREADS);
	pkt->grid_size_y = (uint32_t)blocks_y;
	pkt->grid_size_z = 1;
	pkt->private_segment_size = a->k[k].private_segment_size;
	pkt->group_segment_size = a->k[k].group_segment_size;
	pkt->kernel_object = a->k[k].object;
	pkt->kernarg_address = kernarg;
	pkt->reserved2 = 0;
	pkt->completion_signal = done;
	/* The header last and atomically: it hands the packet over. */
	__atomic_store_n((uint32_t *)pkt, GPUBUF_HSAK_HEADER |
			 (uint32_t)(blocks_y > 1 ? 2 : 1) << 16,
			 __ATOMIC_RELEASE);
	hsa->hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)id);
	if (signal)
		return 0;
	/* The wait may return early (spurious wake-up): check the value. */
	while (hsa->hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1,
					      UINT64_MAX,
					      HSA_WAIT_STATE_BLOCKED) >= 1)
		;
	hsa->hsa_signal_destroy(done);
	return 0;
}

GPUBUF_EXPORT int gpubuf_hsa_gemv(double alpha,
				  const struct gpubuf_hsa_matrix *a,
				  const struct gpubuf_hsa_matrix *x,
				  double beta,
				  const struct gpubuf_hsa_matrix *y,
				  uint64_t signal)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_gemv_args g;
	const struct gpubuf_hsa *hsa;
	const struct gpubuf_hsak_agent *ag;
	uint64_t wave, per;
	int err;

	gpubuf_error_clear();
	err = gpubuf_hsa_gemv_args(alpha, a, x, beta, y, &g);
	if (err || !g.m)
		return err;
	/* Rows per block depend on the code object's wavefront size. */
	err = gpubuf_hsa_get(&hsa);
	if (!err)
		err = gpubuf_hsak_get(hsa, a->agent, &ag);
	if (err)
		return err;
	wave = ag->code->wavefront_size;
	per = gpubuf_kargs_gemv_by_cols(&g) ? wave : GPUBUF_HSA_THREADS / wave;
	return gpubuf_hsak_run(a->agent, a->dtype == GPUBUF_DTYPE_F32 ?
			       GPUBUF_HSA_GEMV_F32 : GPUBUF_HSA_GEMV_F64, &g,
			       gpubuf_kargs_blocks(g.m, per,
						   GPUBUF_HSAK_GEMV_GRID_MAX),
			       1, signal);
}

GPUBUF_EXPORT int gpubuf_hsa_gemm(double alpha,
				  const struct gpubuf_hsa_matrix *a,
				  const struct gpubuf_hsa_matrix *b,
				  double beta,
				  const struct gpubuf_hsa_matrix *c,
				  uint64_t signal)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_gemm_args g;
	int err;

	gpubuf_error_clear();
	err = gpubuf_hsa_gemm_args(alpha, a, b, beta, c, &g);
	if (err || !g.m || !g.n)
		return err;
	/* Row tiles on x, column tiles on y; the kernel loops over the rest. */
	return gpubuf_hsak_run(a->agent, a->dtype == GPUBUF_DTYPE_F32 ?
			       GPUBUF_HSA_GEMM_F32 : GPUBUF_HSA_GEMM_F64, &g,
			       gpubuf_kargs_blocks(g.m, GPUBUF_HSA_GEMM_TILE,
						   UINT32_MAX / GPUBUF_HSA_THREADS),
			       gpubuf_kargs_blocks(g.n, GPUBUF_HSA_GEMM_TILE,
						   UINT32_MAX),
			       signal);
}

#else /* no HSA headers or no code objects */

static int gpubuf_hsak_none(void)
{
#ifndef GPUBUF_HAVE_HSA
	gpubuf_error_set("libgpubuf was built without HSA support (no hsa/hsa.h at build time)");
#else
	gpubuf_error_set("libgpubuf was built without hipcc: no HSA kernels");
#endif
	return -EOPNOTSUPP;
}

/* Bad operands get the errno they get in a build with kernels. */
GPUBUF_EXPORT int gpubuf_hsa_gemv(double alpha,
				  const struct gpubuf_hsa_matrix *a,
				  const struct gpubuf_hsa_matrix *x,
				  double beta,
				  const struct gpubuf_hsa_matrix *y,
				  uint64_t signal)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_gemv_args g;
	int err;

	(void)signal;
	gpubuf_error_clear();
	err = gpubuf_hsa_gemv_args(alpha, a, x, beta, y, &g);
	return err ? err : gpubuf_hsak_none();
}

GPUBUF_EXPORT int gpubuf_hsa_gemm(double alpha,
				  const struct gpubuf_hsa_matrix *a,
				  const struct gpubuf_hsa_matrix *b,
				  double beta,
				  const struct gpubuf_hsa_matrix *c,
				  uint64_t signal)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_gemm_args g;
	int err;

	(void)signal;
	gpubuf_error_clear();
	err = gpubuf_hsa_gemm_args(alpha, a, b, beta, c, &g);
	return err ? err : gpubuf_hsak_none();
}

#endif
