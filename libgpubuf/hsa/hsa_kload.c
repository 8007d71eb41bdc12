// SPDX-License-Identifier: MIT
/*
 * Loading the embedded AMD code objects (hsa_code.h) for an HSA GPU
 * agent, once per agent and process: the code object whose processor is
 * the agent's ISA, a frozen executable, the kernels' descriptors and
 * segment sizes, one AQL queue and a kernarg ring in the CPU's kernarg
 * pool (hsa_kernels.h; hsa_kernels.c dispatches on them). Loading holds
 * only that agent's lock and publishes the result atomically; readers
 * take no lock. A failed load undoes everything it made.
 *
 * The queue's error callback marks it dead; after a dispatch has
 * reported that, the next one renews the queue (gpubuf_hsak_renew()),
 * under the agent's lock too.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsa/hsa_kernels.h"
#include "core/internal.h"

#if defined(GPUBUF_HAVE_HSA) && defined(GPUBUF_HAVE_HSA_KERNELS)

#define GPUBUF_STR(x)	#x
#define GPUBUF_XSTR(x)	GPUBUF_STR(x)

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

/* The agent's ISAs against our code objects, into scan; 0 or -errno. */
static int gpubuf_hsak_scan(const struct gpubuf_hsa *hsa, int gpu,
			    struct gpubuf_hsak_isa_scan *scan)
{
	hsa_status_t s;

	s = hsa->hsa_agent_iterate_isas(hsa->gpus[gpu], gpubuf_hsak_isa_cb,
					scan);
	if (scan->err != HSA_STATUS_SUCCESS)
		return gpubuf_hsa_fail(hsa, scan->err, "hsa_isa_get_info_alt");
	if (s != HSA_STATUS_SUCCESS && s != HSA_STATUS_INFO_BREAK)
		return gpubuf_hsa_fail(hsa, s, "hsa_agent_iterate_isas");
	return 0;
}

static int gpubuf_hsak_pick(const struct gpubuf_hsa *hsa, int gpu,
			    struct gpubuf_hsak_agent *a)
{
	struct gpubuf_hsak_isa_scan scan = { .hsa = hsa };
	int err = gpubuf_hsak_scan(hsa, gpu, &scan);

	if (err)
		return err;
	if (!scan.match) {
		gpubuf_error_set("HSA GPU agent %d has ISA %s; libgpubuf carries code objects for %s only",
				 gpu, scan.first[0] ? scan.first : "(none)",
				 GPUBUF_XSTR(GPUBUF_HSA_ARCH_LIST));
		return -ENOEXEC;
	}
	a->code = scan.match;
	return 0;
}

/*
 * Whether the library carries a code object for GPU agent gpu's ISA
 * (isa: the agent's first ISA name), before a dispatch would answer
 * -ENOEXEC: 1, 0 with why, or -errno when the runtime cannot be asked.
 */
GPUBUF_EXPORT int gpubuf_hsa_kernels_cover(const struct gpubuf_hsa *hsa,
					   int gpu, char *isa, size_t isa_len,
					   char *why, size_t len)
{
	struct gpubuf_hsak_isa_scan scan = { .hsa = hsa };
	const char *name;
	int err;

	why[0] = isa[0] = '\0';
	if (gpu < 0 || gpu >= hsa->n_gpus)
		return -ENODEV;
	err = gpubuf_hsak_scan(hsa, gpu, &scan);
	if (err)
		return err;
	/* The processor alone: "gfx90a" of "amdgcn-amd-amdhsa--gfx90a:xnack-". */
	name = scan.match ? scan.match->isa : scan.first[0] ? scan.first :
	       "(none)";
	if (strstr(name, "--"))
		name = strstr(name, "--") + 2;
	snprintf(isa, isa_len, "%.*s", (int)strcspn(name, ":"), name);
	if (scan.match)
		return 1;
	snprintf(why, len, "no code object for %s in the kernels (%s)", isa,
		 GPUBUF_XSTR(GPUBUF_HSA_ARCH_LIST));
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

/*
 * The queue's error callback: ROCr calls it on its own thread after it
 * suspended the queue (an invalid packet, a trap, an illegal instruction,
 * an aperture violation...); the queue's packets never complete after
 * that. Only mark it: a dispatcher may hold any lock of ours while it
 * waits, and the runtime waits for this callback in hsa_queue_destroy.
 */
static void gpubuf_hsak_queue_error(hsa_status_t status, hsa_queue_t *source,
				    void *data)
{
	struct gpubuf_hsak_agent *a = data;
	int live = GPUBUF_HSAK_Q_LIVE;

	(void)source;
	atomic_store_explicit(&a->qstatus, (int)status, memory_order_relaxed);
	/* One report per queue: a renewed queue starts LIVE again. */
	atomic_compare_exchange_strong(&a->qstate, &live, GPUBUF_HSAK_Q_DEAD);
}

/* Queue and kernarg ring; on failure nothing of them is left. */
static int gpubuf_hsak_queue(const struct gpubuf_hsa *hsa, int gpu,
			     struct gpubuf_hsak_agent *a)
{
	hsa_agent_t agent = hsa->gpus[gpu];
	struct gpubuf_hsak_pool_scan scan = { .hsa = hsa };
	uint32_t size = GPUBUF_HSAK_QUEUE_SIZE, min = 0;
	_Atomic uint64_t *token;
	hsa_queue_t *q;
	hsa_status_t s;
	void *p = NULL;
	int err;

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
	/* The callback is what ends a wait on a queue the runtime stopped. */
	s = hsa->hsa_queue_create(agent, size, HSA_QUEUE_TYPE_MULTI,
				  gpubuf_hsak_queue_error, a, UINT32_MAX,
				  UINT32_MAX, &q);
	if (s != HSA_STATUS_SUCCESS)
		return gpubuf_hsa_fail(hsa, s, "hsa_queue_create");
	s = hsa->hsa_amd_memory_pool_allocate(scan.pool, (size_t)q->size * 2 *
					      GPUBUF_HSAK_KERNARG_SLOT, 0, &p);
	if (s != HSA_STATUS_SUCCESS) {
		err = gpubuf_hsa_fail(hsa, s, "hsa_amd_memory_pool_allocate(kernarg)");
		goto err_queue;
	}
	s = hsa->hsa_amd_agents_allow_access(1, &agent, NULL, p);
	if (s != HSA_STATUS_SUCCESS) {
		err = gpubuf_hsa_fail(hsa, s, "hsa_amd_agents_allow_access(kernarg)");
		goto err_kernarg;
	}
	token = calloc((size_t)q->size * 2, sizeof(*token));
	if (!token) {
		err = -ENOMEM;
		goto err_kernarg;
	}
	a->queue = q;
	a->kernarg = p;
	a->token = token;
	return 0;
err_kernarg:
	hsa->hsa_amd_memory_pool_free(p);
err_queue:
	hsa->hsa_queue_destroy(q);
	return err;
}

/*
 * Undo gpubuf_hsak_queue() when no dispatch uses the queue: the queue
 * first (the runtime waits for its error callback), then the signals the
 * tokens still hold, which no packet can complete or read any more.
 */
static void gpubuf_hsak_queue_free(const struct gpubuf_hsa *hsa,
				   struct gpubuf_hsak_agent *a)
{
	uint64_t ring = 2 * (uint64_t)a->queue->size;

	hsa->hsa_queue_destroy(a->queue);
	for (uint64_t i = 0; i < ring; i++) {
		uint64_t t = atomic_load_explicit(&a->token[i],
						  memory_order_acquire);

		if (t != GPUBUF_HSAK_FREE && t != GPUBUF_HSAK_SYNC)
			hsa->hsa_signal_destroy((hsa_signal_t){ t });
	}
	free(a->token);
	hsa->hsa_amd_memory_pool_free(a->kernarg);
	a->queue = NULL;
	a->token = NULL;
	a->kernarg = NULL;
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

/* GPUBUF_HSAK_WAIT_MS in the unit of wait timeouts, system timestamp ticks. */
static uint64_t gpubuf_hsak_wait_ticks(const struct gpubuf_hsa *hsa)
{
	uint64_t hz = 0;

	/* A timeout is only a hint: without the frequency, assume 1 GHz. */
	if (hsa->hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY,
				     &hz) != HSA_STATUS_SUCCESS || !hz)
		hz = 1000000000u;
	return hz / 1000 * GPUBUF_HSAK_WAIT_MS;
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
	a->gpu = gpu;
	err = gpubuf_hsak_pick(hsa, gpu, a);
	if (err)
		return err;
	a->wait_ticks = gpubuf_hsak_wait_ticks(hsa);
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

int gpubuf_hsak_get(const struct gpubuf_hsa *hsa, int gpu,
		    struct gpubuf_hsak_agent **out)
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

int gpubuf_hsak_renew(const struct gpubuf_hsa *hsa,
		      struct gpubuf_hsak_agent *a)
{
	struct gpubuf_hsak_slot *slot =
		gpubuf_container_of(a, struct gpubuf_hsak_slot, a);
	int err = 0;

	pthread_mutex_lock(&slot->lock);
	if (atomic_load(&a->qstate) == GPUBUF_HSAK_Q_REPORTED) {
		/*
		 * Dispatches still counted saw or will see the state within
		 * one wait round (GPUBUF_HSAK_WAIT_MS) and leave; new ones
		 * see it and come here, to this lock.
		 */
		while (atomic_load(&a->users))
			sched_yield();
		if (a->queue)
			gpubuf_hsak_queue_free(hsa, a);
		err = gpubuf_hsak_queue(hsa, a->gpu, a);
		if (!err)
			atomic_store(&a->qstate, GPUBUF_HSAK_Q_LIVE);
	}
	pthread_mutex_unlock(&slot->lock);
	return err;
}

#endif /* GPUBUF_HAVE_HSA && GPUBUF_HAVE_HSA_KERNELS */

#if defined(GPUBUF_HAVE_HSA) && !defined(GPUBUF_HAVE_HSA_KERNELS)
#include <gpubuf/tools.h>

GPUBUF_EXPORT int gpubuf_hsa_kernels_cover(const struct gpubuf_hsa *hsa,
					   int gpu, char *isa, size_t isa_len,
					   char *why, size_t len)
{
	(void)hsa, (void)gpu;
	if (isa_len)
		isa[0] = '\0';
	snprintf(why, len, "libgpubuf was built without HSA code objects (no hipcc)");
	return 0;
}
#endif
